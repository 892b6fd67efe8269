//! # redlatch
//!
//! Redis distributed locks with one core for Rust, C/C++, Python, Node and WebAssembly.
//!
//! - [`Client::lock`]: lease lock in the redis-py / node-redlock format (`SET key token NX PX`,
//!   compare-and-delete release), so redlatch and those libraries exclude each other.
//! - [`Client::rlock`]: reentrant lock in Redisson's RLock layout, with a hold count per owner.
//! - [`Client::fair_lock`]: Redisson's fair lock (strict FIFO among waiters, reentrant).
//! - [`Client::rw_lock`]: Redisson's read/write lock (many readers or one writer).
//! - [`Client::quorum`]: Redlock over N independent nodes, for lease and reentrant locks.
//! - Watchdog: locks acquired without a lease are renewed every third of the watchdog timeout
//!   (default 30 s) and report loss through [`Guard::lost`] at once.
//! - Fencing tokens ([`Lock::fenced`]), because a paused process can outlive its lease
//!   (Kleppmann, "How to do distributed locking").
//!
//! Waiters are woken by pub/sub on Redisson's unlock channel, with jittered polling as the
//! fallback. Wire formats: shared/WIRE.md in the repository.
//!
//! ```no_run
//! # async fn demo() -> Result<(), redlatch::Error> {
//! use std::time::Duration;
//! let client = redlatch::Client::connect("redis://127.0.0.1:6379").await?;
//! let guard = client.lock("order:42").lease(Duration::from_secs(10)).wait(Duration::from_secs(5)).acquire().await?;
//! // ... critical section ...
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! ## Layout
//! [`protocol`] is pure (no I/O; compiles to wasm32); `driver` runs it over a
//! [`Transport`] and a [`Runtime`]; `native` (feature `native`, default) provides those with
//! redis-rs and tokio, plus [`blocking`].
//!
//! ## Logging
//! Acquire attempts, waits, renewals, releases and losses are `tracing` events under the
//! `redlatch` target. Tokens and passwords are never logged.

// On wasm32 transports are JS objects (not Send); the same Arc-based structure is used
// single-threaded there, which is what this lint would otherwise flag.
#![cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]

mod client;
mod driver;
mod error;
mod guard;
mod kind;
mod latch;
mod lock;
mod multi;
mod origin;
mod permit;
pub mod protocol;
mod rwlock;
mod semaphore;

#[cfg(feature = "native")]
pub mod blocking;
#[cfg(feature = "native")]
mod native;

pub use client::Client;
#[cfg(not(target_arch = "wasm32"))]
pub use driver::cleanup::wait_for_background_cleanup;
pub use driver::owner::{new_owner, thread_owner};
pub use driver::ping_at_connect;
#[cfg(not(target_arch = "wasm32"))]
pub use driver::process_clock;
pub use driver::{BoxFut, Config, MaybeSend, Runtime, Subscription, Transport};
pub use error::{redis_error_kind, Error, ErrorKind, NodeOutcome, Reason, Result};
pub use guard::Guard;
pub use kind::LockKind;
pub use latch::CountDownLatch;
pub use lock::Lock;
pub use multi::{MultiGuard, MultiLock};
pub use permit::{Permit, PermitSemaphore};
pub use protocol::independence::QuorumServers;
pub use rwlock::RwLock;
pub use semaphore::Semaphore;

#[cfg(feature = "native")]
pub use native::resp;
#[cfg(feature = "native")]
pub use native::{poll_on_loop, EventLoop, LoopSocket, LoopWatcher};
#[cfg(feature = "native")]
pub use native::{worker_threads_from_env, WORKER_THREADS_VAR};
#[cfg(feature = "native")]
pub use native::{
    ClientBuilder, ClusterTransport, DeploymentOptions, RedisTransport, ScriptsRun, SentinelAuth,
    SyncReplicas, TlsOptions, TokioRuntime, Warning, WarningHandler, DEFAULT_SYNC_TIMEOUT,
};
