//! The calls of one asyncio event loop, polled on the loop's own thread, and the loop's
//! side of the core's event-loop I/O (`redlatch::EventLoop`: sockets the loop watches).
//!
//! Each call is a [`LoopTask`]: polled at once when it is made (an uncontended acquire has
//! written its command before `acquire()` returns), then whenever it is woken: on the loop's
//! thread by a reply the loop's reader callback read ([`SocketReady`]), which polls it
//! straight away; from a tokio thread (a timer, a pub/sub message, a reply on the
//! multiplexed connection) by queueing it and writing one byte to a socket pair whose read
//! end the loop watches ([`crate::aio::Completions`]'s `drain`). Python is touched only on
//! the loop's thread; tokio threads never take the GIL.

use pyo3::prelude::*;
use pyo3::types::PyWeakrefReference;
use redlatch::{EventLoop, LoopSocket, LoopWatcher};
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::io::Write;
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::task::{Context, Poll, Wake, Waker};

type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    /// The loop whose tasks this thread is running (`Tasks::run`): a wake-up of one of its
    /// tasks here needs no wake-up byte. (Another loop's task woken here still does: the core
    /// may wake a waiter of another loop, a release handing the lock to it.)
    static RUNNING: Cell<*const Tasks> = const { Cell::new(std::ptr::null()) };
}

/// One call on the loop (module docs).
pub(crate) struct LoopTask {
    future: Mutex<Option<TaskFuture>>,
    queued: AtomicBool,
    tasks: Weak<Tasks>,
}

impl LoopTask {
    /// Stops the call: its future is dropped (an acquire is undone in the background).
    pub(crate) fn cancel(&self, runtime: &tokio::runtime::Handle) {
        let _context = runtime.enter();
        drop(locked(&self.future).take());
    }
}

impl Wake for LoopTask {
    fn wake(self: Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            if let Some(tasks) = self.tasks.upgrade() {
                tasks.schedule(self);
            }
        }
    }
}

/// The loop's tasks and its event-loop I/O (shared by wakers on any thread).
pub(crate) struct Tasks {
    ready: Mutex<VecDeque<Arc<LoopTask>>>,
    /// Write end of the socket pair the loop watches: one byte asks for a drain.
    wake: UnixStream,
    /// A byte is written and not yet drained.
    signalled: AtomicBool,
    /// A task was woken from another thread since the last run (`Tasks::run`).
    woken_elsewhere: AtomicBool,
    runtime: tokio::runtime::Handle,
    event_loop: OnceLock<Arc<EventLoop>>,
}

impl Tasks {
    pub(crate) fn new(wake: UnixStream, runtime: tokio::runtime::Handle) -> Arc<Tasks> {
        Arc::new(Tasks {
            ready: Mutex::new(VecDeque::new()),
            wake,
            signalled: AtomicBool::new(false),
            woken_elsewhere: AtomicBool::new(false),
            runtime,
            event_loop: OnceLock::new(),
        })
    }

    /// Connects the loop's I/O (once, on the loop's thread): `event_loop` is the asyncio loop.
    pub(crate) fn attach(self: &Arc<Self>, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let watcher = PyWatcher {
            event_loop: PyWeakrefReference::new(event_loop)?.unbind(),
            tasks: Arc::downgrade(self),
        };
        let _ = self.event_loop.set(EventLoop::new(Box::new(watcher)));
        Ok(())
    }

    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    fn schedule(&self, task: Arc<LoopTask>) {
        locked(&self.ready).push_back(task);
        if !std::ptr::eq(RUNNING.with(Cell::get), self) {
            self.woken_elsewhere.store(true, Ordering::Release);
            self.kick();
        }
    }

    /// Asks the loop for a drain (from any thread).
    fn kick(&self) {
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // WouldBlock: the socket's buffer is full of wake-ups already.
            let _ = (&self.wake).write(&[1]);
        }
    }

    /// The wake-up bytes were read: the next wake-up writes one again.
    pub(crate) fn drained(&self) {
        self.signalled.store(false, Ordering::Release);
    }

    /// A call of `future` on this loop, not polled yet ([`Tasks::start`]).
    pub(crate) fn task(self: &Arc<Self>, future: TaskFuture) -> Arc<LoopTask> {
        Arc::new(LoopTask {
            future: Mutex::new(Some(future)),
            queued: AtomicBool::new(true),
            tasks: Arc::downgrade(self),
        })
    }

    /// Polls `task` for the first time, now (on the loop's thread).
    pub(crate) fn start(&self, task: &Arc<LoopTask>) {
        self.run(|| self.poll(task));
    }

    /// Runs `first`, then every task that became ready, with wake-ups on this thread queued
    /// without a wake-up byte (loop thread only).
    pub(crate) fn run(&self, first: impl FnOnce()) {
        let outer = RUNNING.with(|r| r.replace(self));
        first();
        if let Some(event_loop) = self.event_loop.get() {
            event_loop.run_pending();
            if self.woken_elsewhere.swap(false, Ordering::AcqRel) {
                // Calls another thread woke (a timer, pub/sub) run after what arrived on the
                // loop's sockets is read: after the loop's thread was blocked, a reply that
                // came in time waits unread beside the timer that fired meanwhile, and the
                // call must see the reply (`EventLoop::read_arrived`).
                event_loop.read_arrived();
            }
        }
        // Bounded, so that a task woken again and again cannot keep the loop from others.
        for _ in 0..1024 {
            let Some(task) = locked(&self.ready).pop_front() else {
                break;
            };
            self.poll(&task);
        }
        RUNNING.with(|r| r.set(outer));
        if !std::ptr::eq(outer, self) && !locked(&self.ready).is_empty() {
            self.kick();
        }
    }

    fn poll(&self, task: &Arc<LoopTask>) {
        task.queued.store(false, Ordering::Release);
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut slot = locked(&task.future);
        let Some(future) = slot.as_mut() else { return };
        let polled = catch_unwind(AssertUnwindSafe(|| match self.event_loop.get() {
            Some(event_loop) => redlatch::poll_on_loop(future.as_mut(), &mut cx, &self.runtime, event_loop),
            None => {
                let _context = self.runtime.enter();
                future.as_mut().poll(&mut cx)
            }
        }));
        // A panic was caught inside the call's own future (aio.rs); this one is the settling's.
        if !matches!(polled, Ok(Poll::Pending)) {
            *slot = None;
        }
    }
}

/// The asyncio side of `redlatch::EventLoop`: `add_reader` / `add_writer` on the loop.
struct PyWatcher {
    /// Weak: the loop's own `Tasks` must not keep it alive.
    event_loop: Py<PyWeakrefReference>,
    tasks: Weak<Tasks>,
}

impl PyWatcher {
    /// Runs `f` on the loop, if it still exists. Its only error is a closed loop's: no call
    /// can run on that loop any more, so there is nothing to report it to.
    fn with_loop(&self, f: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<()>) {
        Python::attach(|py| {
            if let Some(event_loop) = self.event_loop.bind(py).upgrade() {
                let _ = f(&event_loop);
            }
        });
    }
}

impl LoopWatcher for PyWatcher {
    fn watch(&self, socket: LoopSocket) {
        let Some(tasks) = self.tasks.upgrade() else { return };
        self.with_loop(|l| {
            let fd = socket.fd();
            let ready = SocketReady {
                socket,
                tasks,
                writable: false,
            };
            l.call_method1(pyo3::intern!(l.py(), "add_reader"), (fd, ready))
                .map(drop)
        });
    }

    fn watch_writable(&self, socket: LoopSocket) {
        let Some(tasks) = self.tasks.upgrade() else { return };
        self.with_loop(|l| {
            let fd = socket.fd();
            let ready = SocketReady {
                socket,
                tasks,
                writable: true,
            };
            l.call_method1(pyo3::intern!(l.py(), "add_writer"), (fd, ready))
                .map(drop)
        });
    }

    fn unwatch_writable(&self, fd: RawFd) {
        self.with_loop(|l| {
            l.call_method1(pyo3::intern!(l.py(), "remove_writer"), (fd,))
                .map(drop)
        });
    }

    fn unwatch(&self, fd: RawFd) {
        self.with_loop(|l| {
            l.call_method1(pyo3::intern!(l.py(), "remove_reader"), (fd,))?;
            l.call_method1(pyo3::intern!(l.py(), "remove_writer"), (fd,))
                .map(drop)
        });
    }

    fn kick(&self) {
        if let Some(tasks) = self.tasks.upgrade() {
            tasks.kick();
        }
    }
}

/// The loop's reader (or writer) callback of one event-loop socket: reads the replies that
/// arrived and runs the calls they completed, at once.
#[pyclass(frozen, module = "redlatch._native")]
struct SocketReady {
    socket: LoopSocket,
    tasks: Arc<Tasks>,
    writable: bool,
}

#[pymethods]
impl SocketReady {
    fn __call__(&self) {
        self.tasks.run(|| {
            if self.writable {
                self.socket.writable();
            } else {
                self.socket.readable();
            }
        });
    }
}
