//! The pure half of redlatch: everything a lock *decides*, with no sockets, no async runtime
//! and no OS clock, so it compiles for `wasm32-unknown-unknown` and is tested without Redis.
//!
//! - [`keys`]: key and channel names (`T(N)`, `P(prefix)` of shared/WIRE.md) and name checks.
//! - [`token`]: CSPRNG tokens and owner ids.
//! - [`scripts`]: the Lua scripts and their SHA-1 digests.
//! - [`reply`]: the transport-neutral [`reply::Reply`] and its decoding into outcomes.
//! - [`request`]: which script, keys and arguments each lock operation sends.
//! - [`owner`]: owner numbers and the reentrant owner's decisions (joining a validity, the
//!   orphaned-count rule), from its calls in flight.
//! - [`quorum`]: majority and validity (Redlock) math.
//! - [`timing`]: duration validation, retry back-off with full jitter, default timeouts.
//! - [`family`]: fair, read/write, semaphore, permit-expirable semaphore, count-down latch and
//!   multi-lock requests and replies (Redisson 4.7 layouts), not yet wired to the driver.

pub mod family;
pub mod independence;
pub mod keys;
pub mod owner;
pub mod quorum;
pub mod reply;
pub mod request;
pub mod scripts;
pub mod timing;
pub mod token;
