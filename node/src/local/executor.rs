//! A single-threaded executor on the JavaScript thread: the local engine's tasks (the core's
//! acquire and release futures, the redis-rs connection drivers, the watchdog) are polled
//! here, between JavaScript's own callbacks, never on another thread.
//!
//! When polling happens: every call from JavaScript into the local engine (a lock call, bytes
//! arriving on a socket, a timer firing) is an [`Entry`]; when the outermost entry ends it
//! runs every task that became ready, then returns what the tasks produced to JavaScript
//! (socket writes, results, the next timer: `host.rs`). A task woken outside an entry (from another
//! thread: the tokio subscriber that wakes pub/sub waiters, or a guard dropped by the garbage
//! collector) schedules a drain through a weak threadsafe function instead, so the wake-up
//! is never lost and never keeps the process alive.

use super::host::{self, Scratch};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use std::cell::Cell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Wake, Waker};
use std::thread::ThreadId;

/// A task's future. `Send` because the core's futures are (off wasm32); it is only ever
/// polled on the executor's thread.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Asks the JavaScript thread to drain (a weak threadsafe function: it never keeps Node alive).
pub(crate) type Kick = ThreadsafeFunction<(), (), (), Status, false, true>;

struct Task {
    future: Mutex<Option<TaskFuture>>,
    queued: AtomicBool,
    executor: Arc<Executor>,
}

/// The executor of one JavaScript thread (each worker thread has its own).
pub(crate) struct Executor {
    ready: Mutex<VecDeque<Arc<Task>>>,
    thread: ThreadId,
    kick: Kick,
    /// A drain was requested through `kick` and has not started yet.
    kicked: AtomicBool,
}

thread_local! {
    /// Depth of entries on this thread (a JavaScript callback the addon called may call in).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// A drain is running on this thread.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Executor {
    pub(crate) fn new(kick: Kick) -> Arc<Executor> {
        Arc::new(Executor {
            ready: Mutex::new(VecDeque::new()),
            thread: std::thread::current().id(),
            kick,
            kicked: AtomicBool::new(false),
        })
    }

    /// Runs `future` on this executor (from any thread; it is polled on the executor's).
    pub(crate) fn spawn(self: &Arc<Self>, future: TaskFuture) {
        let task = Arc::new(Task {
            future: Mutex::new(Some(future)),
            queued: AtomicBool::new(false),
            executor: self.clone(),
        });
        task.schedule();
    }

    fn inside_entry(&self) -> bool {
        std::thread::current().id() == self.thread && DEPTH.with(|d| d.get() > 0)
    }

    /// Polls every ready task until none is left (tasks woken meanwhile included).
    fn run_ready(&self) {
        if DRAINING.with(|d| d.replace(true)) {
            return;
        }
        self.kicked.store(false, Ordering::Release);
        loop {
            let next = locked(&self.ready).pop_front();
            match next {
                Some(task) => task.run(),
                None => break,
            }
        }
        DRAINING.with(|d| d.set(false));
    }

    /// Asks JavaScript for a drain soon (`kick`), unless one is already asked for.
    fn request_drain(&self) {
        if !self.kicked.swap(true, Ordering::AcqRel) {
            self.kick.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl Task {
    fn schedule(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let executor = &self.executor;
        locked(&executor.ready).push_back(self.clone());
        // Inside an entry the drain at its end runs the task; elsewhere ask for one.
        if !executor.inside_entry() {
            executor.request_drain();
        }
    }

    fn run(self: Arc<Self>) {
        self.queued.store(false, Ordering::Release);
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let mut slot = locked(&self.future);
        let Some(future) = slot.as_mut() else { return };
        // A panic in a task must not unwind into JavaScript: the task is dropped, and
        // whoever waits on it sees it gone (its result channel closes).
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))) {
            Ok(std::task::Poll::Pending) => {}
            Ok(std::task::Poll::Ready(())) | Err(_) => *slot = None,
        }
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.schedule();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.schedule();
    }
}

/// One call from JavaScript into the local engine. The outermost one polls the ready tasks
/// when it ends; [`Entry::finish`] then returns what they queued for JavaScript (host.rs).
pub(crate) struct Entry<'a> {
    executor: &'a Executor,
    finished: bool,
}

impl<'a> Entry<'a> {
    pub(crate) fn enter(executor: &'a Executor) -> Entry<'a> {
        DEPTH.with(|d| d.set(d.get() + 1));
        Entry {
            executor,
            finished: false,
        }
    }

    /// Leaves; `true` for the outermost entry, which then runs the ready tasks.
    fn leave(&mut self) -> bool {
        self.finished = true;
        let outermost = DEPTH.with(|d| {
            let depth = d.get() - 1;
            d.set(depth);
            depth == 0
        });
        if outermost {
            // Still counted as inside while draining, so wake-ups during it need no kick.
            DEPTH.with(|d| d.set(1));
            self.executor.run_ready();
            DEPTH.with(|d| d.set(0));
        }
        outermost
    }

    /// Ends the entry: writes what JavaScript must deliver into `out` and returns its text
    /// (host.rs; nothing from a nested entry: the outermost one hands it all over).
    pub(crate) fn finish(mut self, out: Scratch<'_>) -> Option<String> {
        if !self.leave() {
            return None;
        }
        let (text, all) = host::take(out);
        if !all {
            self.executor.request_drain();
        }
        text
    }
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        // An entry left early (an error before `finish`): its tasks still run, and what
        // they queued is delivered by a drain JavaScript is asked for.
        if !self.finished && self.leave() && host::pending() {
            self.executor.request_drain();
        }
    }
}
