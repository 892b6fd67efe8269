//! How the result of an addon call reaches JavaScript, for both drivers of the core.
//!
//! A call that talks to Redis takes a call id from the facade's engine (`lib/engine.mjs`),
//! which keeps the Promise it returned under that id; when the core's future ends, its
//! [`Outcome`] settles that Promise. Results are plain numbers (a hold is its id in the
//! client's table, with its fencing token and lease) or an error's JSON text, so no
//! JavaScript object is made per call (napi-rs `async fn` makes a deferred and a threadsafe
//! function per call; a class instance per hold cost as much again: README "Design").
//!
//! - [`Driver::Local`]: the core runs on the JavaScript thread (local/), its I/O on Node
//!   sockets; outcomes are among the records the entry that finished them writes
//!   (local/host.rs), with no call back into JavaScript.
//! - [`Driver::Tokio`]: the core runs on napi-rs's tokio runtime with redis-rs connections;
//!   results come back through one weak threadsafe function per thread, `settle(id, kind, a,
//!   b, c, text)` (it never keeps Node alive: the facade's engine does, while a call is
//!   pending).

use crate::error::to_json;
use crate::local::{self, Executor, LocalRuntime, Scratch};
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use redlatch::{Runtime, TokioRuntime};
use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

/// What a call resolves to.
pub(crate) enum Value {
    /// `undefined` (release, extend, close, connect).
    Unit,
    Bool(bool),
    Number(f64),
    MaybeNumber(Option<f64>),
    /// A new hold: its id in the client's table, fencing token and lease in ms.
    Hold {
        id: f64,
        token: Option<u64>,
        lease_ms: f64,
    },
}

/// A call's result: a value, or a core error (sent as the JSON `lib/facade/errors.mjs` reads).
pub(crate) type Outcome = Result<Value, redlatch::Error>;

/// Kind numbers of a settle record (`lib/engine.mjs` reads them).
pub(crate) mod kind {
    pub(crate) const UNDEFINED: f64 = 0.0;
    pub(crate) const FALSE: f64 = 1.0;
    pub(crate) const TRUE: f64 = 2.0;
    pub(crate) const NUMBER: f64 = 3.0;
    pub(crate) const NULL: f64 = 4.0;
    pub(crate) const HOLD: f64 = 5.0;
    pub(crate) const ERROR: f64 = 6.0;
}

/// `outcome` as a settle record's `[kind, a, b, c]` and, for an error, its JSON text.
pub(crate) fn encode(outcome: Outcome) -> ([f64; 4], Option<String>) {
    let nums = match outcome {
        Ok(Value::Unit) => [kind::UNDEFINED, 0.0, 0.0, 0.0],
        Ok(Value::Bool(false)) => [kind::FALSE, 0.0, 0.0, 0.0],
        Ok(Value::Bool(true)) => [kind::TRUE, 0.0, 0.0, 0.0],
        Ok(Value::Number(n)) | Ok(Value::MaybeNumber(Some(n))) => [kind::NUMBER, n, 0.0, 0.0],
        Ok(Value::MaybeNumber(None)) => [kind::NULL, 0.0, 0.0, 0.0],
        Ok(Value::Hold { id, token, lease_ms }) => {
            [kind::HOLD, id, token.map_or(f64::NAN, |t| t as f64), lease_ms]
        }
        Err(e) => return ([kind::ERROR, 0.0, 0.0, 0.0], Some(to_json(&e))),
    };
    (nums, None)
}

/// The arguments of `settle(id, kind, a, b, c, text)`.
pub(crate) type SettleArgs = FnArgs<(u32, f64, f64, f64, f64, Option<String>)>;

/// `settle(id, kind, a, b, c, text)` of the tokio driver.
pub(crate) type TokioSettle = ThreadsafeFunction<(u32, Outcome), (), SettleArgs, Status, false, true>;

thread_local! {
    /// This thread's drivers, made by `installLocal`.
    static DRIVERS: RefCell<Option<(Arc<Driver>, Arc<Driver>)>> = const { RefCell::new(None) };
}

/// Runs the core's futures and delivers their outcomes (module docs).
pub(crate) enum Driver {
    Local(Arc<Executor>, Arc<LocalRuntime>),
    Tokio(Arc<TokioSettle>, Arc<TokioRuntime>),
}

impl Driver {
    /// Makes this thread's drivers (`installLocal`); `settle` is the engine's function.
    pub(crate) fn install(executor: Arc<Executor>, tokio_settle: TokioSettle) -> napi::Result<()> {
        let runtime = napi::bindgen_prelude::within_runtime_if_available(|| {
            tokio::runtime::Handle::try_current().map(TokioRuntime::with_handle)
        })
        .map_err(|e| napi::Error::from_reason(format!("the addon's tokio runtime is unavailable: {e}")))?;
        let local = Arc::new(Driver::Local(
            executor.clone(),
            Arc::new(LocalRuntime::new(executor)),
        ));
        let tokio = Arc::new(Driver::Tokio(Arc::new(tokio_settle), Arc::new(runtime)));
        DRIVERS.with(|d| *d.borrow_mut() = Some((local, tokio)));
        Ok(())
    }

    /// This thread's driver for `local` (true) or tokio I/O.
    pub(crate) fn current(local: bool) -> napi::Result<Arc<Driver>> {
        DRIVERS.with(|d| {
            d.borrow()
                .as_ref()
                .map(|(l, t)| if local { l.clone() } else { t.clone() })
                .ok_or_else(|| {
                    napi::Error::from_reason("redlatch: installLocal() was not called on this thread")
                })
        })
    }

    /// The core's runtime for clients of this driver.
    pub(crate) fn runtime(&self) -> Arc<dyn Runtime> {
        match self {
            Driver::Local(_, rt) => rt.clone(),
            Driver::Tokio(_, rt) => rt.clone(),
        }
    }

    /// Runs `future` and settles call `id` with its outcome. The local driver polls it at
    /// once and writes what JavaScript must do now into `out` (its first command, or its
    /// result when it needs no Redis; local/host.rs), returning the records' text; the tokio
    /// driver settles later through `settle`.
    pub(crate) fn call<F>(&self, out: Scratch<'_>, id: u32, future: F) -> Option<String>
    where
        F: Future<Output = Outcome> + Send + 'static,
    {
        match self {
            Driver::Local(executor, _) => {
                let entry = local::Entry::enter(executor);
                executor.spawn(Box::pin(async move {
                    let outcome = future.await;
                    local::push(local::Out::Settle(id, outcome));
                }));
                entry.finish(out)
            }
            Driver::Tokio(settle, runtime) => {
                let settle = settle.clone();
                runtime.spawn(Box::pin(async move {
                    let outcome = future.await;
                    settle.call((id, outcome), ThreadsafeFunctionCallMode::NonBlocking);
                }));
                None
            }
        }
    }

    /// Runs `future` in the background.
    pub(crate) fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.runtime().spawn(Box::pin(future));
    }
}
