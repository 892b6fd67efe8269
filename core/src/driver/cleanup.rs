//! Background clean-up in flight, counted process-wide: the undo of an acquire abandoned or of
//! unknown outcome (a fair waiter leaving its queue, a permit given back), and the release of
//! a hold dropped without release. A program that exits right after such a drop (Ctrl-C during
//! a wait, then `sys.exit`) would otherwise stop the runtime with the clean-up still queued: a
//! fair queue kept the dead waiter's entry until its deadline (5 minutes by default), and no
//! one could take the free lock meanwhile (a user trial). Bindings that stop their runtime at
//! exit wait for it first, bounded ([`wait_for_background_cleanup`]).

use super::transport::Runtime;
use super::{BoxFut, Engine};
use crate::error::{Error, Result};
#[cfg(not(target_arch = "wasm32"))]
pub use counted::wait_for_background_cleanup;
use std::future::Future;

/// Spawns `task` on `runtime`, counted as clean-up in flight until it ends (not on wasm, which
/// has no process to exit and no process id).
pub(crate) fn spawn(runtime: &dyn Runtime, task: BoxFut<'static, ()>) {
    #[cfg(target_arch = "wasm32")]
    runtime.spawn(task);
    #[cfg(not(target_arch = "wasm32"))]
    {
        let counted = counted::Counted::new();
        runtime.spawn(Box::pin(async move {
            task.await;
            drop(counted);
        }));
    }
}

/// How a clean-up tried by [`retry`] ended.
pub(crate) enum Retried<T> {
    /// The last try's result: a success, or an error not worth another try.
    Answered(Result<T>),
    /// Stopped before another try (the client closed, or a try could no longer help); the
    /// last try's error.
    GaveUp(Error),
}

/// Tries `attempt` until it is answered, for a clean-up in the background (a release, an
/// undo): after an error that `retryable` accepts, waits the client's back-off
/// ([`Engine::pause_before_retry`]), then tries again while the client is open and
/// `still_useful()` holds, checked right before each new try (the life of the latch that
/// makes the retry exact, a lease that still runs). `failed_with`: the error of a first try
/// the caller made itself (the next try then waits the back-off first). The one retry loop
/// of such clean-ups.
pub(crate) async fn retry<T, F, Fut>(
    engine: &Engine,
    failed_with: Option<Error>,
    mut attempt: F,
    retryable: impl Fn(&Error) -> bool,
    still_useful: impl Fn() -> bool,
) -> Retried<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut error = match failed_with {
        Some(e) => e,
        None => match attempt().await {
            Ok(answer) => return Retried::Answered(Ok(answer)),
            Err(e) => e,
        },
    };
    let mut failures = 0;
    loop {
        if !retryable(&error) || engine.registry.is_closed() {
            return Retried::Answered(Err(error));
        }
        engine.pause_before_retry(failures).await;
        failures += 1;
        if engine.registry.is_closed() || !still_useful() {
            return Retried::GaveUp(error);
        }
        match attempt().await {
            Ok(answer) => return Retried::Answered(Ok(answer)),
            Err(e) => error = e,
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod counted {
    use event_listener::{Event, Listener};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// The clean-ups in flight, with the process they belong to: a forked child inherits the
    /// parent's count but none of its tasks, and starts again from zero.
    static PENDING: Mutex<(u32, usize)> = Mutex::new((0, 0));
    static SETTLED: Event = Event::new();

    fn pending() -> std::sync::MutexGuard<'static, (u32, usize)> {
        PENDING.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This process's clean-ups in flight.
    fn in_flight() -> usize {
        let (pid, count) = *pending();
        if pid == std::process::id() {
            count
        } else {
            0
        }
    }

    /// Counts one clean-up from its spawn until it ends or is dropped (a runtime shut down).
    pub(super) struct Counted;

    impl Counted {
        pub(super) fn new() -> Counted {
            let mut p = pending();
            let pid = std::process::id();
            if p.0 != pid {
                *p = (pid, 0);
            }
            p.1 += 1;
            Counted
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            let mut p = pending();
            if p.0 == std::process::id() {
                p.1 = p.1.saturating_sub(1);
                if p.1 == 0 {
                    // Only when someone waits: a first `notify` allocates the event's state,
                    // which a static then keeps for the process's life (valgrind: "possibly
                    // lost" in the C suite).
                    crate::driver::signal::wake_all(&SETTLED);
                }
            }
        }
    }

    /// Blocks the calling thread until no background clean-up of this process is in flight,
    /// or `timeout` passed; `true` when none is left. For a binding's exit hook, called before
    /// it stops its runtime (off that runtime's threads, which run the clean-up). Each
    /// clean-up is bounded by its client's network timeout per try; a release retried against
    /// a node that does not answer may outlast `timeout`, and its lock then expires with its
    /// lease.
    pub fn wait_for_background_cleanup(timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let listener = SETTLED.listen();
            if in_flight() == 0 {
                return true;
            }
            if listener.wait_deadline(deadline).is_none() {
                return in_flight() == 0;
            }
        }
    }
}
