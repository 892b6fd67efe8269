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
use crate::client::Shared;
use executor::Kick;
use napi::bindgen_prelude::{FnArgs, Function};
use napi::Env;
use napi_derive::napi;
use redlatch::{BoxFut, Runtime};
use std::cell::RefCell;
use std::sync::{Arc, Weak};
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

thread_local! {
    /// The clients connected on this thread's local engine, for [`abandon_local_clients`].
    static LOCAL_CLIENTS: RefCell<Vec<Weak<Shared>>> = const { RefCell::new(Vec::new()) };
}

/// Remembers `shared`, a client connected on this thread's local engine (on this thread).
pub(crate) fn track(shared: &Arc<Shared>) {
    LOCAL_CLIENTS.with(|clients| {
        let mut clients = clients.borrow_mut();
        clients.retain(|c| c.strong_count() > 0);
        clients.push(Arc::downgrade(shared));
    });
}

/// This thread's JavaScript environment is being torn down (a worker thread ended, or the
/// process exits): its local clients can never run again, and their renewers on the tokio
/// thread would renew their holds for as long as the process lives (a user trial of stop 37
/// found a worker's lock held until the process exited). Each is abandoned: its holds expire
/// with their lease, as when a process ends (`redlatch::Client::abandon`).
fn abandon_local_clients() {
    let clients = LOCAL_CLIENTS.with(|clients| std::mem::take(&mut *clients.borrow_mut()));
    for client in clients.iter().filter_map(Weak::upgrade) {
        if let Ok(client) = client.client() {
            client.abandon();
        }
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
/// task is woken from another thread. When the thread's environment is torn down, its local
/// clients are abandoned ([`abandon_local_clients`]).
#[napi(
    ts_args_type = "settle: (id: number, kind: number, a: number, b: number, c: number, text: string | null) => void, kick: () => void"
)]
pub fn install_local(env: Env, settle: Function<SettleArgs, ()>, kick: Function<(), ()>) -> napi::Result<()> {
    env.add_env_cleanup_hook((), |()| abandon_local_clients())?;
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
