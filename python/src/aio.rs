//! Rust futures as asyncio futures, polled on the event loop's own thread (`loop_tasks.rs`).
//!
//! Why not pyo3-async-runtimes (used until issue 15): its `future_into_py` spawns the future,
//! then hands the result to tokio's blocking pool, whose thread takes the GIL and calls
//! `loop.call_soon_threadsafe`. Each awaited call thus crossed three threads and took the GIL
//! off the event loop's thread; redlatch.asyncio measured 0.64x redis-py's asyncio `Lock`
//! (python/README.md, "Performance"). Then (stops 14-32) each call ran as a tokio task that
//! left its outcome on a queue the loop drained: two thread crossings per call, 1.01-1.04x.
//! Now a call's future is polled on the loop's thread, its requests go out on a socket that
//! loop watches (`redlatch::EventLoop`, single-node `redis://` / `unix://` clients), and
//! only tokio's own wake-ups (timers, pub/sub, the multiplexed connection) cross threads,
//! through one socket pair per loop. Tokio threads never touch Python.
//!
//! Cancellation: a call whose awaiting task is cancelled runs to completion and its outcome
//! is dropped (the future is cancelled); a dropped `Hold` is released in the background. An
//! acquire must not keep waiting, so the asyncio layer calls [`abandon`] when its await is
//! cancelled: that drops the call's future, and the core undoes the attempt in the
//! background (rollback, unsubscribe).
//!
//! Exit: once the `atexit` hook stopped the runtime (`runtime.rs`), a call still in flight
//! on a loop of a daemon thread ends with the runtime's error (or a panic of tokio's, "being
//! shutdown"), and one that starts then cannot run. Delivered, either would raise into the
//! loop's task as the interpreter finalizes: a traceback, often cut off, at about half the
//! exits of a process whose daemon thread ran an event loop (a user trial). So the futures of
//! such a loop are never settled: its tasks wait, as a daemon thread's sync call parks, until
//! the process is gone. A loop on the thread running the exit hooks still gets its errors.

use crate::loop_tasks::{LoopTask, Tasks};
use futures::FutureExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use pyo3::IntoPyObjectExt;
use redlatch::{Error, ErrorKind};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io::{ErrorKind as IoKind, Read};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

/// A finished call, converted to Python on the event loop's thread.
trait Outcome: Send {
    /// Sets the outcome on `future` (`set_result` or `set_exception`).
    fn settle(self: Box<Self>, future: &Bound<'_, PyAny>) -> PyResult<()>;
}

impl<T> Outcome for Result<T, Error>
where
    T: for<'py> IntoPyObject<'py> + Send,
{
    fn settle(self: Box<Self>, future: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = future.py();
        match *self {
            Ok(value) => future.call_method1(pyo3::intern!(py, "set_result"), (value.into_py_any(py)?,))?,
            Err(err) => {
                let exc = crate::errors::to_py(err).into_value(py);
                future.call_method1(pyo3::intern!(py, "set_exception"), (exc,))?
            }
        };
        Ok(())
    }
}

/// A call in flight: its asyncio future and the task computing it.
///
/// The future is held weakly: the task awaiting it keeps it alive. Held strongly, it kept
/// its loop alive through this loop's own [`Completions`] (a value of [`BY_LOOP`]), so an
/// acquire left pending on a closed loop was never dropped: it took the lock once free and
/// its watchdog renewed it for the life of the process (found by a user trial). Now the loop
/// and its futures are collected, and [`Completions`]'s drop stops the calls.
struct Waiting {
    future: Py<PyWeakrefReference>,
    /// The future's address when the call began (its key in `by_future`).
    addr: usize,
    task: Arc<LoopTask>,
}

/// The calls in flight on one loop. Keys are never reused: a cancelled call's key must
/// never find a newer call's future.
#[derive(Default)]
struct InFlight {
    next: u64,
    calls: HashMap<u64, Waiting>,
    /// Future address -> key, for [`abandon`] (a future is alive while it is in `calls`).
    by_future: HashMap<usize, u64>,
}

impl InFlight {
    fn add(&mut self, future: &Bound<'_, PyAny>, task: Arc<LoopTask>, key: u64) -> PyResult<()> {
        let weak = PyWeakrefReference::new(future)?.unbind();
        let addr = future.as_ptr() as usize;
        self.by_future.insert(addr, key);
        self.calls.insert(
            key,
            Waiting {
                future: weak,
                addr,
                task,
            },
        );
        Ok(())
    }

    fn remove(&mut self, key: u64) -> Option<Waiting> {
        let entry = self.calls.remove(&key)?;
        // The address may have been reused by a newer future: only this call's entry goes.
        if self.by_future.get(&entry.addr) == Some(&key) {
            self.by_future.remove(&entry.addr);
        }
        Some(entry)
    }

    /// The key of the call whose future is `future` (still alive: the address is checked
    /// against the weak reference, as a dead future's address can be reused).
    fn key_of(&self, future: &Bound<'_, PyAny>) -> Option<u64> {
        let key = *self.by_future.get(&(future.as_ptr() as usize))?;
        let entry = self.calls.get(&key)?;
        let alive = entry.future.bind(future.py()).upgrade();
        alive.is_some_and(|f| f.is(future)).then_some(key)
    }
}

/// The calls of one event loop and their wake-up channel (made on first use by
/// [`awaitable`]).
#[pyclass(frozen, weakref, module = "redlatch._native")]
pub(crate) struct Completions {
    tasks: Arc<Tasks>,
    /// Read end of the wake-up socket pair, watched by the loop (`add_reader`).
    ready: UnixStream,
    waiting: Arc<Mutex<InFlight>>,
    /// A forked child builds its own: the parent's calls do not run there.
    origin: u32,
}

fn in_flight(waiting: &Mutex<InFlight>) -> MutexGuard<'_, InFlight> {
    waiting.lock().unwrap_or_else(|p| p.into_inner())
}

impl Completions {
    fn new(runtime: tokio::runtime::Handle) -> PyResult<Completions> {
        let pair = UnixStream::pair().and_then(|(ready, wake)| {
            ready.set_nonblocking(true)?;
            wake.set_nonblocking(true)?;
            Ok((ready, wake))
        });
        let (ready, wake) =
            pair.map_err(|e| PyRuntimeError::new_err(format!("redlatch: socketpair: {e}")))?;
        Ok(Completions {
            tasks: Tasks::new(wake, runtime),
            ready,
            waiting: Arc::default(),
            origin: crate::runtime::pid(),
        })
    }

    fn waiting(&self) -> MutexGuard<'_, InFlight> {
        in_flight(&self.waiting)
    }
}

impl Drop for Completions {
    /// The loop is gone (collected): nothing can await these calls any more. Stops them (an
    /// acquire is undone in the background; a finished `Hold` nobody took is released).
    fn drop(&mut self) {
        let calls: Vec<Waiting> = self.waiting().calls.drain().map(|(_, w)| w).collect();
        for call in calls {
            call.task.cancel(self.tasks.runtime());
        }
    }
}

#[pymethods]
impl Completions {
    /// The loop's reader callback of the wake-up socket: runs the calls woken on other
    /// threads, and what they asked of the loop's sockets.
    fn drain(&self) {
        let mut sink = [0u8; 64];
        loop {
            match (&self.ready).read(&mut sink) {
                Ok(n) if n == sink.len() => continue,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                _ => break, // drained (short read or WouldBlock), or closed
            }
        }
        // After emptying the socket: a wake-up from now on writes a new byte.
        self.tasks.drained();
        self.tasks.run(|| {});
    }
}

/// Loop -> its [`Completions`] (a `weakref.WeakKeyDictionary`: dropped with the loop).
static BY_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The running loop and its completion channel, made (and watched) on first use.
fn for_running_loop(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, Completions>)> {
    static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let running = GET_RUNNING_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    let by_loop = BY_LOOP
        .get_or_try_init(py, || {
            py.import("weakref")?
                .getattr("WeakKeyDictionary")?
                .call0()
                .map(Bound::unbind)
        })?
        .bind(py);
    if let Some(found) = last_used(py, &running) {
        return Ok((running, found));
    }
    if let Ok(found) = by_loop
        .call_method1(pyo3::intern!(py, "get"), (&running,))?
        .cast_into::<Completions>()
    {
        if found.get().origin == crate::runtime::pid() {
            remember(&running, &found)?;
            return Ok((running, found));
        }
    }
    let made = Bound::new(py, Completions::new(crate::runtime::runtime()?)?)?;
    made.get().tasks.attach(&running)?;
    running.call_method1(
        pyo3::intern!(py, "add_reader"),
        (
            made.get().ready.as_raw_fd(),
            made.getattr(pyo3::intern!(py, "drain"))?,
        ),
    )?;
    by_loop.set_item(&running, &made)?;
    remember(&running, &made)?;
    Ok((running, made))
}

thread_local! {
    /// The loop this thread used last and its [`Completions`], both weakly: the common case
    /// (one loop per thread) then skips the `WeakKeyDictionary` lookup, a Python-level call
    /// that cost about a microsecond per awaited call.
    static LAST_USED: RefCell<Option<(Py<PyWeakrefReference>, Py<PyWeakrefReference>)>> =
        const { RefCell::new(None) };
}

fn last_used<'py>(py: Python<'py>, running: &Bound<'py, PyAny>) -> Option<Bound<'py, Completions>> {
    LAST_USED.with(|last| {
        let last = last.borrow();
        let (event_loop, completions) = last.as_ref()?;
        let event_loop = event_loop.bind(py).upgrade()?;
        if !event_loop.is(running) {
            return None;
        }
        let found = completions.bind(py).upgrade()?.cast_into::<Completions>().ok()?;
        (found.get().origin == crate::runtime::pid()).then_some(found)
    })
}

fn remember(running: &Bound<'_, PyAny>, completions: &Bound<'_, Completions>) -> PyResult<()> {
    let pair = (
        PyWeakrefReference::new(running)?.unbind(),
        PyWeakrefReference::new(completions)?.unbind(),
    );
    LAST_USED.with(|last| *last.borrow_mut() = Some(pair));
    Ok(())
}

fn panicked(panic: Box<dyn std::any::Any + Send>) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    Error::new(ErrorKind::Panic, format!("background task panicked: {what}"))
}

/// Runs `fut` on the running loop's thread (polled once now: module docs) and returns an
/// asyncio future of that loop that resolves to its result (or raises its error as the
/// redlatch exception). Must be called from a coroutine (inside a running event loop):
/// `RuntimeError` otherwise.
pub(crate) fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    if crate::runtime::called_by_a_daemon_at_exit() {
        return never_settled(py); // module docs, "Exit"
    }
    let (running, completions) = for_running_loop(py)?;
    let future = running.call_method0(pyo3::intern!(py, "create_future"))?;
    let key = {
        let mut waiting = completions.get().waiting();
        waiting.next += 1;
        waiting.next
    };
    let waiting = completions.get().waiting.clone();
    let call = async move {
        let out = AssertUnwindSafe(fut)
            .catch_unwind()
            .await
            .unwrap_or_else(|p| Err(panicked(p)));
        Python::attach(|py| settle(py, &waiting, key, Box::new(out)));
    };
    let tasks = &completions.get().tasks;
    let task = tasks.task(Box::pin(call));
    // Registered before the first poll, which may settle the call at once.
    completions.get().waiting().add(&future, task.clone(), key)?;
    tasks.start(&task);
    Ok(future)
}

/// A future of the running loop that nothing settles: a call made by a daemon thread's loop
/// once the interpreter is exiting (module docs, "Exit").
fn never_settled(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import(pyo3::intern!(py, "asyncio"))?
        .call_method0(pyo3::intern!(py, "get_running_loop"))?
        .call_method0(pyo3::intern!(py, "create_future"))
}

/// Sets the outcome of call `key` on its future, unless the call was abandoned or its
/// future cancelled or collected (the outcome is then dropped: a `Hold` is released in the
/// background), or the interpreter is exiting and this is a daemon thread's loop (module
/// docs, "Exit": the outcome is leaked, as the runtime that would release a `Hold` is gone).
fn settle(py: Python<'_>, waiting: &Mutex<InFlight>, key: u64, outcome: Box<dyn Outcome>) {
    let Some(entry) = in_flight(waiting).remove(key) else {
        return; // abandoned
    };
    if crate::runtime::called_by_a_daemon_at_exit() {
        std::mem::forget(outcome);
        return;
    }
    let Some(future) = entry.future.bind(py).upgrade() else {
        return;
    };
    // Settled first, asked after: only cancelling can have settled it before (one call less
    // per call than asking first).
    if let Err(e) = outcome.settle(&future) {
        let cancelled = future
            .call_method0(pyo3::intern!(py, "cancelled"))
            .and_then(|c| c.is_truthy())
            .unwrap_or(true);
        if !cancelled {
            e.write_unraisable(py, Some(&future));
        }
    }
}

/// Stops the call behind `future` (an awaitable of this module) if it is still running and
/// forgets it: its outcome, if any, is dropped. The asyncio layer calls it when a task is
/// cancelled while awaiting an acquire, so that the attempt stops waiting and is undone.
/// Does nothing for a future that is not in flight on the running loop.
#[pyfunction]
pub(crate) fn abandon(py: Python<'_>, future: &Bound<'_, PyAny>) -> PyResult<()> {
    if crate::runtime::called_by_a_daemon_at_exit() {
        return Ok(()); // the runtime is gone: nothing runs any more (module docs, "Exit")
    }
    let (_, completions) = for_running_loop(py)?;
    let entry = {
        let mut waiting = completions.get().waiting();
        let key = waiting.key_of(future);
        key.and_then(|k| waiting.remove(k))
    };
    if let Some(entry) = entry {
        entry.task.cancel(completions.get().tasks.runtime());
    }
    Ok(())
}
