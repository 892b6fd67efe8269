//! [`TokioRuntime`]: the driver's clock, sleep and spawn on tokio.

use crate::driver::{process_clock, BoxFut, Runtime};
use std::time::Duration;

/// Tokio-backed [`Runtime`]. Holds a runtime handle, so guards dropped outside any tokio
/// context (a plain thread, a C caller) can still release in the background.
#[derive(Debug, Clone)]
pub struct TokioRuntime {
    handle: tokio::runtime::Handle,
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
        TokioRuntime { handle }
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
}
