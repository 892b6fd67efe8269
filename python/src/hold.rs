//! `_native.Hold`: one acquisition, the core's shareable [`Guard`], released at most once.
//!
//! The core serializes release and extend of a guard and keeps a release with an unknown
//! outcome retryable, so each call takes a reference to the guard and runs; `lost` and `held`
//! read it without blocking. The slot is emptied only by `take()` (the asyncio layer moving
//! the hold out of a resolved future).
//!
//! Fork: a hold made in the parent is the parent's. In a child, `owned()` is False, `release`
//! and `extend` raise `NotOwnedError`, nothing touches the parent's runtime, and dropping the
//! hold leaks it rather than running the core's background release (which would spawn onto a
//! runtime whose threads are gone).

use crate::args;
use crate::errors::{not_owned, IntoPy};
use crate::runtime::{self, pid};
use pyo3::prelude::*;
use redlatch::{Error, Guard, Reason};
use std::sync::{Arc, Mutex};

struct Inner {
    /// `None` once moved out by `take()`.
    guard: Mutex<Option<Arc<Guard>>>,
    fence: Option<u64>,
    name: String,
    origin: u32,
}

impl Inner {
    fn foreign(&self) -> bool {
        self.origin != pid()
    }

    fn guard(&self) -> Option<Arc<Guard>> {
        self.guard.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn taken(&self) -> Error {
        Error::not_owned(
            false,
            Reason::NeverHeld,
            format!("lock {:?}: this hold was already released", self.name),
        )
    }

    fn lost(&self) -> bool {
        self.guard().is_some_and(|g| g.is_lost())
    }

    /// `true` while the hold is still this owner's as far as the client knows (not released,
    /// not lost; a release whose outcome was unknown leaves it held).
    fn held(&self) -> bool {
        self.guard().is_some_and(|g| g.is_held())
    }

    async fn release(self: Arc<Self>) -> redlatch::Result<()> {
        match self.guard() {
            Some(g) => g.release().await,
            None => Err(self.taken()),
        }
    }

    async fn release_final(self: Arc<Self>) -> redlatch::Result<()> {
        match self.guard() {
            Some(g) => g.release_final().await,
            None => Err(self.taken()),
        }
    }

    async fn extend(self: Arc<Self>, lease: std::time::Duration) -> redlatch::Result<()> {
        match self.guard() {
            Some(g) => g.extend(lease).await,
            None => Err(self.taken()),
        }
    }

    async fn owned(self: Arc<Self>) -> redlatch::Result<bool> {
        match self.guard() {
            Some(g) => g.owned().await,
            None => Ok(false),
        }
    }
}

const FORKED: &str = "a forked child does not own its parent's holds";

/// One acquisition of a lock, made by `Lock.acquire`.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Hold {
    inner: Option<Arc<Inner>>,
}

impl Hold {
    pub(crate) fn new(guard: Guard) -> Hold {
        Hold {
            inner: Some(Arc::new(Inner {
                fence: guard.fencing_token(),
                name: guard.name().to_owned(),
                guard: Mutex::new(Some(Arc::new(guard))),
                origin: pid(),
            })),
        }
    }

    fn inner(&self) -> &Arc<Inner> {
        self.inner.as_ref().expect("present until drop")
    }

    /// The hold, unless this is a forked child of the process that made it.
    fn own(&self) -> PyResult<Arc<Inner>> {
        let inner = self.inner();
        if inner.foreign() {
            return Err(not_owned(FORKED));
        }
        Ok(inner.clone())
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            if inner.foreign() {
                std::mem::forget(inner);
            }
        }
    }
}

#[pymethods]
impl Hold {
    /// Moves this hold into a new `Hold` object and leaves this one empty (as if released).
    ///
    /// Why: an asyncio future keeps the object it resolved to, and whoever still refers to
    /// that future (a traceback, a done callback) can make it outlive the task that awaited
    /// it. The asyncio layer moves the hold
    /// out of the resolved object at once (or, when the awaiting task was cancelled just as
    /// the acquire succeeded, moves it out and drops it, which releases it in the background),
    /// so nothing but the owning task keeps a lock held. Raises `NotOwnedError` when already
    /// taken.
    fn take(&self) -> PyResult<Hold> {
        let inner = self.own()?;
        let guard = inner.guard.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(guard) = guard else {
            return Err(not_owned(format!(
                "lock {:?}: this hold was already taken",
                inner.name
            )));
        };
        Ok(Hold {
            inner: Some(Arc::new(Inner {
                guard: Mutex::new(Some(guard)),
                fence: inner.fence,
                name: inner.name.clone(),
                origin: inner.origin,
            })),
        })
    }

    /// The lock's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner().name
    }

    /// The fencing token of this acquisition (fenced locks), else None.
    #[getter]
    fn fencing_token(&self) -> Option<u64> {
        self.inner().fence
    }

    /// True once the hold is known lost (the watchdog or an extend found it gone or taken,
    /// or its validity ran out). Never blocks. False in a forked child.
    #[getter]
    fn lost(&self) -> bool {
        let inner = self.inner();
        !inner.foreign() && inner.lost()
    }

    /// True until the hold is released or lost (a release whose outcome was unknown leaves it
    /// held, to be released again). Never blocks. False in a forked child.
    #[getter]
    fn held(&self) -> bool {
        let inner = self.inner();
        !inner.foreign() && inner.held()
    }

    /// Releases the hold (blocks, GIL released), at most once. Raises `NotOwnedError` (reason
    /// `deleted`, `taken`, `never_held`) or `LockLostError` (the loss was known before: the
    /// seen reason, or `expired`); `RedisConnectionError` / `QuorumError` when Redis could not
    /// confirm, and `NoPermissionError` / `OutOfMemoryError` when it refused: then the hold
    /// is kept (`held`) and `release()` may be called again.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let inner = self.own()?;
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, inner.release())?.py()
    }

    /// Awaitable form of [`Hold::release`]. The release runs to completion even if the
    /// awaiting task is cancelled.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.own()?;
        crate::aio::awaitable(py, inner.release())
    }

    /// Releases as [`Hold::release`] does, for the end of a `with` block: when the outcome
    /// stays unknown (`RedisConnectionError`, `QuorumError`), the release goes on in the
    /// background at once, retried with back-off while the hold may be valid (the core's
    /// `Guard::release_final`). Raises as `release`.
    ///
    /// Why not leave that to the dropped hold: the exception the block raises keeps the
    /// frame that holds this object, in a reference cycle (the frame's locals hold the
    /// exception), so the hold lived until the garbage collector ran, and the lock stayed
    /// taken for its whole lease (found by a user trial).
    fn release_final(&self, py: Python<'_>) -> PyResult<()> {
        let inner = self.own()?;
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, inner.release_final())?.py()
    }

    /// Awaitable form of [`Hold::release_final`] (runs to completion even if the awaiting task
    /// is cancelled).
    fn release_final_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.own()?;
        crate::aio::awaitable(py, inner.release_final())
    }

    /// Resets the remaining lease to `lease` seconds (replace, never add); never re-creates a
    /// lost lock. Raises `ValueError` for a bad lease, `NotOwnedError` / `LockLostError` when
    /// the hold is gone, `RedisConnectionError` / `QuorumError`.
    fn extend(&self, py: Python<'_>, lease: &Bound<'_, PyAny>) -> PyResult<()> {
        let lease = args::seconds("lease", lease, false)?;
        let inner = self.own()?;
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, inner.extend(lease))?.py()
    }

    /// Awaitable form of [`Hold::extend`].
    fn extend_async<'py>(&self, py: Python<'py>, lease: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let lease = args::seconds("lease", lease, false)?;
        let inner = self.own()?;
        crate::aio::awaitable(py, inner.extend(lease))
    }

    /// Asks Redis whether this hold is still ours. False in a forked child.
    /// Raises `RedisConnectionError` / `QuorumError`.
    fn owned(&self, py: Python<'_>) -> PyResult<bool> {
        if self.inner().foreign() {
            return Ok(false);
        }
        let inner = self.inner().clone();
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, inner.owned())?.py()
    }

    /// Awaitable form of [`Hold::owned`].
    fn owned_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // Checked before cloning: in a child, a clone outliving this object would run the
        // guard's destructor, which spawns onto the parent's runtime.
        if self.inner().foreign() {
            return crate::aio::awaitable(py, async { Ok(false) });
        }
        let inner = self.inner().clone();
        crate::aio::awaitable(py, inner.owned())
    }

    fn __repr__(&self) -> String {
        let inner = self.inner();
        format!(
            "<redlatch._native.Hold {:?} fencing_token={:?} lost={}>",
            inner.name,
            inner.fence,
            self.lost()
        )
    }
}
