//! The blocking lock handles: [`Lock`] (lease, reentrant, fair, read and write), its
//! [`Guard`], and [`RwLock`]; each call runs as the parent module describes.

use super::{run, OwnedRuntime};
use crate::error::Result;
use crate::origin::inherited_hold;
use std::sync::Arc;
use std::time::Duration;

/// A blocking read/write lock handle (see [`crate::RwLock`]).
#[derive(Clone, Debug)]
pub struct RwLock {
    pub(super) inner: crate::RwLock,
    pub(super) runtime: Arc<OwnedRuntime>,
}

impl RwLock {
    /// See [`crate::RwLock::owner`].
    pub fn owner(self, owner: u64) -> RwLock {
        RwLock {
            inner: self.inner.owner(owner),
            ..self
        }
    }

    /// The read side (see [`crate::RwLock::read`]).
    pub fn read(&self) -> Lock {
        Lock {
            inner: self.inner.read(),
            runtime: self.runtime.clone(),
        }
    }

    /// The write side (see [`crate::RwLock::write`]).
    pub fn write(&self) -> Lock {
        Lock {
            inner: self.inner.write(),
            runtime: self.runtime.clone(),
        }
    }

    /// See [`crate::RwLock::name`].
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// See [`crate::RwLock::owner_id`].
    pub fn owner_id(&self) -> String {
        self.inner.owner_id()
    }

    /// The async handle inside.
    pub fn as_async(&self) -> &crate::RwLock {
        &self.inner
    }
}

/// A blocking lock handle (see [`crate::Lock`]).
#[derive(Clone, Debug)]
pub struct Lock {
    pub(super) inner: crate::Lock,
    pub(super) runtime: Arc<OwnedRuntime>,
}

impl Lock {
    /// See [`crate::Lock::lease`].
    pub fn lease(self, lease: Duration) -> Lock {
        Lock {
            inner: self.inner.lease(lease),
            ..self
        }
    }

    /// See [`crate::Lock::wait`].
    pub fn wait(self, wait: Duration) -> Lock {
        Lock {
            inner: self.inner.wait(wait),
            ..self
        }
    }

    /// See [`crate::Lock::fenced`].
    pub fn fenced(self) -> Lock {
        Lock {
            inner: self.inner.fenced(),
            ..self
        }
    }

    /// See [`crate::Lock::fence_ttl`].
    pub fn fence_ttl(self, ttl: Duration) -> Lock {
        Lock {
            inner: self.inner.fence_ttl(ttl),
            ..self
        }
    }

    /// See [`crate::Lock::owner`].
    pub fn owner(self, owner: u64) -> Lock {
        Lock {
            inner: self.inner.owner(owner),
            ..self
        }
    }

    /// See [`crate::Lock::kind`].
    pub fn kind(&self) -> crate::LockKind {
        self.inner.kind()
    }

    /// See [`crate::Lock::name`].
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The async lock inside.
    pub fn as_async(&self) -> &crate::Lock {
        &self.inner
    }

    /// Blocks until acquired or the wait runs out (see [`crate::Lock::acquire`]).
    ///
    /// # Errors
    /// As [`crate::Lock::acquire`].
    pub fn acquire(&self) -> Result<Guard> {
        let lock = self.inner.clone();
        let guard = run(&self.runtime, async move { lock.acquire().await })?;
        Ok(Guard {
            inner: Arc::new(guard),
            runtime: self.runtime.clone(),
        })
    }

    /// Like [`Self::acquire`] with an explicit wait (`None` = forever).
    ///
    /// # Errors
    /// As [`crate::Lock::acquire`].
    pub fn acquire_with_wait(&self, wait: Option<Duration>) -> Result<Guard> {
        let lock = self.inner.clone();
        let guard = run(&self.runtime, async move { lock.acquire_with_wait(wait).await })?;
        Ok(Guard {
            inner: Arc::new(guard),
            runtime: self.runtime.clone(),
        })
    }

    /// One attempt (see [`crate::Lock::try_acquire`]).
    ///
    /// # Errors
    /// As [`crate::Lock::try_acquire`].
    pub fn try_acquire(&self) -> Result<Option<Guard>> {
        let lock = self.inner.clone();
        let guard = run(&self.runtime, async move { lock.try_acquire().await })?;
        Ok(guard.map(|g| Guard {
            inner: Arc::new(g),
            runtime: self.runtime.clone(),
        }))
    }

    /// See [`crate::Lock::locked`].
    ///
    /// # Errors
    /// As [`crate::Lock::locked`].
    pub fn locked(&self) -> Result<bool> {
        let lock = self.inner.clone();
        run(&self.runtime, async move { lock.locked().await })
    }

    /// See [`crate::Lock::ttl`].
    ///
    /// # Errors
    /// As [`crate::Lock::ttl`].
    pub fn ttl(&self) -> Result<Option<Duration>> {
        let lock = self.inner.clone();
        run(&self.runtime, async move { lock.ttl().await })
    }

    /// See [`crate::Lock::hold_count`].
    ///
    /// # Errors
    /// As [`crate::Lock::hold_count`].
    pub fn hold_count(&self) -> Result<u64> {
        let lock = self.inner.clone();
        run(&self.runtime, async move { lock.hold_count().await })
    }
}

/// A blocking guard (see [`crate::Guard`]). Dropping it releases in the background.
#[derive(Debug)]
pub struct Guard {
    /// Shared with the task of a call in progress (see [`run`]); the last one dropped
    /// releases in the background.
    inner: Arc<crate::Guard>,
    runtime: Arc<OwnedRuntime>,
}

impl Guard {
    fn guard(&self) -> &crate::Guard {
        &self.inner
    }

    /// See [`crate::Guard::name`].
    pub fn name(&self) -> &str {
        self.guard().name()
    }

    /// See [`crate::Guard::fencing_token`].
    pub fn fencing_token(&self) -> Option<u64> {
        self.guard().fencing_token()
    }

    /// See [`crate::Guard::is_lost`].
    pub fn is_lost(&self) -> bool {
        self.guard().is_lost()
    }

    /// See [`crate::Guard::extend`].
    ///
    /// # Errors
    /// As [`crate::Guard::extend`].
    pub fn extend(&self, lease: Duration) -> Result<()> {
        if self.inner.is_inherited() {
            return Err(inherited_hold("extend", self.name()));
        }
        let guard = self.inner.clone();
        run(&self.runtime, async move { guard.extend(lease).await })
    }

    /// See [`crate::Guard::owned`].
    ///
    /// # Errors
    /// As [`crate::Guard::owned`].
    pub fn owned(&self) -> Result<bool> {
        if self.inner.is_inherited() {
            return Ok(false);
        }
        let guard = self.inner.clone();
        run(&self.runtime, async move { guard.owned().await })
    }

    /// Releases the hold, at most once; after an unknown outcome the guard stays held and
    /// `release` may be called again (see [`crate::Guard::release`]).
    ///
    /// # Errors
    /// As [`crate::Guard::release`].
    pub fn release(&self) -> Result<()> {
        if self.inner.is_inherited() {
            return Err(inherited_hold("release", self.name()));
        }
        let guard = self.inner.clone();
        run(&self.runtime, async move { guard.release().await })
    }

    /// See [`crate::Guard::release_final`]: a release for clean-up paths that cannot call
    /// again; an unknown outcome goes on in the background.
    ///
    /// # Errors
    /// As [`crate::Guard::release`].
    pub fn release_final(&self) -> Result<()> {
        if self.inner.is_inherited() {
            return Err(inherited_hold("release", self.name()));
        }
        let guard = self.inner.clone();
        run(&self.runtime, async move { guard.release_final().await })
    }

    /// Releases every one of `guards` as [`release_final`](Self::release_final) does, all at
    /// once, so a Redis that does not answer costs one network timeout in all, not one per
    /// hold (a C trial of stop 49: freeing a handle with three holds took 9 s with a 3 s
    /// network timeout). One result per guard, in order. The guards may belong to different
    /// clients; the first one's runtime drives them.
    pub fn release_all_final<'a>(guards: impl IntoIterator<Item = &'a Guard>) -> Vec<Result<()>> {
        let guards: Vec<&Guard> = guards.into_iter().collect();
        let Some(runtime) = guards.first().map(|g| g.runtime.clone()) else {
            return Vec::new();
        };
        let count = guards.len();
        let inners: Vec<Arc<crate::Guard>> = guards.iter().map(|g| g.inner.clone()).collect();
        let released = run(&runtime, async move {
            let releases = inners.iter().map(|g| async move {
                if g.is_inherited() {
                    return Err(inherited_hold("release", g.name()));
                }
                g.release_final().await
            });
            Ok(futures::future::join_all(releases).await)
        });
        released.unwrap_or_else(|e| (0..count).map(|_| Err(e.clone())).collect())
    }

    /// See [`crate::Guard::is_closed`].
    pub fn is_closed(&self) -> bool {
        self.guard().is_closed()
    }

    /// See [`crate::Guard::is_held`].
    pub fn is_held(&self) -> bool {
        self.guard().is_held()
    }

    /// See [`crate::Guard::lost_reason`].
    pub fn lost_reason(&self) -> Option<crate::Reason> {
        self.guard().lost_reason()
    }

    /// Calls `callback` on a runtime thread if the hold is lost (never after a release).
    /// The callback must not block for long.
    pub fn on_lost(&self, callback: impl FnOnce() + Send + 'static) {
        if self.inner.is_inherited() {
            return;
        }
        let ended = self.guard().ended();
        self.runtime.spawn(async move {
            if ended.await {
                callback();
            }
        });
    }

    /// The async guard inside.
    pub fn as_async(&self) -> &crate::Guard {
        self.guard()
    }
}
