//! The local engine: the core on the JavaScript thread, its I/O on Node sockets, its timers
//! on one Node timer, its tasks on an executor drained after each call in (issue #15: no
//! thread hop per call; README "Design: I/O on the JavaScript thread" has the measurements).
//!
//! | concern | module | on the JavaScript side (`lib/engine.mjs`) |
//! |---|---|---|
//! | tasks | [`executor`] | `kick()` when a task is woken from another thread |
//! | sockets | [`conn`] (+ [`resp`]), [`transport`] | `net.connect` / `tls.connect`, `data`, `close` |
//! | time | [`timer`] | one unref'd `setTimeout` |
//! | results | `host.rs`, `../calls.rs` | the records each entry returns |

mod conn;
mod executor;
mod host;
mod resp;
mod timer;
mod transport;

pub(crate) use executor::{Entry, Executor};
pub use host::Outs;
pub use host::SocketSpec;
pub(crate) use host::{push, Out};
pub(crate) use transport::LocalTransport;

use crate::calls::{Driver, JsValue, Outcome};
use executor::Kick;
use napi::bindgen_prelude::{FnArgs, Function};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Env, Status};
use napi_derive::napi;
use redlatch::{BoxFut, Runtime};
use std::sync::Arc;
use std::time::{Duration, Instant};
use timer::{Sleep, Timers};

/// The core's [`Runtime`] on the JavaScript thread.
pub(crate) struct LocalRuntime {
    executor: Arc<Executor>,
    timers: Arc<Timers>,
    origin: Instant,
}

impl LocalRuntime {
    pub(crate) fn new(executor: Arc<Executor>) -> LocalRuntime {
        LocalRuntime {
            executor,
            timers: Arc::default(),
            origin: Instant::now(),
        }
    }
}

impl Runtime for LocalRuntime {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, duration: Duration) -> BoxFut<'static, ()> {
        Box::pin(Sleep::new(self.timers.clone(), duration))
    }

    fn spawn(&self, task: BoxFut<'static, ()>) {
        self.executor.spawn(task);
    }
}

fn driver() -> napi::Result<Arc<Driver>> {
    Driver::current(true)
}

/// Runs `f` as an entry of this thread's local engine and returns what JavaScript must
/// deliver (host.rs).
fn entry<'env>(env: &'env Env, f: impl FnOnce(&LocalRuntime)) -> napi::Result<Outs<'env>> {
    let driver = driver()?;
    let Driver::Local(executor, runtime) = &*driver else {
        return Ok(None);
    };
    let entry = Entry::enter(executor);
    f(runtime);
    entry.finish(env)
}

/// Installs this thread's engines (once per thread, by `lib/engine.mjs`): `settle(id,
/// error, value)` settles call `id` for the tokio engine (the local one returns its results:
/// host.rs); `kick()` asks for `localDrain()` soon, when a local task is woken from another
/// thread.
#[napi(ts_args_type = "settle: (id: number, error: string | null, value: unknown) => void, kick: () => void")]
pub fn install_local(
    settle: Function<FnArgs<(u32, Option<String>, JsValue)>, ()>,
    kick: Function<(), ()>,
) -> napi::Result<()> {
    let kick: Kick = kick
        .build_threadsafe_function()
        .weak::<true>()
        .callee_handled::<false>()
        .build()?;
    let executor = Executor::new(kick);
    let tokio_settle: ThreadsafeFunction<
        (u32, Outcome),
        (),
        FnArgs<(u32, Option<String>, JsValue)>,
        Status,
        false,
        true,
    > = settle
        .build_threadsafe_function::<(u32, Outcome)>()
        .weak::<true>()
        .callee_handled::<false>()
        .build_callback(|ctx| {
            let (id, outcome) = ctx.value;
            let (error, value) = crate::calls::split(outcome);
            Ok(FnArgs::from((id, error, value)))
        })?;
    Driver::install(executor, tokio_settle)
}

/// `kick()` asked for it: polls the tasks woken from elsewhere.
#[napi(ts_return_type = "unknown[] | null")]
pub fn local_drain(env: &Env) -> napi::Result<Outs<'_>> {
    entry(env, |_| {})
}

/// The timer `4, ms` asked for fired.
#[napi(ts_return_type = "unknown[] | null")]
pub fn local_timer(env: &Env) -> napi::Result<Outs<'_>> {
    entry(env, |runtime| runtime.timers.fire())
}

/// Socket `socket` connected (after its TLS handshake for TLS).
#[napi(ts_return_type = "unknown[] | null")]
pub fn local_socket_open(env: &Env, socket: u32) -> napi::Result<Outs<'_>> {
    entry(env, |_| conn::opened(socket))
}

/// Socket `socket` received `bytes`.
#[napi(ts_return_type = "unknown[] | null")]
pub fn local_socket_data<'env>(env: &'env Env, socket: u32, bytes: &[u8]) -> napi::Result<Outs<'env>> {
    entry(env, |_| conn::received(socket, bytes))
}

/// Socket `socket` closed, with its error if it failed (the message has no credentials:
/// Node's socket errors name the address only).
#[napi(ts_return_type = "unknown[] | null")]
pub fn local_socket_end(env: &Env, socket: u32, error: Option<String>) -> napi::Result<Outs<'_>> {
    entry(env, |_| conn::ended(socket, error))
}
