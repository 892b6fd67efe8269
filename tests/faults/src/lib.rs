//! The fault-injection suite for redlatch: the tools to break a lock on purpose and the
//! checkers that tell whether it held.
//!
//! - [`FaultProxy`]: a tokio TCP proxy in front of a `redis-server` that delays, drops,
//!   blackholes or resets traffic per direction, switchable at run time.
//! - [`Holder`]: a lock holder in its own process (`redlatch-fault-holder`), so it can be
//!   frozen (`SIGSTOP`) or crashed (`SIGKILL`) with the lock held.
//! - [`FencedResource`]: the storage the lock protects; it accepts an operation only with a
//!   fencing token no lower than any it has seen and records what it rejects and every lost
//!   update.
//! - [`sections`]: critical sections rebuilt from holders' reports, with the overlap checker
//!   (the fleet's) and the fencing-token order checker.
//! - [`soak`]: holders, faults and checks run together for a while, with figures (`make soak`).
//!
//! Redis servers come from the fleet harness ([`redlatch_fleet::RedisServer`]); process and
//! server faults (`kill -9`, `SIGSTOP`/`SIGCONT`, `CLIENT KILL`, `CLIENT PAUSE WRITE`,
//! `SCRIPT FLUSH`, `DEBUG SLEEP`, `CONFIG SET timeout`) are applied to them by pid or through
//! `redis-cli`/a raw connection. The scenarios live in `tests/`; docs/reliability.md states
//! what they establish.

pub mod events;
pub mod fenced;
pub mod holder;
pub mod proxy;
pub mod sections;
pub mod soak;

pub use events::Event;
pub use fenced::{Answer, FencedResource, Fencing, Op, Rejection, ResourceClient, ResourceReport};
pub use holder::{holder_exe, Holder, HolderSpec};
pub use proxy::{Direction, Fault, FaultProxy, ProxyStats};
pub use sections::{overlaps, sections_from, token_order_violations, Section};
