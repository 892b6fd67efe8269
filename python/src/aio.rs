//! Rust futures as asyncio awaitables, on our fork-aware runtime.
//!
//! pyo3-async-runtimes' `tokio` module keeps one global runtime for the life of the process,
//! which a forked child cannot use. Its `generic` module takes any runtime through a trait of
//! static functions, so [`PyRuntime`] forwards to [`crate::runtime::runtime`], which rebuilds
//! the runtime after a fork.
//!
//! Cancellation: when the asyncio future is cancelled, pyo3-async-runtimes' done-callback
//! fires a oneshot that makes the wrapping task return at once, dropping the Rust future. For
//! an acquire, the core undoes a dropped attempt in the background (rollback, unsubscribe);
//! for a finished acquire whose result nobody awaits any more, the `Hold` is dropped, and a
//! dropped hold is released in the background. Operations that must finish even when the
//! awaiting task is cancelled (release) are spawned as their own tasks ([`detached`]).

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use pyo3_async_runtimes::generic::{ContextExt, JoinError, Runtime};
use pyo3_async_runtimes::TaskLocals;
use redlatch::{Error, ErrorKind};
use std::future::Future;
use std::pin::Pin;

/// Marker type implementing pyo3-async-runtimes' generic runtime traits.
pub(crate) struct PyRuntime;

/// A spawned task's failure as pyo3-async-runtimes wants it.
pub(crate) struct TaskError(tokio::task::JoinError);

impl JoinError for TaskError {
    fn is_panic(&self) -> bool {
        self.0.is_panic()
    }
    fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        self.0.into_panic()
    }
}

/// A `JoinHandle` whose error type is [`TaskError`].
pub(crate) struct Handle(tokio::task::JoinHandle<()>);

impl Future for Handle {
    type Output = Result<(), TaskError>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map_err(TaskError)
    }
}

fn rt() -> tokio::runtime::Handle {
    // `awaitable` checks the runtime can be built before anything is spawned, so this only
    // fails if the OS stops giving out threads in between.
    crate::runtime::runtime().expect("redlatch: the tokio runtime could not be started")
}

impl Runtime for PyRuntime {
    type JoinError = TaskError;
    type JoinHandle = Handle;

    fn spawn<F>(fut: F) -> Handle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Handle(rt().spawn(fut))
    }

    fn spawn_blocking<F>(f: F) -> Handle
    where
        F: FnOnce() + Send + 'static,
    {
        Handle(rt().spawn_blocking(f))
    }
}

tokio::task_local! {
    static LOCALS: std::cell::OnceCell<TaskLocals>;
}

impl ContextExt for PyRuntime {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = std::cell::OnceCell::new();
        let _ = cell.set(locals);
        Box::pin(LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        LOCALS.try_with(|c| c.get().cloned()).unwrap_or_default()
    }
}

/// The outcome of a Rust future, converted to Python only when the result is handed to the
/// event loop (with the GIL held, on pyo3-async-runtimes' completion thread), so tokio
/// workers never wait for the GIL to build an exception.
pub(crate) struct Deferred<T>(Result<T, Error>);

impl<'py, T> IntoPyObject<'py> for Deferred<T>
where
    T: IntoPyObject<'py>,
{
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            Ok(v) => v.into_bound_py_any(py),
            Err(e) => Err(crate::errors::to_py(e)),
        }
    }
}

/// Wraps `fut` in an asyncio future of the running loop. Must be called from a coroutine
/// (inside a running event loop): `RuntimeError` otherwise.
pub(crate) fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    crate::runtime::runtime()?;
    pyo3_async_runtimes::generic::future_into_py::<PyRuntime, _, Deferred<T>>(py, async move {
        Ok(Deferred(fut.await))
    })
}

/// Runs `fut` as its own task, so it completes even if the awaiting Python task is cancelled
/// (the awaitable then stops waiting, the work does not stop).
pub(crate) async fn detached<F, T>(fut: F) -> Result<T, Error>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
{
    match rt().spawn(fut).await {
        Ok(out) => out,
        Err(e) => Err(Error::new(
            ErrorKind::Panic,
            format!("background task failed: {e}"),
        )),
    }
}
