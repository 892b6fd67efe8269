//! Test harness for redlatch: real `redis-server` processes on free 127.0.0.1 ports.
//!
//! Why real servers and not a mock: lock safety depends on Redis' own semantics (expiry, script
//! atomicity, `CLIENT PAUSE`, `DEBUG SLEEP`), and faults are injected on real processes
//! (`SIGSTOP`/`SIGCONT`/`SIGKILL`). Every server started here gets its own port (picked at run
//! time, never fixed, since other servers may already listen on the usual ones), its own
//! temporary directory, no persistence, and is stopped *by pid* by the handle that started it.
//!
//! - [`RedisServer`]: one process; start, pause, resume, kill, stop, restart, `redis-cli`.
//! - [`Fleet`]: one single node plus N independent quorum nodes (for Redlock).
//! - [`check_no_overlap`]: the mutual-exclusion checker over `[acquired, released, token]` logs,
//!   timed with [`monotonic_ns`], the clock every process on the machine shares
//!   ([`first_overlap`]: the offending pair itself).
//! - [`signal_child`]: `SIGSTOP`/`SIGCONT`/`SIGKILL` for other child processes a test starts
//!   (lock holders), with the same by-pid, still-our-child rule as the servers.
//! - The `redlatch-fleet` binary runs another program (pytest, `node --test`, C tests) against a
//!   fleet, passing the URLs in [`ENV_URL`] and [`ENV_QUORUM_URLS`].
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod checker;
mod clock;
mod fleet;
mod launch;
mod paths;
mod resp;
mod server;
mod signal;

pub use checker::{check_no_overlap, find_overlaps, first_overlap, Interval};
pub use clock::monotonic_ns;
pub use fleet::{Fleet, ENV_QUORUM_URLS, ENV_URL};
pub use paths::{redis_cli_path, redis_server_path};
pub use resp::ping_port;
pub use server::{RedisServer, START_TIMEOUT, STOP_TIMEOUT};
pub use signal::{signal_child, Signal};
