//! Blocking twin of the multi-lock (same names, same errors; each call runs as a task on the
//! client's runtime, see the parent module).

use super::{run, run_hold, Client, Lock, OwnedRuntime};
use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;

impl Client {
    /// A multi-lock over `locks` of this client (see [`crate::Client::multi_lock`]).
    ///
    /// # Errors
    /// As [`crate::Client::multi_lock`].
    pub fn multi_lock(&self, locks: Vec<Lock>) -> Result<MultiLock> {
        let inner = self
            .inner
            .multi_lock(locks.into_iter().map(|l| l.inner).collect())?;
        Ok(MultiLock {
            inner,
            runtime: self.runtime.clone(),
        })
    }

    /// A multi-lock over lease locks by name (see [`crate::Client::multi_lock_names`]).
    ///
    /// # Errors
    /// As [`crate::Client::multi_lock`].
    pub fn multi_lock_names<I, S>(&self, names: I) -> Result<MultiLock>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Ok(MultiLock {
            inner: self.inner.multi_lock_names(names)?,
            runtime: self.runtime.clone(),
        })
    }
}

/// A blocking multi-lock (see [`crate::MultiLock`]).
#[derive(Clone, Debug)]
pub struct MultiLock {
    inner: crate::MultiLock,
    runtime: Arc<OwnedRuntime>,
}

/// A blocking multi-guard (see [`crate::MultiGuard`]). Dropping it releases in the background.
#[derive(Debug)]
pub struct MultiGuard {
    inner: Arc<crate::MultiGuard>,
    runtime: Arc<OwnedRuntime>,
}

impl MultiLock {
    /// See [`crate::MultiLock::lease`].
    pub fn lease(self, lease: Duration) -> MultiLock {
        MultiLock {
            inner: self.inner.lease(lease),
            ..self
        }
    }

    /// See [`crate::MultiLock::wait`].
    pub fn wait(self, wait: Duration) -> MultiLock {
        MultiLock {
            inner: self.inner.wait(wait),
            ..self
        }
    }

    /// See [`crate::MultiLock::names`].
    pub fn names(&self) -> Vec<&str> {
        self.inner.names()
    }

    fn guard(&self, guard: crate::MultiGuard) -> MultiGuard {
        MultiGuard {
            inner: Arc::new(guard),
            runtime: self.runtime.clone(),
        }
    }

    /// Blocks until every member is taken or the wait runs out (see
    /// [`crate::MultiLock::acquire`]).
    ///
    /// # Errors
    /// As [`crate::MultiLock::acquire`].
    pub fn acquire(&self) -> Result<MultiGuard> {
        let m = self.inner.clone();
        let guard = run(&self.runtime, async move { m.acquire().await })?;
        Ok(self.guard(guard))
    }

    /// See [`crate::MultiLock::acquire_with_wait`].
    ///
    /// # Errors
    /// As [`crate::MultiLock::acquire`].
    pub fn acquire_with_wait(&self, wait: Option<Duration>) -> Result<MultiGuard> {
        let m = self.inner.clone();
        let guard = run(&self.runtime, async move { m.acquire_with_wait(wait).await })?;
        Ok(self.guard(guard))
    }

    /// See [`crate::MultiLock::try_acquire`].
    ///
    /// # Errors
    /// As [`crate::MultiLock::try_acquire`].
    pub fn try_acquire(&self) -> Result<Option<MultiGuard>> {
        let m = self.inner.clone();
        let guard = run(&self.runtime, async move { m.try_acquire().await })?;
        Ok(guard.map(|g| self.guard(g)))
    }

    /// The async multi-lock inside.
    pub fn as_async(&self) -> &crate::MultiLock {
        &self.inner
    }
}

impl MultiGuard {
    /// See [`crate::MultiGuard::names`].
    pub fn names(&self) -> Vec<&str> {
        self.inner.names()
    }

    /// See [`crate::MultiGuard::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.inner.is_lost()
    }

    /// See [`crate::MultiGuard::release`].
    ///
    /// # Errors
    /// As [`crate::MultiGuard::release`].
    pub fn release(&self) -> Result<()> {
        let g = self.inner.clone();
        run_hold(&self.runtime, async move { g.release().await })
    }

    /// The async multi-guard inside.
    pub fn as_async(&self) -> &crate::MultiGuard {
        &self.inner
    }
}
