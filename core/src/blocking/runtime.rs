//! The runtime a blocking client shares with its locks and guards, and how a call runs on it.

use crate::error::{Error, ErrorKind, Result};
use crate::origin::Origin;
use futures::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex};
use std::task::Poll;

/// The runtime a blocking client and its locks and guards share. Dropping the last of them
/// inside an async context, where tokio forbids the blocking shutdown of a runtime (it
/// panics), shuts it down in the background instead; dropping it in a forked child leaks it
/// (its threads are the parent's: a shutdown would wait for them forever).
#[derive(Debug)]
pub(super) struct OwnedRuntime {
    runtime: Option<tokio::runtime::Runtime>,
    /// The process that built it: only there do its threads exist.
    origin: Origin,
    /// The client whose I/O it runs, kept as long as any blocking handle is, so that in a
    /// forked child it is never dropped either: its sockets are registered with the parent's
    /// epoll instance, which the child shares, so closing them there would unregister them
    /// in the parent too.
    client: Option<crate::Client>,
}

impl std::ops::Deref for OwnedRuntime {
    type Target = tokio::runtime::Runtime;
    fn deref(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("present until dropped")
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            if self.origin.is_foreign() {
                std::mem::forget((runtime, self.client.take()));
            } else if tokio::runtime::Handle::try_current().is_ok() {
                runtime.shutdown_background();
            }
        }
    }
}

impl OwnedRuntime {
    /// Keeps `client` for as long as the runtime (see the field).
    pub(super) fn keep(&mut self, client: crate::Client) {
        self.client = Some(client);
    }

    /// `true` in a forked child of the process that built the runtime: its threads, and so
    /// every call and hold made through it, are the parent's.
    pub(super) fn is_inherited(&self) -> bool {
        self.origin.is_foreign()
    }

    /// `InvalidArgument` in a forked child (see [`Self::is_inherited`]); `WouldDeadlock` on a
    /// thread of this runtime itself (a task spawned on it, an `on_lost` callback), whose one
    /// worker would then wait for itself.
    pub(super) fn check_caller(&self) -> Result<()> {
        if self.is_inherited() {
            return Err(Error::invalid(
                "this blocking client was created before fork() in the parent process, whose \
                 runtime threads do not exist here; create a new client in the child",
            ));
        }
        if let Ok(current) = tokio::runtime::Handle::try_current() {
            if current.id() == self.handle().id() {
                return Err(Error::new(
                    ErrorKind::WouldDeadlock,
                    "a blocking call on a thread of the client's own runtime (a task spawned on \
                     it, an on_lost callback) would wait for itself; use the async API there \
                     (Client::as_async) or call from another thread",
                ));
            }
        }
        Ok(())
    }
}

/// One worker unless `REDLATCH_WORKER_THREADS` says otherwise
/// ([`worker_threads_from_env`](crate::worker_threads_from_env)): lock traffic is light and
/// I/O-bound, and with two workers a call's task, the connection's task and the timers bounce
/// between them (measured for issue 15: about 10 context switches per C acquire + release with
/// two workers and `block_on`, 6-6.5 with one worker and [`run`]).
pub(super) fn new_runtime() -> Result<OwnedRuntime> {
    let workers = crate::worker_threads_from_env()?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("redlatch")
        .enable_all()
        .build()
        .map(|runtime| OwnedRuntime {
            runtime: Some(runtime),
            origin: Origin::here(),
            client: None,
        })
        .map_err(|e| Error::new(ErrorKind::Panic, format!("cannot start the runtime: {e}")))
}

/// Runs `fut` to completion: first polled on the calling thread (see [`super::poll_here`]),
/// which finishes an uncontended call with its socket I/O done here and no thread woken;
/// else the rest runs as a task on `runtime` and the calling thread waits for its result.
///
/// Why the rest as a task rather than `runtime.block_on(fut)`: what is left is a wait on
/// pub/sub or a timer, and the I/O after it runs on the worker; polled from the calling thread,
/// every step would cross threads, and the timers a call sets (its network timeout) would be
/// registered from outside the runtime, which wakes the worker to re-arm its deadline. As a
/// task, the call runs next to its I/O and the calling thread is woken once, with the result.
///
/// Why the calling thread waits on a condvar (see [`wait_on`]) rather than
/// `block_on(join handle)`: tokio's `block_on` panics on a thread that is inside another
/// runtime (a `#[tokio::main]` body, a task), and only once the call has to wait, since the
/// first poll is not a `block_on`: an acquire would work while the lock is free and panic
/// under contention. A condvar is legal on any thread, so the blocking API behaves the same
/// everywhere: inside an async runtime it works too (it blocks that runtime's thread
/// meanwhile, as any blocking call does; use the async API or `spawn_blocking` there). It is
/// also one futex wait, without `block_on`'s set-up.
///
/// # Errors
/// As [`OwnedRuntime::check_caller`], before anything is polled; else `fut`'s own.
///
/// # Panics
/// On this thread if the future panicked.
pub(super) fn run<T: Send + 'static>(
    runtime: &OwnedRuntime,
    fut: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    runtime.check_caller()?;
    let mut fut = Box::pin(fut);
    if let Poll::Ready(out) = super::poll_here(fut.as_mut(), runtime.handle()) {
        return out;
    }
    wait_on(runtime, fut)
}

/// Runs an operation of a hold (a permit's or a multi-guard's release) as [`run`]; in a
/// forked child, where the hold is the parent's, the async operation answers at once, before
/// anything else (`NotOwned`, see [`crate::Guard`] on fork), and that answer is returned
/// without touching the runtime.
pub(super) fn run_hold<T: Send + 'static>(
    runtime: &OwnedRuntime,
    fut: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    if !runtime.is_inherited() {
        return run(runtime, fut);
    }
    let mut fut = std::pin::pin!(fut);
    match fut
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(out) => out,
        Poll::Pending => Err(Error::not_owned(
            false,
            crate::Reason::NeverHeld,
            crate::origin::FORKED_HOLD,
        )),
    }
}

/// Runs `fut` as a task on `runtime` and blocks the calling thread until it is done (see
/// [`run`] for why not `block_on`); the caller checked [`OwnedRuntime::check_caller`].
pub(super) fn wait_on<T: Send + 'static>(
    runtime: &OwnedRuntime,
    fut: impl Future<Output = T> + Send + 'static,
) -> T {
    let slot = Arc::new(Slot {
        state: Mutex::new(State::Waiting),
        done: Condvar::new(),
    });
    let sender = Sender(slot.clone());
    runtime.spawn(async move {
        let out = AssertUnwindSafe(fut).catch_unwind().await;
        sender.set(State::Done(out));
    });
    let mut state = slot.state.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        match std::mem::replace(&mut *state, State::Waiting) {
            State::Waiting => state = slot.done.wait(state).unwrap_or_else(|p| p.into_inner()),
            State::Done(Ok(out)) => return out,
            State::Done(Err(panic)) => std::panic::resume_unwind(panic),
            State::Gone => panic!("redlatch: the runtime stopped during a blocking call"),
        }
    }
}

/// Where a task of [`wait_on`] leaves its result. A mutex and a condvar rather than a std
/// channel: a channel's receiver makes a per-thread handle (`thread::current()`) on every
/// calling thread, which lives until that thread exits (valgrind reports it for a C
/// program's main thread); this allocates nothing per thread.
struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
}

enum State<T> {
    Waiting,
    Done(std::thread::Result<T>),
    /// The task was dropped unfinished (its runtime shut down).
    Gone,
}

/// The task's end of a [`Slot`]: reports `Gone` if dropped before it set a result.
struct Sender<T>(Arc<Slot<T>>);

impl<T> Sender<T> {
    fn set(&self, new: State<T>) {
        let mut state = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*state, State::Waiting) {
            *state = new;
            self.0.done.notify_one();
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.set(State::Gone);
    }
}
