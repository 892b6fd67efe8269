//! Blocking twins of the semaphores and the count-down latch (same names, same errors; each
//! call runs as a task on the client's runtime, see the parent module). The multi-lock is
//! [`super::MultiLock`].

use super::{run, run_hold, Client, OwnedRuntime};
use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;

impl Client {
    /// A semaphore (see [`crate::Client::semaphore`]).
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        Semaphore {
            inner: self.inner.semaphore(name),
            runtime: self.runtime.clone(),
        }
    }

    /// A permit-expirable semaphore (see [`crate::Client::permit_semaphore`]).
    pub fn permit_semaphore(&self, name: impl Into<String>) -> PermitSemaphore {
        PermitSemaphore {
            inner: self.inner.permit_semaphore(name),
            runtime: self.runtime.clone(),
        }
    }

    /// A count-down latch (see [`crate::Client::count_down_latch`]).
    pub fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch {
            inner: self.inner.count_down_latch(name),
            runtime: self.runtime.clone(),
        }
    }
}

/// A blocking semaphore (see [`crate::Semaphore`]; clones share the held count).
#[derive(Clone, Debug)]
pub struct Semaphore {
    inner: crate::Semaphore,
    runtime: Arc<OwnedRuntime>,
}

impl Semaphore {
    /// See [`crate::Semaphore::wait`].
    pub fn wait(self, wait: Duration) -> Semaphore {
        Semaphore {
            inner: self.inner.wait(wait),
            ..self
        }
    }

    /// See [`crate::Semaphore::initial_permits`].
    pub fn initial_permits(self, permits: u64) -> Semaphore {
        Semaphore {
            inner: self.inner.initial_permits(permits),
            ..self
        }
    }

    /// See [`crate::Semaphore::name`].
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// See [`crate::Semaphore::held`].
    pub fn held(&self) -> u64 {
        self.inner.held()
    }

    /// See [`crate::Semaphore::try_set_permits`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::try_set_permits`].
    pub fn try_set_permits(&self, permits: u64) -> Result<bool> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.try_set_permits(permits).await })
    }

    /// Blocks until `permits` are acquired or the wait runs out (see [`crate::Semaphore::acquire`]).
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire`].
    pub fn acquire(&self, permits: u64) -> Result<()> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.acquire(permits).await })
    }

    /// See [`crate::Semaphore::acquire_with_wait`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::acquire`].
    pub fn acquire_with_wait(&self, permits: u64, wait: Option<Duration>) -> Result<()> {
        let s = self.inner.clone();
        run(
            &self.runtime,
            async move { s.acquire_with_wait(permits, wait).await },
        )
    }

    /// See [`crate::Semaphore::try_acquire`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::try_acquire`].
    pub fn try_acquire(&self, permits: u64) -> Result<bool> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.try_acquire(permits).await })
    }

    /// See [`crate::Semaphore::release`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::release`].
    pub fn release(&self, permits: u64) -> Result<()> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.release(permits).await })
    }

    /// See [`crate::Semaphore::release_final`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::release_final`].
    pub fn release_final(&self, permits: u64) -> Result<()> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.release_final(permits).await })
    }

    /// See [`crate::Semaphore::release_all_final`].
    pub fn release_all_final(&self) {
        let s = self.inner.clone();
        let _ = run(&self.runtime, async move {
            s.release_all_final().await;
            Ok(())
        });
    }

    /// See [`crate::Semaphore::available`].
    ///
    /// # Errors
    /// As [`crate::Semaphore::available`].
    pub fn available(&self) -> Result<u64> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.available().await })
    }

    /// The async semaphore inside.
    pub fn as_async(&self) -> &crate::Semaphore {
        &self.inner
    }
}

/// A blocking permit-expirable semaphore (see [`crate::PermitSemaphore`]).
#[derive(Clone, Debug)]
pub struct PermitSemaphore {
    inner: crate::PermitSemaphore,
    runtime: Arc<OwnedRuntime>,
}

/// A blocking permit (see [`crate::Permit`]). Dropping it releases in the background.
#[derive(Debug)]
pub struct Permit {
    inner: Arc<crate::Permit>,
    runtime: Arc<OwnedRuntime>,
}

impl PermitSemaphore {
    /// See [`crate::PermitSemaphore::wait`].
    pub fn wait(self, wait: Duration) -> PermitSemaphore {
        PermitSemaphore {
            inner: self.inner.wait(wait),
            ..self
        }
    }

    /// See [`crate::PermitSemaphore::initial_permits`].
    pub fn initial_permits(self, permits: u64) -> PermitSemaphore {
        PermitSemaphore {
            inner: self.inner.initial_permits(permits),
            ..self
        }
    }

    /// See [`crate::PermitSemaphore::name`].
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    fn permit(&self, permit: crate::Permit) -> Permit {
        Permit {
            inner: Arc::new(permit),
            runtime: self.runtime.clone(),
        }
    }

    /// See [`crate::PermitSemaphore::try_set_permits`].
    ///
    /// # Errors
    /// As [`crate::PermitSemaphore::try_set_permits`].
    pub fn try_set_permits(&self, permits: u64) -> Result<bool> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.try_set_permits(permits).await })
    }

    /// Blocks until a permit is acquired or the wait runs out (see
    /// [`crate::PermitSemaphore::acquire`]).
    ///
    /// # Errors
    /// As [`crate::PermitSemaphore::acquire`].
    pub fn acquire(&self, lease: Option<Duration>) -> Result<Permit> {
        let s = self.inner.clone();
        let permit = run(&self.runtime, async move { s.acquire(lease).await })?;
        Ok(self.permit(permit))
    }

    /// See [`crate::PermitSemaphore::acquire_with_wait`].
    ///
    /// # Errors
    /// As [`crate::PermitSemaphore::acquire`].
    pub fn acquire_with_wait(&self, lease: Option<Duration>, wait: Option<Duration>) -> Result<Permit> {
        let s = self.inner.clone();
        let permit = run(
            &self.runtime,
            async move { s.acquire_with_wait(lease, wait).await },
        )?;
        Ok(self.permit(permit))
    }

    /// See [`crate::PermitSemaphore::try_acquire`].
    ///
    /// # Errors
    /// As [`crate::PermitSemaphore::try_acquire`].
    pub fn try_acquire(&self, lease: Option<Duration>) -> Result<Option<Permit>> {
        let s = self.inner.clone();
        let permit = run(&self.runtime, async move { s.try_acquire(lease).await })?;
        Ok(permit.map(|p| self.permit(p)))
    }

    /// See [`crate::PermitSemaphore::release`].
    ///
    /// # Errors
    /// As [`crate::PermitSemaphore::release`].
    pub fn release(&self, id: &str) -> Result<()> {
        let (s, id) = (self.inner.clone(), id.to_owned());
        run(&self.runtime, async move { s.release(&id).await })
    }

    /// See [`crate::PermitSemaphore::available`].
    ///
    /// # Errors
    /// As [`crate::PermitSemaphore::available`].
    pub fn available(&self) -> Result<u64> {
        let s = self.inner.clone();
        run(&self.runtime, async move { s.available().await })
    }

    /// The async semaphore inside.
    pub fn as_async(&self) -> &crate::PermitSemaphore {
        &self.inner
    }
}

impl Permit {
    /// See [`crate::Permit::id`].
    pub fn id(&self) -> &str {
        self.inner.id()
    }

    /// See [`crate::Permit::lease`].
    pub fn lease(&self) -> Duration {
        self.inner.lease()
    }

    /// See [`crate::Permit::is_renewed`].
    pub fn is_renewed(&self) -> bool {
        self.inner.is_renewed()
    }

    /// See [`crate::Permit::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }

    /// See [`crate::Permit::release`].
    ///
    /// # Errors
    /// As [`crate::Permit::release`].
    pub fn release(&self) -> Result<()> {
        let p = self.inner.clone();
        run_hold(&self.runtime, async move { p.release().await })
    }

    /// The async permit inside.
    pub fn as_async(&self) -> &crate::Permit {
        &self.inner
    }
}

/// A blocking count-down latch (see [`crate::CountDownLatch`]).
#[derive(Clone, Debug)]
pub struct CountDownLatch {
    inner: crate::CountDownLatch,
    runtime: Arc<OwnedRuntime>,
}

impl CountDownLatch {
    /// See [`crate::CountDownLatch::name`].
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// See [`crate::CountDownLatch::try_set_count`].
    ///
    /// # Errors
    /// As [`crate::CountDownLatch::try_set_count`].
    pub fn try_set_count(&self, count: u64) -> Result<bool> {
        let l = self.inner.clone();
        run(&self.runtime, async move { l.try_set_count(count).await })
    }

    /// See [`crate::CountDownLatch::count_down`].
    ///
    /// # Errors
    /// As [`crate::CountDownLatch::count_down`].
    pub fn count_down(&self) -> Result<()> {
        let l = self.inner.clone();
        run(&self.runtime, async move { l.count_down().await })
    }

    /// See [`crate::CountDownLatch::count`].
    ///
    /// # Errors
    /// As [`crate::CountDownLatch::count`].
    pub fn count(&self) -> Result<u64> {
        let l = self.inner.clone();
        run(&self.runtime, async move { l.count().await })
    }

    /// Blocks until the count is zero or `timeout` runs out (see [`crate::CountDownLatch::wait`]).
    ///
    /// # Errors
    /// As [`crate::CountDownLatch::wait`].
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        let l = self.inner.clone();
        run(&self.runtime, async move { l.wait(timeout).await })
    }

    /// The async latch inside.
    pub fn as_async(&self) -> &crate::CountDownLatch {
        &self.inner
    }
}
