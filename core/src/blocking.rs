//! The same API without async, for synchronous Rust, the C ABI and sync Python.
//!
//! A [`Client`] owns a small multi-thread tokio runtime (one worker thread) that runs the
//! watchdog, background releases, pub/sub and waits. Each call first runs on the calling
//! thread, which for a single-node client also does the call's socket I/O itself (see
//! [`poll_here`]); a call that must wait (a held lock, a sleep) goes on as a task on the
//! runtime while the calling thread waits for its result on a condvar (see `run` in the
//! source for why).
//!
//! # Inside an async runtime
//! The calls work from any thread, a tokio runtime's worker included (a `#[tokio::main]`
//! body, a task): the wait is never a nested `block_on`, which tokio refuses, so a call behaves
//! the same whether or not it has to wait. It does block that thread until it returns, so in
//! async code prefer the async API ([`Client::as_async`]) or `tokio::task::spawn_blocking`.
//! The one thread where a call cannot work is one of the client's own runtime (an
//! [`Guard::on_lost`] callback, a task spawned on [`Client::runtime`]): its single worker would
//! wait for itself, so the call fails at once with `WouldDeadlock`. Dropping clients, locks
//! and guards works anywhere.
//!
//! # Fork
//! `fork()` copies memory but not threads: a child inherits the parent's clients and guards,
//! not the runtime threads behind them, and the holds are the parent's (shared/API.md, "Fork").
//! In a forked child of the process that made them:
//! - a [`Guard`], [`Permit`] or [`MultiGuard`] answers `owned()` with `false` and
//!   `release()`/`extend()` with `NotOwned` (reason `never_held`) without touching Redis;
//!   dropping it releases nothing, and the child never renews it (the parent still does);
//! - every other call on the [`Client`] or a handle made from it fails at once with
//!   `InvalidArgument` ("create a new client in the child") instead of waiting for a thread
//!   that does not exist; [`Client::close`] does nothing. A client made in the child works;
//! - dropping them closes nothing (their runtime and connections are left to the child's
//!   exit: the sockets share the parent's epoll instance, and closing them would unregister
//!   them in the parent too).
//!
//! The check is one `getpid` per call (a system call of a few hundred ns; this crate forbids
//! the unsafe code a cached pid would need), next to a Redis round trip of tens of µs.
//!
//! A guard dropped without [`Guard::release`] is released by a task on that runtime, which
//! stops when the last client, lock or guard sharing it is dropped: a guard dropped just
//! before its client may then stay in Redis until its lease runs out. Release explicitly
//! before dropping the client.

mod family;
mod multi;
mod runtime;

pub use crate::native::poll_here;
pub use family::{CountDownLatch, Permit, PermitSemaphore, Semaphore};
pub use multi::{MultiGuard, MultiLock};

use crate::error::Result;
use crate::origin::inherited_hold;
use runtime::{new_runtime, run, run_hold, wait_on, OwnedRuntime};
use std::sync::Arc;
use std::time::Duration;

/// A blocking client. Cheap to clone; clones share the runtime and connections.
#[derive(Clone, Debug)]
pub struct Client {
    inner: crate::Client,
    runtime: Arc<OwnedRuntime>,
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
        let mut runtime = new_runtime()?;
        let connect = builder.runtime(runtime.handle().clone()).connect();
        let inner = wait_on(&runtime, connect)?;
        runtime.keep(inner.clone());
        Ok(Client {
            inner,
            runtime: Arc::new(runtime),
        })
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

    /// A fair lock; this handle is one owner (see [`crate::Client::fair_lock`]).
    pub fn fair_lock(&self, name: impl Into<String>) -> Lock {
        Lock {
            inner: self.inner.fair_lock(name),
            runtime: self.runtime.clone(),
        }
    }

    /// A read/write lock; this handle is one owner for both sides (see
    /// [`crate::Client::rw_lock`]).
    pub fn rw_lock(&self, name: impl Into<String>) -> RwLock {
        RwLock {
            inner: self.inner.rw_lock(name),
            runtime: self.runtime.clone(),
        }
    }

    /// Admin delete of a lock whatever its owner (see [`crate::Client::force_unlock`]).
    ///
    /// # Errors
    /// As [`crate::Client::force_unlock`].
    pub fn force_unlock(&self, name: &str) -> Result<bool> {
        let (client, name) = (self.inner.clone(), name.to_owned());
        run(&self.runtime, async move { client.force_unlock(&name).await })
    }

    /// Closes the client (see [`crate::Client::close`]): releases every guard still held,
    /// stops pending acquires; later calls fail with `Connection` ("the client is closed").
    ///
    /// In a forked child of the process that made the client it does nothing (the holds are
    /// the parent's); on a thread of the client's own runtime (an `on_lost` callback) it
    /// starts the close and returns without waiting for it.
    pub fn close(&self) {
        if self.runtime.is_inherited() {
            return;
        }
        let inner = self.inner.clone();
        let close = async move { inner.close().await };
        if self.runtime.check_caller().is_err() {
            self.runtime.spawn(close);
            return;
        }
        wait_on(&self.runtime, close)
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

/// A blocking read/write lock handle (see [`crate::RwLock`]).
#[derive(Clone, Debug)]
pub struct RwLock {
    inner: crate::RwLock,
    runtime: Arc<OwnedRuntime>,
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
