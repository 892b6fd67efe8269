//! [`TokioRuntime`]: the driver's clock, sleep and spawn on tokio.

use crate::driver::{process_clock, BoxFut, Runtime};
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
        // A task that never ends holds `alive`: a runtime drops its tasks when it shuts down,
        // which tokio has no other public way to tell (its timers then panic).
        let alive = Arc::new(());
        let probe = Arc::downgrade(&alive);
        drop(handle.spawn(async move {
            let _alive = alive;
            std::future::pending::<()>().await
        }));
        TokioRuntime { handle, alive: probe }
    }
}

impl Runtime for TokioRuntime {
    fn now(&self) -> Duration {
        process_clock()
    }

    fn sleep(&self, duration: Duration) -> BoxFut<'static, ()> {
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
