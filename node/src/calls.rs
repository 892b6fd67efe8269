//! How the result of an addon call reaches JavaScript, for both drivers of the core.
//!
//! A call that talks to Redis takes a call id from the facade's engine (`lib/engine.mjs`),
//! which keeps the Promise it returned under that id; when the core's future ends, its
//! [`Outcome`] settles that Promise. Why not napi-rs `async fn`: each such call makes its
//! own deferred and threadsafe function (libuv handles and a hop to the next loop turn).
//!
//! - [`Driver::Local`]: the core runs on the JavaScript thread (local/), its I/O on Node
//!   sockets; outcomes are among the records the entry that finished them returns
//!   (local/host.rs), with no call back into JavaScript.
//! - [`Driver::Tokio`]: the core runs on napi-rs's tokio runtime with redis-rs connections;
//!   results come back through one weak threadsafe function per thread, `settle(id, error, value)` (it never keeps Node alive: the
//!   facade's engine does, while a call is pending).

use crate::client::NativeClient;
use crate::error::to_json;
use crate::held::NativeHeld;
use crate::local::{self, Executor, LocalRuntime, Outs};
use napi::bindgen_prelude::{Either4, FnArgs};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use redlatch::{Runtime, TokioRuntime};
use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

/// What a call resolves to.
pub(crate) enum Value {
    /// `undefined` (release, extend, close): sent as `null`.
    Unit,
    Bool(bool),
    Number(f64),
    MaybeNumber(Option<f64>),
    Held(NativeHeld),
    Client(NativeClient),
}

/// A call's result: a value, or a core error (sent as the JSON `lib/facade/errors.mjs` reads).
pub(crate) type Outcome = Result<Value, redlatch::Error>;

/// The value argument of `settle`.
pub(crate) type JsValue = Either4<bool, Option<f64>, NativeHeld, NativeClient>;

/// `settle`'s `(error, value)` arguments for `outcome`.
pub(crate) fn split(outcome: Outcome) -> (Option<String>, JsValue) {
    match outcome {
        Ok(Value::Unit) => (None, Either4::B(None)),
        Ok(Value::Bool(b)) => (None, Either4::A(b)),
        Ok(Value::Number(n)) => (None, Either4::B(Some(n))),
        Ok(Value::MaybeNumber(n)) => (None, Either4::B(n)),
        Ok(Value::Held(h)) => (None, Either4::C(h)),
        Ok(Value::Client(c)) => (None, Either4::D(c)),
        Err(e) => (Some(to_json(&e)), Either4::B(None)),
    }
}

pub(crate) type TokioSettle =
    ThreadsafeFunction<(u32, Outcome), (), FnArgs<(u32, Option<String>, JsValue)>, Status, false, true>;

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

    /// `true` for the driver whose I/O runs on the JavaScript thread.
    pub(crate) fn is_local(&self) -> bool {
        matches!(self, Driver::Local(..))
    }

    /// Runs `future` and settles call `id` with its outcome. Returns what JavaScript must
    /// deliver now (the local driver polls the future at once: its first command, or its
    /// result when it needs no Redis); the tokio driver settles later through `settle`.
    pub(crate) fn call<'env, F>(&self, env: &'env Env, id: u32, future: F) -> napi::Result<Outs<'env>>
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
                entry.finish(env)
            }
            Driver::Tokio(settle, runtime) => {
                let settle = settle.clone();
                runtime.spawn(Box::pin(async move {
                    let outcome = future.await;
                    settle.call((id, outcome), ThreadsafeFunctionCallMode::NonBlocking);
                }));
                Ok(None)
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
