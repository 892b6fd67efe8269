//! The native half of the `redlatch` npm package: a thin napi-rs layer over the Rust core.
//!
//! The JavaScript facade (`lib/facade/`, shared with the `redlatch/wasm` entry) is the public
//! API; this addon is its engine (`lib/facade/engine.mjs` describes the interface): it only
//! converts types, maps errors and bridges futures to Promises. Everything JavaScript does
//! better stays in JavaScript: `Error` subclasses, `AbortSignal` wiring, rlock owners
//! (`AsyncLocalStorage`), `using`/`withLock` and `Symbol.asyncDispose`. Lock logic stays in
//! the core.
//!
//! Threads and the event loop: every Redis operation runs on napi's tokio runtime, never on
//! the JavaScript thread. A pending Promise (acquire, release, ...) keeps Node running, as a
//! pending socket read would; nothing else does: Redis connections live on tokio, not libuv,
//! and the lost-lock callback of a hold is a *weak* threadsafe function, so a held lock, an
//! idle client or the watchdog never keeps the process alive.
//!
//! Durations cross the boundary as JavaScript numbers of milliseconds and are checked here
//! (integer, finite, in range: shared/API.md "Durations") before anything reaches Redis.

mod calls;
mod client;
mod connect;
mod deployment;
mod error;
mod family;
mod held;
mod local;
mod lock;
mod multi;
mod options;

pub use client::NativeClient;
pub use deployment::{DeploymentWarning, TlsOptions};
pub use family::{NativePermitSemaphore, NativeSemaphore};
pub use held::hold_refusal;
pub use local::{
    install_local, local_drain, local_socket_data, local_socket_end, local_socket_open, local_timer,
};
pub use multi::MultiMember;
pub use options::{new_owner, ClientOptions};

/// The addon's Rust allocations (the core's requests, futures and replies: tens per call)
/// go to mimalloc, built for a library loaded with `dlopen` (`local_dynamic_tls`); glibc's
/// malloc and free took about a fifth of an acquire's time in the addon (README "Design").
/// Node's and V8's own allocations are not affected.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A bad `REDLATCH_WORKER_THREADS` found when the addon loaded: every client's constructor
/// throws it (`ERR_INVALID_ARGUMENT`), as Python's first call raises it (a load cannot throw).
static WORKER_THREADS_ERROR: std::sync::OnceLock<redlatch::Error> = std::sync::OnceLock::new();

/// `ERR_INVALID_ARGUMENT` when the addon loaded with a bad `REDLATCH_WORKER_THREADS`.
pub(crate) fn check_worker_threads() -> napi::Result<()> {
    match WORKER_THREADS_ERROR.get() {
        Some(e) => Err(error::to_napi(e.clone())),
        None => Ok(()),
    }
}

/// Gives napi-rs a tokio runtime with one worker thread (`REDLATCH_WORKER_THREADS`, 1..=16,
/// changes it: `redlatch::worker_threads_from_env`). Why one: every call hops from the
/// JavaScript thread to a worker and back; with a single worker the call's task and its
/// connection's I/O task never hop between workers too, which made a sequential acquire +
/// release about 15 % faster than two workers on our bench (README "Process exit, threads and
/// garbage collection"). If building it fails, napi-rs builds its default runtime on first use
/// instead.
#[napi_derive::module_init]
fn init() {
    let workers = redlatch::worker_threads_from_env().unwrap_or_else(|e| {
        let _ = WORKER_THREADS_ERROR.set(e);
        1
    });
    if let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("redlatch")
        .enable_all()
        .build()
    {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
