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
mod lock;
mod multi;
mod runtime;

pub use crate::native::poll_here;
pub use family::{CountDownLatch, Permit, PermitSemaphore, Semaphore};
pub use lock::{Guard, Lock, RwLock};
pub use multi::{MultiGuard, MultiLock};

use crate::error::Result;
use runtime::{new_runtime, run, run_hold, wait_on, OwnedRuntime};
use std::sync::Arc;

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
