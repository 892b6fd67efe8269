//! [`TokioRuntime`]: the driver's clock, sleep and spawn on tokio.

use crate::driver::{process_clock, BoxFut, Runtime};
use crate::error::{Error, Result};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Tokio-backed [`Runtime`]. Holds a runtime handle, so guards dropped outside any tokio
/// context (a plain thread, a C caller) can still release in the background.
///
/// A client lives on the runtime it was connected on (its connections' tasks, its watchdog
/// and background releases run there). Once that runtime is shut down (a `#[tokio::test]`
/// ended, and a `static` client is used by the next one), every call fails at once with a
/// permanent `Connection` error saying so, instead of panicking inside tokio: make a client
/// per runtime, or connect it on a runtime that outlives its uses (`ClientBuilder::runtime`).
#[derive(Debug, Clone)]
pub struct TokioRuntime {
    handle: tokio::runtime::Handle,
    /// Dead once the runtime dropped its tasks (it was shut down): see [`Self::with_handle`].
    alive: Weak<()>,
    /// Dropped with the last clone, which ends the probe task (see [`Self::with_handle`]).
    _probe_stop: Arc<futures::channel::oneshot::Sender<()>>,
}

impl TokioRuntime {
    /// Uses the tokio runtime of the calling context.
    ///
    /// # Panics
    /// Outside a tokio runtime (use [`TokioRuntime::with_handle`] there).
    pub fn current() -> Self {
        Self::with_handle(tokio::runtime::Handle::current())
    }

    /// Uses the runtime behind `handle`.
    pub fn with_handle(handle: tokio::runtime::Handle) -> Self {
        // A task holds `alive` while this runtime value (or a clone) lives: a runtime drops its
        // tasks when it shuts down, which tokio has no other public way to tell (its timers
        // then panic). It ends with the last clone: it never ended before stop 49, one task
        // left behind per client (a Rust user trial: 10,500 clients made and dropped, 10,501
        // tasks alive).
        let alive = Arc::new(());
        let probe = Arc::downgrade(&alive);
        let (stop, stopped) = futures::channel::oneshot::channel::<()>();
        drop(handle.spawn(async move {
            let _alive = alive;
            let _ = stopped.await;
        }));
        TokioRuntime {
            handle,
            alive: probe,
            _probe_stop: Arc::new(stop),
        }
    }
}

impl Runtime for TokioRuntime {
    fn now(&self) -> Duration {
        process_clock()
    }

    fn sleep(&self, duration: Duration) -> BoxFut<'static, ()> {
        if self.is_shut_down() {
            return sleep_without(duration);
        }
        // Entering the handle lets a sleep be created from a thread outside the runtime.
        let _guard = self.handle.enter();
        Box::pin(tokio::time::sleep(duration))
    }

    fn spawn(&self, task: BoxFut<'static, ()>) {
        self.handle.spawn(task);
    }

    fn is_shut_down(&self) -> bool {
        self.alive.strong_count() == 0
    }
}

/// A sleep for a client whose runtime was shut down, whose timers panic: a hold's loss awaited
/// from another runtime (`Guard::lost`) still resolves at the hold's deadline (a Rust user
/// trial of stop 45 met the panic). On the calling context's runtime if there is one, else on
/// a thread of its own.
fn sleep_without(duration: Duration) -> BoxFut<'static, ()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Box::pin(tokio::time::sleep(duration));
    }
    let (done, slept) = futures::channel::oneshot::channel::<()>();
    std::thread::spawn(move || {
        std::thread::sleep(duration);
        let _ = done.send(());
    });
    Box::pin(async move {
        let _ = slept.await;
    })
}

/// The environment variable that sets the worker threads of the runtimes the bindings build
/// (Python's, the Node addon's, the blocking API's and so the C binding's).
pub const WORKER_THREADS_VAR: &str = "REDLATCH_WORKER_THREADS";

/// The number of worker threads for a runtime a binding builds itself:
/// `REDLATCH_WORKER_THREADS`, a whole number from 1 to 16, else 1 when unset or empty. One by
/// default: lock traffic is light and I/O-bound, and with more workers a call's task, its
/// connection's task and the timers hop between threads (about 15 % slower sequential pairs
/// on our bench, issue 15).
///
/// # Errors
/// `InvalidArgument` naming the variable and its value when it is set to anything else (it
/// was clamped or ignored in silence before stop 38).
pub fn worker_threads_from_env() -> Result<usize> {
    parse_worker_threads(std::env::var_os(WORKER_THREADS_VAR).as_deref())
}

fn parse_worker_threads(value: Option<&std::ffi::OsStr>) -> Result<usize> {
    let text = value.map(|v| v.to_string_lossy()).unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(1);
    }
    match text.trim().parse::<usize>() {
        Ok(n @ 1..=16) => Ok(n),
        _ => Err(Error::invalid(format!(
            "{WORKER_THREADS_VAR} must be a whole number from 1 to 16 (got {text:?})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_task_ends_with_the_last_clone_and_tells_a_shut_down() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let settle = |rt: &tokio::runtime::Runtime| {
            rt.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await })
        };
        settle(&rt);
        let before = rt.metrics().num_alive_tasks();
        for _ in 0..10 {
            let runtime = TokioRuntime::with_handle(rt.handle().clone());
            let clone = runtime.clone();
            drop(runtime);
            settle(&rt);
            assert!(!clone.is_shut_down(), "alive while a clone lives");
        }
        settle(&rt);
        assert_eq!(rt.metrics().num_alive_tasks(), before, "no task left behind");
        let kept = TokioRuntime::with_handle(rt.handle().clone());
        drop(rt);
        assert!(kept.is_shut_down(), "the runtime's shut-down is seen");
    }

    #[test]
    fn worker_threads_are_1_to_16_or_refused() {
        for (value, expected) in [(None, 1), (Some(""), 1), (Some("4"), 4), (Some(" 16 "), 16)] {
            let got = parse_worker_threads(value.map(std::ffi::OsStr::new));
            assert_eq!(got.unwrap(), expected, "{value:?}");
        }
        for value in ["0", "17", "-1", "two", "1.5"] {
            let e = parse_worker_threads(Some(std::ffi::OsStr::new(value))).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{value:?}");
            assert!(e.message().contains(WORKER_THREADS_VAR), "{e}");
            assert!(e.message().contains(value), "{e}");
        }
    }
}
