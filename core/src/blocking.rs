//! The same API without async, for synchronous Rust, the C ABI and sync Python.
//!
//! A [`Client`] owns a small multi-thread tokio runtime (2 worker threads) that runs the
//! network I/O, the watchdog and background releases; each call blocks the calling thread on
//! it. Do not call these from inside an async runtime (tokio forbids nested `block_on`);
//! dropping them there is fine.
//!
//! A guard dropped without [`Guard::release`] is released by a task on that runtime, which
//! stops when the last client, lock or guard sharing it is dropped: a guard dropped just
//! before its client may then stay in Redis until its lease runs out. Release explicitly
//! before dropping the client.

use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;

/// A blocking client. Cheap to clone; clones share the runtime and connections.
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
    runtime: Arc<OwnedRuntime>,
}

/// The runtime a blocking client and its locks and guards share. Dropping the last of them
/// inside an async context, where tokio forbids the blocking shutdown of a runtime (it
/// panics), shuts it down in the background instead.
#[derive(Debug)]
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

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

fn new_runtime() -> Result<OwnedRuntime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("redlatch")
        .enable_all()
        .build()
        .map(|runtime| OwnedRuntime(Some(runtime)))
        .map_err(|e| crate::Error::new(crate::ErrorKind::Panic, format!("cannot start the runtime: {e}")))
}

impl Client {
    /// Connects to one node (see [`crate::Client::connect`]).
    ///
    /// # Errors
    /// As [`crate::Client::connect`].
    pub fn connect(url: &str) -> Result<Client> {
        Self::from_builder(crate::Client::builder(url))
    }

    /// Connects to a quorum of independent nodes (see [`crate::Client::quorum`]).
    ///
    /// # Errors
    /// As [`crate::Client::quorum`].
    pub fn quorum<S: AsRef<str>>(urls: &[S]) -> Result<Client> {
        Self::from_builder(crate::Client::quorum_builder(urls))
    }

    /// Connects with a configured builder; the builder's runtime is replaced by this client's.
    ///
    /// # Errors
    /// As [`crate::ClientBuilder::connect`].
    pub fn from_builder(builder: crate::ClientBuilder) -> Result<Client> {
        let runtime = Arc::new(new_runtime()?);
        let inner = runtime.block_on(builder.runtime(runtime.handle().clone()).connect())?;
        Ok(Client { inner, runtime })
    }

    /// A lease lock (see [`crate::Client::lock`]).
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock {
            inner: self.inner.lock(name),
            runtime: self.runtime.clone(),
        }
    }

    /// A reentrant lock; this handle is one owner (see [`crate::Client::rlock`]).
    pub fn rlock(&self, name: impl Into<String>) -> Lock {
        Lock {
            inner: self.inner.rlock(name),
            runtime: self.runtime.clone(),
        }
    }

    /// Admin delete of a lock whatever its owner (see [`crate::Client::force_unlock`]).
    ///
    /// # Errors
    /// As [`crate::Client::force_unlock`].
    pub fn force_unlock(&self, name: &str) -> Result<bool> {
        self.runtime.block_on(self.inner.force_unlock(name))
    }

    /// The async client inside.
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    /// The runtime that runs this client's I/O.
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
}

/// A blocking lock handle (see [`crate::Lock`]).
#[derive(Clone, Debug)]
pub struct Lock {
    inner: crate::Lock,
    runtime: Arc<OwnedRuntime>,
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

    /// The async lock inside.
    pub fn as_async(&self) -> &crate::Lock {
        &self.inner
    }

    /// Blocks until acquired or the wait runs out (see [`crate::Lock::acquire`]).
    ///
    /// # Errors
    /// As [`crate::Lock::acquire`].
    pub fn acquire(&self) -> Result<Guard> {
        let guard = self.runtime.block_on(self.inner.acquire())?;
        Ok(Guard {
            inner: guard,
            runtime: self.runtime.clone(),
        })
    }

    /// Like [`Self::acquire`] with an explicit wait (`None` = forever).
    ///
    /// # Errors
    /// As [`crate::Lock::acquire`].
    pub fn acquire_with_wait(&self, wait: Option<Duration>) -> Result<Guard> {
        let guard = self.runtime.block_on(self.inner.acquire_with_wait(wait))?;
        Ok(Guard {
            inner: guard,
            runtime: self.runtime.clone(),
        })
    }

    /// One attempt (see [`crate::Lock::try_acquire`]).
    ///
    /// # Errors
    /// As [`crate::Lock::try_acquire`].
    pub fn try_acquire(&self) -> Result<Option<Guard>> {
        let guard = self.runtime.block_on(self.inner.try_acquire())?;
        Ok(guard.map(|g| Guard {
            inner: g,
            runtime: self.runtime.clone(),
        }))
    }

    /// See [`crate::Lock::locked`].
    ///
    /// # Errors
    /// As [`crate::Lock::locked`].
    pub fn locked(&self) -> Result<bool> {
        self.runtime.block_on(self.inner.locked())
    }

    /// See [`crate::Lock::ttl`].
    ///
    /// # Errors
    /// As [`crate::Lock::ttl`].
    pub fn ttl(&self) -> Result<Option<Duration>> {
        self.runtime.block_on(self.inner.ttl())
    }

    /// See [`crate::Lock::hold_count`].
    ///
    /// # Errors
    /// As [`crate::Lock::hold_count`].
    pub fn hold_count(&self) -> Result<u64> {
        self.runtime.block_on(self.inner.hold_count())
    }
}

/// A blocking guard (see [`crate::Guard`]). Dropping it releases in the background.
#[derive(Debug)]
pub struct Guard {
    inner: crate::Guard,
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
        self.runtime.block_on(self.guard().extend(lease))
    }

    /// See [`crate::Guard::owned`].
    ///
    /// # Errors
    /// As [`crate::Guard::owned`].
    pub fn owned(&self) -> Result<bool> {
        self.runtime.block_on(self.guard().owned())
    }

    /// Releases the hold, at most once; after an unknown outcome the guard stays held and
    /// `release` may be called again (see [`crate::Guard::release`]).
    ///
    /// # Errors
    /// As [`crate::Guard::release`].
    pub fn release(&self) -> Result<()> {
        self.runtime.block_on(self.guard().release())
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
