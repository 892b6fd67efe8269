//! The local engine: the core on the JavaScript thread, its I/O on Node sockets, its timers
//! on one Node timer, its tasks on an executor drained after each call in (issue #15: no
//! thread hop per call; README "Design: I/O on the JavaScript thread" has the measurements).
//!
//! | concern | module | on the JavaScript side (`lib/engine.mjs`) |
//! |---|---|---|
//! | tasks | [`executor`] | `kick()` when a task is woken from another thread |
//! | sockets | [`conn`] (+ `redlatch::resp`), [`node`], [`transport`], [`pubsub`] | `net.connect` / `tls.connect`, `data`, `close` |
//! | time | [`timer`] | one unref'd `setTimeout` |
//! | results | `host.rs`, `../calls.rs` | the records each entry hands back |

mod conn;
mod executor;
mod host;
mod node;
mod pubsub;
mod timer;
mod transport;

pub(crate) use executor::{Entry, Executor};
pub(crate) use host::{push, Out, Scratch};
pub(crate) use transport::LocalTransport;

use crate::calls::{Driver, Outcome, SettleArgs, TokioSettle};
use executor::Kick;
use napi::bindgen_prelude::{FnArgs, Function};
use napi_derive::napi;
use redlatch::{BoxFut, Runtime};
use std::sync::Arc;
use std::time::Duration;
use timer::{Sleep, Timers};

/// The core's [`Runtime`] on the JavaScript thread.
pub(crate) struct LocalRuntime {
    executor: Arc<Executor>,
    timers: Arc<Timers>,
}

impl LocalRuntime {
    pub(crate) fn new(executor: Arc<Executor>) -> LocalRuntime {
        LocalRuntime {
            executor,
            timers: Arc::default(),
        }
    }
}

impl Runtime for LocalRuntime {
    /// The process clock, which the tokio runtime reads too: the renewer of a local client
    /// moves its holds' deadlines from the tokio thread (`Client::renew_through`).
    fn now(&self) -> Duration {
        redlatch::process_clock()
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

/// Runs `f` as an entry of this thread's local engine; what JavaScript must deliver goes
/// into `out` and the returned text (host.rs).
fn entry(out: Scratch<'_>, f: impl FnOnce(&LocalRuntime)) -> napi::Result<Option<String>> {
    let driver = driver()?;
    let Driver::Local(executor, runtime) = &*driver else {
        return Ok(None);
    };
    let entry = Entry::enter(executor);
    f(runtime);
    Ok(entry.finish(out))
}

/// Installs this thread's engines (once per thread, by `lib/engine.mjs`): `settle(id, kind,
/// a, b, c, text)` settles call `id` for the tokio engine (the local one hands its results
/// back from each entry: host.rs); `kick()` asks for `localDrain(out)` soon, when a local
/// task is woken from another thread.
#[napi(
    ts_args_type = "settle: (id: number, kind: number, a: number, b: number, c: number, text: string | null) => void, kick: () => void"
)]
pub fn install_local(settle: Function<SettleArgs, ()>, kick: Function<(), ()>) -> napi::Result<()> {
    let kick: Kick = kick
        .build_threadsafe_function()
        .weak::<true>()
        .callee_handled::<false>()
        .build()?;
    let executor = Executor::new(kick);
    let tokio_settle: TokioSettle = settle
        .build_threadsafe_function::<(u32, Outcome)>()
        .weak::<true>()
        .callee_handled::<false>()
        .build_callback(|ctx| {
            let (id, outcome) = ctx.value;
            let ([kind, a, b, c], text) = crate::calls::encode(outcome);
            Ok(FnArgs::from((id, kind, a, b, c, text)))
        })?;
    Driver::install(executor, tokio_settle)
}

/// `kick()` asked for it: polls the tasks woken from elsewhere.
#[napi]
pub fn local_drain(out: Scratch<'_>) -> napi::Result<Option<String>> {
    entry(out, |_| {})
}

/// The timer record `4, ms` asked for fired.
#[napi]
pub fn local_timer(out: Scratch<'_>) -> napi::Result<Option<String>> {
    entry(out, |runtime| runtime.timers.fire())
}

/// Socket `socket` connected (after its TLS handshake for TLS).
#[napi]
pub fn local_socket_open(socket: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
    entry(out, |_| conn::opened(socket))
}

/// Socket `socket` received the first `len` bytes of `bytes` (its read buffer, reused for
/// the next read once this returns).
#[napi]
pub fn local_socket_data(
    socket: u32,
    bytes: &[u8],
    len: u32,
    out: Scratch<'_>,
) -> napi::Result<Option<String>> {
    let received = bytes.get(..len as usize).unwrap_or(bytes);
    entry(out, |_| conn::received(socket, received))
}

/// Socket `socket` closed, with its error if it failed (the message has no credentials:
/// Node's socket errors name the address only).
#[napi]
pub fn local_socket_end(
    socket: u32,
    error: Option<String>,
    out: Scratch<'_>,
) -> napi::Result<Option<String>> {
    entry(out, |_| conn::ended(socket, error))
}
