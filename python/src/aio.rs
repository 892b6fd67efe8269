//! Rust futures as asyncio futures, with one thread hop each way and no GIL on tokio threads.
//!
//! Why not pyo3-async-runtimes (used until issue 15): its `future_into_py` spawns the future,
//! then hands the result to tokio's blocking pool, whose thread takes the GIL and calls
//! `loop.call_soon_threadsafe`. Each awaited call thus crossed three threads and took the GIL
//! off the event loop's thread; redlatch.asyncio measured 0.64x redis-py's asyncio `Lock`
//! (python/README.md, "Performance"). Here each event loop gets one [`Completions`]: a
//! socket pair whose read end the loop watches (`loop.add_reader`). A finished task pushes
//! its outcome, still a Rust value, onto the queue and writes one byte when the queue was
//! empty; the loop wakes, calls [`Completions::drain`] on its own thread, and only there are
//! outcomes turned into Python objects and set on their futures. Tokio threads never touch
//! Python.
//!
//! Cancellation: a call whose awaiting task is cancelled runs to completion and its outcome
//! is dropped when drained (the future is cancelled); a dropped `Hold` is released in the
//! background. An acquire must not keep waiting, so the asyncio layer calls [`abandon`] when
//! its await is cancelled: that aborts the task, which drops the acquire future, and the core
//! undoes the attempt in the background (rollback, unsubscribe).

use futures::FutureExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use pyo3::IntoPyObjectExt;
use redlatch::{Error, ErrorKind};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io::{ErrorKind as IoKind, Read, Write};
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

type Done = Vec<(u64, Box<dyn Outcome>)>;

struct QueueState {
    done: Done,
    /// Keys of the calls still wanted: an outcome whose key is not here (abandoned) is
    /// dropped at once rather than left waiting for the loop to drain it.
    live: HashSet<u64>,
    /// Set when the loop's [`Completions`] is gone: nothing reads the socket any more.
    closed: bool,
}

/// Where tokio tasks leave their outcomes (shared by the tasks and the loop's [`Completions`]).
struct Queue {
    state: Mutex<QueueState>,
    /// Write end of the socket pair: one byte wakes the loop.
    wake: UnixStream,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Drops the call `key`: its outcome, queued or still to come.
    fn abandon(&self, key: u64) {
        let dropped: Done = {
            let mut state = self.lock();
            state.live.remove(&key);
            let (gone, kept) = std::mem::take(&mut state.done)
                .into_iter()
                .partition(|(k, _)| *k == key);
            state.done = kept;
            gone
        };
        drop(dropped); // a dropped Hold is released in the background
    }

    /// Called on a tokio thread. Wakes the loop only when the queue was empty: a non-empty
    /// queue has a wake-up byte pending that [`Completions::drain`] has not consumed yet.
    fn push(&self, key: u64, outcome: Box<dyn Outcome>) {
        let mut state = self.lock();
        if state.closed {
            drop(state);
            drop(outcome); // a dropped Hold is released in the background
            return;
        }
        if !state.live.remove(&key) {
            drop(state);
            drop(outcome); // abandoned
            return;
        }
        state.done.push((key, outcome));
        if state.done.len() == 1 {
            // WouldBlock: the socket buffer is full of wake-ups already, the loop will drain.
            let _ = (&self.wake).write(&[1]);
        }
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
    key: u64,
    future: Py<PyWeakrefReference>,
    /// The future's address when the call began (its key in `by_future`).
    addr: usize,
    task: tokio::task::AbortHandle,
}

/// The calls in flight on one loop. Keys are never reused: an aborted task may still push
/// its outcome, which must then find nothing rather than a newer call's future.
#[derive(Default)]
struct InFlight {
    next: u64,
    calls: HashMap<u64, Waiting>,
    /// Future address -> key, for [`abandon`] (a future is alive while it is in `calls`).
    by_future: HashMap<usize, u64>,
}

impl InFlight {
    fn add(&mut self, future: &Bound<'_, PyAny>, task: tokio::task::AbortHandle, key: u64) -> PyResult<()> {
        let weak = PyWeakrefReference::new(future)?.unbind();
        let addr = future.as_ptr() as usize;
        self.by_future.insert(addr, key);
        self.calls.insert(
            key,
            Waiting {
                key,
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

/// The completion channel of one event loop (made on first use by [`awaitable`]).
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Completions {
    queue: Arc<Queue>,
    /// Read end, watched by the loop (`add_reader`).
    ready: UnixStream,
    waiting: Mutex<InFlight>,
    /// A forked child builds its own: the parent's tasks do not run there.
    origin: u32,
}

impl Completions {
    fn new() -> PyResult<Completions> {
        let pair = UnixStream::pair().and_then(|(ready, wake)| {
            ready.set_nonblocking(true)?;
            wake.set_nonblocking(true)?;
            Ok((ready, wake))
        });
        let (ready, wake) =
            pair.map_err(|e| PyRuntimeError::new_err(format!("redlatch: socketpair: {e}")))?;
        Ok(Completions {
            queue: Arc::new(Queue {
                state: Mutex::new(QueueState {
                    done: Vec::new(),
                    live: HashSet::new(),
                    closed: false,
                }),
                wake,
            }),
            ready,
            waiting: Mutex::new(InFlight::default()),
            origin: crate::runtime::pid(),
        })
    }

    fn waiting(&self) -> MutexGuard<'_, InFlight> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Completions {
    /// The loop is gone (collected): nothing can await these calls any more. Stops them (an
    /// acquire is undone in the background) and drops what finished (a dropped `Hold` is
    /// released in the background).
    fn drop(&mut self) {
        for call in self.waiting().calls.values() {
            call.task.abort();
        }
        let done = {
            let mut state = self.queue.lock();
            state.closed = true;
            std::mem::take(&mut state.done)
        };
        drop(done);
    }
}

#[pymethods]
impl Completions {
    /// The loop's reader callback: settles every future whose call finished. Outcomes of
    /// futures that were cancelled (or abandoned) are dropped.
    fn drain(&self, py: Python<'_>) {
        let mut sink = [0u8; 64];
        loop {
            match (&self.ready).read(&mut sink) {
                Ok(n) if n == sink.len() => continue,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                _ => break, // drained (short read or WouldBlock), or closed
            }
        }
        // Taken after emptying the socket: an outcome pushed later writes a new byte.
        let done = std::mem::take(&mut self.queue.lock().done);
        for (key, outcome) in done {
            let Some(entry) = self.waiting().remove(key) else {
                continue; // abandoned
            };
            let Some(future) = entry.future.bind(py).upgrade() else {
                continue; // nobody awaits it any more: the outcome is dropped
            };
            let future = &future;
            let cancelled = future
                .call_method0(pyo3::intern!(py, "cancelled"))
                .and_then(|c| c.is_truthy())
                .unwrap_or(true);
            if !cancelled {
                if let Err(e) = outcome.settle(future) {
                    e.write_unraisable(py, Some(future));
                }
            }
        }
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
    if let Ok(found) = by_loop
        .call_method1(pyo3::intern!(py, "get"), (&running,))?
        .cast_into::<Completions>()
    {
        if found.get().origin == crate::runtime::pid() {
            return Ok((running, found));
        }
    }
    let made = Bound::new(py, Completions::new()?)?;
    running.call_method1(
        pyo3::intern!(py, "add_reader"),
        (
            made.get().ready.as_raw_fd(),
            made.getattr(pyo3::intern!(py, "drain"))?,
        ),
    )?;
    by_loop.set_item(&running, &made)?;
    Ok((running, made))
}

fn panicked(panic: Box<dyn std::any::Any + Send>) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    Error::new(ErrorKind::Panic, format!("background task panicked: {what}"))
}

/// Runs `fut` as a task on the runtime and returns an asyncio future of the running loop
/// that resolves to its result (or raises its error as the redlatch exception). Must be
/// called from a coroutine (inside a running event loop): `RuntimeError` otherwise.
pub(crate) fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let rt = crate::runtime::runtime()?;
    let (running, completions) = for_running_loop(py)?;
    let future = running.call_method0(pyo3::intern!(py, "create_future"))?;
    let key = {
        let mut waiting = completions.get().waiting();
        waiting.next += 1;
        waiting.next
    };
    let queue = completions.get().queue.clone();
    queue.lock().live.insert(key);
    let task = rt.spawn(async move {
        let out = AssertUnwindSafe(fut)
            .catch_unwind()
            .await
            .unwrap_or_else(|p| Err(panicked(p)));
        queue.push(key, Box::new(out));
    });
    // Inserted after the spawn but before anything can drain: draining runs on this loop's
    // thread, which is here, holding the GIL.
    completions
        .get()
        .waiting()
        .add(&future, task.abort_handle(), key)?;
    Ok(future)
}

/// Stops the call behind `future` (an awaitable of this module) if it is still running and
/// forgets it: its outcome, if any, is dropped. The asyncio layer calls it when a task is
/// cancelled while awaiting an acquire, so that the attempt stops waiting and is undone.
/// Does nothing for a future that is not in flight on the running loop.
#[pyfunction]
pub(crate) fn abandon(py: Python<'_>, future: &Bound<'_, PyAny>) -> PyResult<()> {
    let (_, completions) = for_running_loop(py)?;
    let entry = {
        let mut waiting = completions.get().waiting();
        let key = waiting.key_of(future);
        key.and_then(|k| waiting.remove(k))
    };
    if let Some(entry) = entry {
        entry.task.abort();
        // Also when it finished already: a queued outcome waits for the loop to drain it,
        // which may be a while if the loop is busy (a queued Hold keeps the lock held).
        completions.get().queue.abandon(entry.key);
    }
    Ok(())
}
