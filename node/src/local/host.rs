//! The JavaScript half of the local engine, seen from Rust: the functions `lib/engine.mjs`
//! installs once per thread (`installLocal`), and what tasks hand to them. Tasks never call
//! JavaScript while they are polled: they queue an [`Out`], and the drain at the end of the
//! entry (executor.rs) delivers the queue, so a callback can never re-enter a task mid-poll.

use super::socket::SocketShared;
use crate::calls::{self, Outcome};
use napi::bindgen_prelude::{Buffer, FnArgs, FunctionRef};
use napi::Env;
use napi_derive::napi;
use std::cell::RefCell;
use std::sync::Arc;

/// How JavaScript should open socket `id` (`net.connect` / `tls.connect` options).
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct SocketSpec {
    /// TCP host (absent for a Unix socket).
    pub host: Option<String>,
    /// TCP port.
    pub port: Option<u32>,
    /// Unix socket path.
    pub path: Option<String>,
    /// TLS (`rediss://`).
    pub tls: bool,
    /// TLS without certificate verification (`rediss://...#insecure`).
    pub insecure: bool,
}

/// What a task asks JavaScript to do.
pub(crate) enum Out {
    /// Settle the Promise of call `id`.
    Settle(u32, Outcome),
    /// Open socket `id`.
    Connect(u32, SocketSpec),
    /// Send what this socket has buffered.
    Write(Arc<SocketShared>),
    /// Close socket `id`.
    Destroy(u32),
    /// Run `timerFired()` after this many ms (replacing the timer set before).
    Timer(f64),
}

type Settle = FunctionRef<FnArgs<(u32, Option<String>, calls::JsValue)>, ()>;

/// The functions of one thread's `installLocal(...)` and what waits for them.
pub(crate) struct Host {
    pub(crate) settle: Settle,
    pub(crate) connect: FunctionRef<FnArgs<(u32, SocketSpec)>, ()>,
    pub(crate) write: FunctionRef<FnArgs<(u32, Buffer)>, ()>,
    pub(crate) destroy: FunctionRef<u32, ()>,
    pub(crate) set_timer: FunctionRef<f64, ()>,
    queue: RefCell<Vec<Out>>,
}

thread_local! {
    static HOST: RefCell<Option<Arc<Host>>> = const { RefCell::new(None) };
}

impl Host {
    pub(crate) fn install(
        settle: Settle,
        connect: FunctionRef<FnArgs<(u32, SocketSpec)>, ()>,
        write: FunctionRef<FnArgs<(u32, Buffer)>, ()>,
        destroy: FunctionRef<u32, ()>,
        set_timer: FunctionRef<f64, ()>,
    ) {
        let host = Arc::new(Host {
            settle,
            connect,
            write,
            destroy,
            set_timer,
            queue: RefCell::new(Vec::new()),
        });
        HOST.with(|h| *h.borrow_mut() = Some(host));
    }
}

/// This thread's host, if `installLocal` ran here.
pub(crate) fn current() -> Option<Arc<Host>> {
    HOST.with(|h| h.borrow().clone())
}

/// Queues `out` for this thread's next delivery. Tasks run only on their executor's thread,
/// which is the host's; elsewhere (a bug) the request is dropped.
pub(crate) fn push(out: Out) {
    HOST.with(|h| {
        if let Some(host) = h.borrow().as_ref() {
            host.queue.borrow_mut().push(out);
        }
    });
}

/// Delivers the queue; `false` when it was empty. Errors thrown by the JavaScript functions
/// (none are expected: they are the package's own) are dropped rather than unwound.
pub(crate) fn flush(env: &Env) -> bool {
    let Some(host) = current() else { return false };
    let outs = std::mem::take(&mut *host.queue.borrow_mut());
    if outs.is_empty() {
        return false;
    }
    for out in outs {
        let _ = deliver(&host, env, out);
    }
    true
}

fn deliver(host: &Host, env: &Env, out: Out) -> napi::Result<()> {
    match out {
        Out::Settle(id, outcome) => {
            let (error, value) = calls::split(outcome);
            host.settle.borrow_back(env)?.call(FnArgs::from((id, error, value)))
        }
        Out::Connect(id, spec) => host.connect.borrow_back(env)?.call(FnArgs::from((id, spec))),
        Out::Write(socket) => match socket.take_outgoing() {
            Some(bytes) => host.write.borrow_back(env)?.call(FnArgs::from((socket.id, Buffer::from(bytes)))),
            None => Ok(()),
        },
        Out::Destroy(id) => host.destroy.borrow_back(env)?.call(id),
        Out::Timer(ms) => host.set_timer.borrow_back(env)?.call(ms),
    }
}
