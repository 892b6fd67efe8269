//! The runtime a blocking client shares with its locks and guards, and how a call runs on it.

use crate::error::Result;
use std::future::Future;
use std::task::Poll;

/// The runtime a blocking client and its locks and guards share. Dropping the last of them
/// inside an async context, where tokio forbids the blocking shutdown of a runtime (it
/// panics), shuts it down in the background instead.
#[derive(Debug)]
pub(super) struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl std::ops::Deref for OwnedRuntime {
    type Target = tokio::runtime::Runtime;
    fn deref(&self) -> &tokio::runtime::Runtime {
        self.0.as_ref().expect("present until dropped")
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                runtime.shutdown_background();
            }
        }
    }
}

/// One worker: lock traffic is light and I/O-bound, and with two workers a call's task, the
/// connection's task and the timers bounce between them (measured for issue 15: about 10
/// context switches per C acquire + release with two workers and `block_on`, 6-6.5 with one worker
/// and [`run`]).
pub(super) fn new_runtime() -> Result<OwnedRuntime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("redlatch")
        .enable_all()
        .build()
        .map(|runtime| OwnedRuntime(Some(runtime)))
        .map_err(|e| crate::Error::new(crate::ErrorKind::Panic, format!("cannot start the runtime: {e}")))
}

/// Runs `fut` to completion: first polled on the calling thread (see [`super::poll_here`]),
/// which finishes an uncontended call with its socket I/O done here and no thread woken;
/// else the rest runs as a task on `runtime` and the calling thread blocks until it is done.
///
/// Why the rest as a task rather than `runtime.block_on(fut)`: what is left is a wait on
/// pub/sub or a timer, and the I/O after it runs on the worker; polled from the calling thread,
/// every step would cross threads, and the timers a call sets (its network timeout) would be
/// registered from outside the runtime, which wakes the worker to re-arm its deadline. As a
/// task, the call runs next to its I/O and the calling thread is woken once, with the result.
///
/// # Panics
/// Where `block_on` panics (inside an async runtime), and on this thread if the future
/// panicked.
pub(super) fn run<T: Send + 'static>(
    runtime: &OwnedRuntime,
    fut: impl Future<Output = T> + Send + 'static,
) -> T {
    let mut fut = Box::pin(fut);
    if let Poll::Ready(out) = super::poll_here(fut.as_mut(), runtime.handle()) {
        return out;
    }
    match runtime.block_on(runtime.spawn(fut)) {
        Ok(out) => out,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => panic!("redlatch: the runtime stopped during a blocking call"),
    }
}
