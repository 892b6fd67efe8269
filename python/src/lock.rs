//! `_native.Lock`: a lock name with its options; each acquire makes a [`Hold`].
//!
//! The Python layer (`redlatch/_sync.py`, `redlatch/asyncio.py`) decides who owns a hold
//! (the acquiring thread or task) and keeps each owner's holds; this type only talks to the
//! core. Reentrant locks need an owner number: the sync layer passes none and gets the
//! calling thread's, the async layer passes its task's.

use crate::args;
use crate::client::Shared;
use crate::errors::IntoPy;
use crate::hold::Hold;
use crate::runtime;
use pyo3::prelude::*;
use redlatch::{ErrorKind, LockKind};
use std::sync::Arc;
use std::time::Duration;

/// The kinds a handle can be, by the core's word for each (`LockKind::as_str`, also
/// `Lock.kind`): `"lease"`, `"reentrant"`, `"fair"`, `"read"`, `"write"`.
const KINDS: [LockKind; 5] = [
    LockKind::Lease,
    LockKind::Reentrant,
    LockKind::Fair,
    LockKind::Read,
    LockKind::Write,
];

/// The kind named `word`.
pub(crate) fn parse_kind(word: &str) -> PyResult<LockKind> {
    KINDS.into_iter().find(|k| k.as_str() == word).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!(
            "unknown lock kind {word:?} (lease, reentrant, fair, read, write)"
        ))
    })
}

/// A lock handle: name, kind and options, validated when made.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Lock {
    shared: Arc<Shared>,
    name: String,
    kind: LockKind,
    lease: Option<Duration>,
    wait: Option<Duration>,
    fenced: bool,
    fence_ttl: Option<Duration>,
}

impl Lock {
    pub(crate) fn new(
        shared: Arc<Shared>,
        name: String,
        kind: LockKind,
        lease: Option<Duration>,
        wait: Option<Duration>,
        fenced: bool,
        fence_ttl: Option<Duration>,
    ) -> Lock {
        Lock {
            shared,
            name,
            kind,
            lease,
            wait,
            fenced,
            fence_ttl,
        }
    }

    /// The core lock for `owner` (reentrant kinds; `None` = the calling thread). A read and a
    /// write lock of one name and owner share the core's `RwLock` owner, so a thread (task)
    /// holding the write lock may take the read lock.
    pub(crate) fn core(&self, owner: Option<u64>) -> PyResult<(redlatch::Lock, tokio::runtime::Handle)> {
        let (client, rt) = self.shared.client()?;
        let owner = || owner.unwrap_or_else(args::thread_owner);
        let name = self.name.as_str();
        let mut lock = match self.kind {
            LockKind::Reentrant => client.rlock(name).owner(owner()),
            LockKind::Fair => client.fair_lock(name).owner(owner()),
            LockKind::Read => client.rw_lock(name).owner(owner()).read(),
            LockKind::Write => client.rw_lock(name).owner(owner()).write(),
            _ => client.lock(name),
        };
        if let Some(lease) = self.lease {
            lock = lock.lease(lease);
        }
        if self.fenced {
            lock = lock.fenced();
        }
        if let Some(ttl) = self.fence_ttl {
            lock = lock.fence_ttl(ttl);
        }
        Ok((lock, rt))
    }
}

/// `Ok(None)` when the wait ran out (redis-py's `acquire` returns False then), unless the caller
/// raises it (`raising`: a `with` block, which then carries the core's reason, such as replicas
/// that did not confirm a `sync_replicas` acquire).
pub(crate) fn not_acquired_is_none<T>(r: redlatch::Result<T>, raising: bool) -> redlatch::Result<Option<T>> {
    match r {
        Ok(g) => Ok(Some(g)),
        Err(e) if e.kind() == ErrorKind::NotAcquired && !raising => Ok(None),
        Err(e) => Err(e),
    }
}

/// A TTL (whole milliseconds from Redis) in seconds: the double nearest to its decimal form
/// (5565 ms is 5.565, where `as_secs_f64` adds the parts and gives 5.5649999999999995).
fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_millis() as f64 / 1000.0)
}

#[pymethods]
impl Lock {
    /// The lock's name (its Redis key).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// True for the reentrant kinds (every kind but `lock`).
    #[getter]
    fn reentrant(&self) -> bool {
        self.kind.is_reentrant()
    }

    /// The core's word for the kind: `"lease"`, `"reentrant"`, `"fair"`, `"read"` or `"write"`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.as_str()
    }

    /// The fixed lease in seconds; None in watchdog mode.
    #[getter]
    fn lease(&self) -> Option<f64> {
        secs(self.lease)
    }

    /// The default wait in seconds; None = wait until acquired.
    #[getter]
    fn wait(&self) -> Option<f64> {
        secs(self.wait)
    }

    /// True for fenced locks (each acquire gets a fencing token).
    #[getter]
    fn fenced(&self) -> bool {
        self.fenced
    }

    /// Checks `acquire`'s `blocking`/`timeout` arguments without acquiring (the Python layer
    /// calls it before refusing a re-acquire, so bad arguments are reported first). Raises
    /// `ValueError` / `TypeError` as `acquire` would.
    #[pyo3(signature = (blocking=true, timeout=None))]
    fn check_acquire(&self, blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        args::acquire_wait(blocking, timeout, self.wait).map(|_| ())
    }

    /// Raises `ValueError` / `TypeError` for a bad `extend` lease (checked before whether the
    /// caller holds the lock: a user trial saw `extend(nan)` answered `NotOwnedError`).
    fn check_lease(&self, lease: &Bound<'_, PyAny>) -> PyResult<()> {
        args::seconds("lease", lease, false).map(|_| ())
    }

    /// Acquires, blocking with the GIL released (`KeyboardInterrupt` stops the wait and leaves
    /// nothing behind). `blocking`/`timeout` follow `threading.Lock.acquire` (timeout None =
    /// the lock's wait, -1 = forever, seconds otherwise). Returns None when the wait ran out
    /// (raises `NotAcquiredError` with the core's reason instead when `raising`).
    /// Raises `RedisConnectionError`, `QuorumError`, `ValueError` for a bad timeout.
    #[pyo3(signature = (blocking=true, timeout=None, owner=None, *, raising=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        owner: Option<u64>,
        raising: bool,
    ) -> PyResult<Option<Hold>> {
        let wait = args::acquire_wait(blocking, timeout, self.wait)?;
        let (lock, rt) = self.core(owner)?;
        let fut = async move { not_acquired_is_none(lock.acquire_with_wait(wait).await, raising) };
        let guard = if wait == Some(Duration::ZERO) {
            runtime::block(py, &rt, fut)?
        } else {
            runtime::block_interruptible(py, &rt, fut)?
        };
        Ok(guard.py()?.map(Hold::new))
    }

    /// Awaitable form of [`Lock::acquire`]; resolves to a Hold or None. Cancelling the
    /// awaiting task drops the attempt; the core then undoes it in the background.
    #[pyo3(signature = (blocking=true, timeout=None, owner=None, *, raising=false))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        owner: Option<u64>,
        raising: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let wait = args::acquire_wait(blocking, timeout, self.wait)?;
        let (lock, _) = self.core(owner)?;
        let acquire = async move { not_acquired_is_none(lock.acquire_with_wait(wait).await, raising) };
        crate::aio::awaitable(py, async move { Ok(acquire.await?.map(Hold::new)) })
    }

    /// True when anyone holds the lock. Raises `RedisConnectionError` / `QuorumError`.
    fn locked(&self, py: Python<'_>) -> PyResult<bool> {
        let (lock, rt) = self.core(Some(0))?;
        runtime::block(py, &rt, async move { lock.locked().await })?.py()
    }

    /// Awaitable form of [`Lock::locked`].
    fn locked_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (lock, _) = self.core(Some(0))?;
        crate::aio::awaitable(py, async move { lock.locked().await })
    }

    /// Remaining lease of whoever holds the lock, in seconds; None when free.
    fn ttl(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let (lock, rt) = self.core(Some(0))?;
        let ttl = runtime::block(py, &rt, async move { lock.ttl().await })?.py()?;
        Ok(secs(ttl))
    }

    /// Awaitable form of [`Lock::ttl`].
    fn ttl_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (lock, _) = self.core(Some(0))?;
        crate::aio::awaitable(py, async move { Ok(secs(lock.ttl().await?)) })
    }

    /// Reentrant locks: `owner`'s hold count on Redis (None = the calling thread); 0 for
    /// lease locks.
    #[pyo3(signature = (owner=None))]
    fn hold_count(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<u64> {
        let (lock, rt) = self.core(owner)?;
        runtime::block(py, &rt, async move { lock.hold_count().await })?.py()
    }

    /// Awaitable form of [`Lock::hold_count`].
    #[pyo3(signature = (owner=None))]
    fn hold_count_async<'py>(&self, py: Python<'py>, owner: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
        let (lock, _) = self.core(owner)?;
        crate::aio::awaitable(py, async move { lock.hold_count().await })
    }

    fn __repr__(&self) -> String {
        format!(
            "<redlatch._native.Lock {} {:?} lease={:?} wait={:?} fenced={}>",
            self.kind.as_str(),
            self.name,
            secs(self.lease),
            secs(self.wait),
            self.fenced
        )
    }
}
