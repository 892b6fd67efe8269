//! The native half of the `redlatch` npm package: a thin napi-rs layer over the Rust core.
//!
//! The JavaScript facade (`lib/index.js`) is the public API; this addon only converts types,
//! maps errors and bridges futures to Promises. Everything JavaScript does better stays in
//! JavaScript: `Error` subclasses, `AbortSignal` wiring, `AsyncLocalStorage` reentrancy,
//! `using`/`withLock` and `Symbol.asyncDispose`. Lock logic stays in the core.
//!
//! Threads and the event loop: every Redis operation runs on napi's tokio runtime, never on
//! the JavaScript thread. A pending Promise (acquire, release, ...) keeps Node running, as a
//! pending socket read would; nothing else does: Redis connections live on tokio, not libuv,
//! and the lost-lock callback of a hold is a *weak* threadsafe function, so a held lock, an
//! idle client or the watchdog never keeps the process alive.
//!
//! Durations cross the boundary as JavaScript numbers of milliseconds and are checked here
//! (integer, finite, in range: shared/API.md "Durations") before anything reaches Redis.

mod client;
mod error;
mod held;
mod lock;
mod options;

pub use client::{connect, NativeClient};
pub use held::NativeHeld;
pub use lock::NativeLock;
pub use options::{ClientOptions, LockOptions};
