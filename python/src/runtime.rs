//! The process's tokio runtime, rebuilt after `fork()`.
//!
//! Why our own runtime instead of `redlatch::blocking`'s (one per client) or a global one:
//! tokio does not survive `fork()`. The child inherits the runtime's memory but none of its
//! threads, so anything that waits on them (a `block_on`, dropping the runtime, which joins
//! its threads, or a mutex a worker held at the time of the fork) hangs forever. The child
//! therefore must never touch or drop the parent's runtime: [`runtime`] compares the process
//! id with the one the runtime was built in, leaks the old runtime (`std::mem::forget`) on a
//! mismatch and builds a fresh one. Everything else that belongs to the parent (clients,
//! holds) does the same pid check (see `client.rs`, `hold.rs`).
//!
//! The worker threads are native threads, not Python threads, so they never keep the
//! interpreter from exiting. They must not be inside Python while it finalizes, though: a
//! worker still delivering an asyncio result then takes the GIL of a dying interpreter, and
//! CPython ends that thread from under Rust (a crash at exit). So an `atexit` hook
//! ([`shutdown_runtime`]) stops the runtime, with the GIL released so a worker can finish what it is
//! doing, before finalization starts; the runtime is owned here alone (everything else holds a
//! `Handle`) so that it can be shut down.

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Mutex, Once, OnceLock};
use std::task::Poll;
use std::thread::ThreadId;
use std::time::Duration;

struct Slot {
    pid: u32,
    /// `None` once [`shutdown`] ran (the interpreter is exiting).
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

static RUNTIME: Mutex<Option<Slot>> = Mutex::new(None);

/// How long the exit hook waits for the runtime's threads to finish their current step.
const SHUTDOWN_WAIT: Duration = Duration::from_millis(500);

/// How long the exit hook waits for background clean-up (`redlatch::wait_for_background_cleanup`):
/// a round trip or two to a reachable Redis; against one that does not answer, the locks left
/// expire with their lease instead of holding up the exit.
const CLEANUP_WAIT: Duration = Duration::from_secs(2);

/// The calling process's id (checked on every call that would touch the runtime), cached:
/// `getpid` is a system call (glibc stopped caching it), and an asyncio acquire + release
/// asked for it about ten times (~3 us of a 125 us pair, `make bench`). The cache is cleared
/// in a forked child by a `pthread_atfork` handler, which every `fork()` through the C
/// library runs (Python's `os.fork`, `multiprocessing`, C extensions).
pub(crate) fn pid() -> u32 {
    let cached = PID.load(Ordering::Acquire);
    if cached != 0 {
        return cached;
    }
    FORGET_PID_AT_FORK.call_once(forget_pid_at_fork);
    let pid = std::process::id();
    if CACHING.load(Ordering::Acquire) {
        PID.store(pid, Ordering::Release);
    }
    pid
}

/// The process id [`pid`] cached (0: not yet, or cleared in a forked child).
static PID: AtomicU32 = AtomicU32::new(0);
static FORGET_PID_AT_FORK: Once = Once::new();
/// The fork handler is registered: [`pid`] may cache (else it asks the kernel every time).
static CACHING: AtomicBool = AtomicBool::new(false);

extern "C" fn forget_pid() {
    PID.store(0, Ordering::Release);
}

#[allow(unsafe_code)] // the one libc call: a handler with no state but an atomic
fn forget_pid_at_fork() {
    // SAFETY: `forget_pid` only stores to an atomic, which is async-signal-safe, as a
    // handler run in the child of a multithreaded process must be.
    let registered = unsafe { libc::pthread_atfork(None, None, Some(forget_pid)) };
    CACHING.store(registered == 0, Ordering::Release);
}

/// Worker threads: `REDLATCH_WORKER_THREADS` (1..=16), default 1
/// (`redlatch::worker_threads_from_env`). Lock traffic is I/O-bound and light; one worker keeps
/// a process from adding threads that compete for the CPU when many processes contend on a
/// small machine.
fn build(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("redlatch-py")
        .enable_all()
        .build()
}

/// What a call of the exiting thread gets once the runtime is shut down.
fn exit_error() -> pyo3::PyErr {
    crate::errors::to_py(redlatch::Error::connection(
        "the interpreter is exiting: redlatch's runtime is shut down",
    ))
}

/// The runtime of this process, built on first use and rebuilt in a forked child.
///
/// # Errors
/// `RedisConnectionError` once the interpreter is exiting (the runtime is shut down);
/// `ValueError` for a bad `REDLATCH_WORKER_THREADS`; `RuntimeError` when the OS refuses to
/// start the runtime's threads.
pub(crate) fn runtime() -> PyResult<tokio::runtime::Handle> {
    let pid = pid();
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = slot.as_ref() {
        if s.pid == pid {
            if s.runtime.is_none() {
                drop(slot);
                if called_by_a_daemon_at_exit() {
                    pyo3::Python::attach(park_for_exit);
                }
                return Err(exit_error());
            }
            return Ok(s.handle.clone());
        }
    }
    quiet_panics_at_exit();
    // A runtime from the parent process: its threads do not exist here. Dropping it would
    // wait for them forever, so it is leaked on purpose.
    if let Some(parent) = slot.take() {
        std::mem::forget(parent);
    }
    let workers = redlatch::worker_threads_from_env().map_err(crate::errors::to_py)?;
    let runtime =
        build(workers).map_err(|e| PyRuntimeError::new_err(format!("redlatch: cannot start tokio: {e}")))?;
    let handle = runtime.handle().clone();
    *slot = Some(Slot {
        pid,
        runtime: Some(runtime),
        handle: handle.clone(),
    });
    Ok(handle)
}

/// Set by [`shutdown_runtime`]: the interpreter is exiting (a forked child starts again at
/// `false`: it forks before any exit hook ran).
static EXITING: AtomicBool = AtomicBool::new(false);

/// The thread that ran [`shutdown_runtime`]: the one finalizing the interpreter (the main
/// thread, running the `atexit` hooks).
static EXIT_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// `true` once [`shutdown_runtime`] began to stop this process's runtime.
fn exiting() -> bool {
    EXITING.load(Ordering::Acquire)
}

/// The interpreter is exiting and the calling thread is not the one running the exit hooks:
/// a daemon thread (`threading` joined every other thread before the hooks). Whatever its call
/// returns, an error from the shut-down runtime or even a result, would run Python code in a
/// finalizing interpreter (an exception and a half-printed traceback, found at 19 of 20 exits
/// of a daemon thread calling in a loop), so it parks instead. The exiting thread itself (a
/// user's exit hook that runs after ours) gets its error, as any caller would. An event loop
/// on such a thread is not parked: its calls are never settled (`aio.rs`, "Exit").
pub(crate) fn called_by_a_daemon_at_exit() -> bool {
    exiting() && EXIT_THREAD.get() != Some(&std::thread::current().id())
}

/// Stops the calling thread for good, GIL released: a daemon thread still inside a call when
/// the interpreter exits (only daemon threads run then; `threading` joined the others before
/// the exit hooks), as in any other blocking call. Returning would run Python code in a
/// finalizing interpreter: an exception and a half-printed traceback at every exit.
fn park_for_exit(py: pyo3::Python<'_>) -> ! {
    py.detach(|| loop {
        std::thread::park();
    })
}

/// Keeps panics quiet once the interpreter exits: a daemon thread still polling a call then
/// meets the runtime being shut down (tokio panics on a timer of a runtime that is shutting
/// down), and [`park_for_exit`] stops it; the message would only be noise at every exit.
/// Other panics print as before (the previous hook).
fn quiet_panics_at_exit() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !exiting() {
                previous(info);
            }
        }));
    });
}

/// The `atexit` hook (registered by `redlatch/__init__.py`): stops this process's runtime
/// before the interpreter finalizes, see the module docs. Pending background work (renewals,
/// releases of dropped locks) is dropped; their locks expire with their leases.
#[pyo3::pyfunction]
pub(crate) fn shutdown_runtime(py: pyo3::Python<'_>) {
    // Clean-up the program left to the background first (a fair waiter interrupted by Ctrl-C
    // leaving its queue, a dropped lock's release): stopped here, a fair queue kept the dead
    // entry for minutes and no one could take the free lock (a user trial). Bounded.
    py.detach(|| redlatch::wait_for_background_cleanup(CLEANUP_WAIT));
    let runtime = {
        let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_mut() {
            Some(s) if s.pid == pid() => {
                let _ = EXIT_THREAD.set(std::thread::current().id());
                EXITING.store(true, Ordering::Release);
                s.runtime.take()
            }
            _ => None,
        }
    };
    if let Some(runtime) = runtime {
        py.detach(|| runtime.shutdown_timeout(SHUTDOWN_WAIT));
    }
}

/// How long an interrupted call waits for its task to be dropped (a step of the worker).
const ABORT_WAIT: Duration = Duration::from_millis(200);

/// How often a blocking wait wakes up to let Python handle signals (Ctrl-C).
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// Runs `fut` with the GIL released: polled once on the calling thread, which for a
/// single-node client sends the call's requests itself (`redlatch::blocking::poll_here`), so
/// an uncontended acquire or release crosses no thread; what is left after that (a wait on
/// pub/sub or a timer) runs as a task on the runtime while this thread waits.
///
/// Why the rest as a task rather than `block_on(fut)` on the calling thread: after the first
/// poll, the I/O runs on the runtime's worker (pub/sub, the multiplexed connection), so a
/// future polled on the calling thread would bounce between the two threads on every step. As
/// a task it runs on the worker next to its I/O, and the calling thread is woken once, with
/// the result. Under contention (each release wakes waiters that then retry) this saves most
/// of a waiter's CPU. The first poll cannot be interrupted by Ctrl-C; it is bounded by the
/// client's network timeout (a reply timeout there moves the rest of the call to the task).
///
/// Fork safety: the synchronous connections belong to the core client, which the child never
/// uses (see `client.rs`); the core also refuses connections made under another pid.
///
/// Why a std channel rather than `block_on(join handle)` with a tokio timeout: waiting on a
/// channel with `recv_timeout` is one futex wait with a deadline, while a tokio timer made on
/// this (non-runtime) thread is registered with the runtime's timer driver, which can wake
/// the worker just to re-arm its deadline; the channel also skips `block_on`'s set-up. Each
/// call then costs one wake-up of the worker (the spawn) and one of this thread (the result).
///
/// With `interruptible`, the wait wakes every 50 ms to run Python signal handlers; if one
/// raises (`KeyboardInterrupt`), the task is aborted, which drops the future (an acquire is
/// then undone in the background by the core, which also unsubscribes) and the exception
/// propagates.
fn run<F>(
    py: pyo3::Python<'_>,
    rt: &tokio::runtime::Handle,
    fut: F,
    interruptible: bool,
) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    // First on this thread, with the GIL released: an uncontended call does its socket I/O
    // here and is done without waking any thread (see `redlatch::blocking::poll_here`).
    let mut fut = Box::pin(fut);
    let first = py.detach(|| {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            redlatch::blocking::poll_here(fut.as_mut(), rt)
        }))
    });
    match first {
        _ if called_by_a_daemon_at_exit() => park_for_exit(py),
        Ok(Poll::Ready(out)) => return Ok(out),
        Ok(Poll::Pending) => {}
        // The runtime was shut down under this call (tokio panics on its timers then): the
        // interpreter is exiting, and this is the thread running the exit hooks.
        Err(_) if exiting() => return Err(exit_error()),
        Err(panic) => std::panic::resume_unwind(panic),
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let task = rt.spawn(async move {
        // The receiver is gone only when the caller gave up (Ctrl-C): the output is dropped.
        let _ = tx.send(fut.await);
    });
    let mut rx = rx;
    loop {
        // The receiver moves into the GIL-free closure and back (it is Send, not Sync).
        let (step, back) = py.detach(move || {
            let step = if interruptible {
                rx.recv_timeout(SIGNAL_SLICE)
            } else {
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            (step, rx)
        });
        rx = back;
        if called_by_a_daemon_at_exit() {
            park_for_exit(py);
        }
        match step {
            Ok(out) => return Ok(out),
            // The task ended without sending: `shutdown_runtime` dropped it (a daemon thread
            // parked above) or the task panicked (a bug). Either way the outcome is unknown,
            // as after a lost connection.
            Err(RecvTimeoutError::Disconnected) => {
                if exiting() {
                    return Err(exit_error());
                }
                return Err(crate::errors::to_py(redlatch::Error::connection(
                    "the call could not finish: its task failed",
                )));
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    // Until the worker dropped the future (the channel's sender goes with it):
                    // its drop hands the undo to the background clean-up, which the exit hook
                    // waits for. Without this, Ctrl-C then `sys.exit` could stop the runtime
                    // before the drop, leaving a fair waiter's queue entry (a user trial).
                    let _ = py.detach(move || rx.recv_timeout(ABORT_WAIT));
                    return Err(e);
                }
            }
        }
    }
}

/// Runs a wait that may be long (an acquire) and that Ctrl-C can interrupt; see [`run`].
pub(crate) fn block_interruptible<F>(
    py: pyo3::Python<'_>,
    rt: &tokio::runtime::Handle,
    fut: F,
) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    run(py, rt, fut, true)
}

/// Runs a short, bounded `fut` (a round trip plus its timeout); see [`run`].
pub(crate) fn block<F>(py: pyo3::Python<'_>, rt: &tokio::runtime::Handle, fut: F) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    run(py, rt, fut, false)
}
