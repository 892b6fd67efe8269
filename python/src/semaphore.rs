//! `_native.Semaphore` (Redisson RSemaphore) and `_native.Grant`, the permits of one acquire
//! until the Python layer keeps them.
//!
//! Why a grant: an acquire whose caller stops waiting just as it succeeds (Ctrl-C in a sync
//! wait, a cancelled asyncio task) must not leave permits taken that no one knows about. The
//! core undoes an acquire cancelled in flight; one that finished is a `Grant` whose drop, unless
//! `keep()` was called, gives the permits back in the background.

use crate::args;
use crate::client::Shared;
use crate::errors::IntoPy;
use crate::family::PerProcess;
use crate::lock::not_acquired_is_none;
use crate::runtime::{self, pid};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A semaphore handle: name, wait and the permits to set on first use.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Semaphore {
    shared: Arc<Shared>,
    name: String,
    wait: Option<Duration>,
    /// Set by the core's first acquire or `available` if the semaphore has no count yet.
    permits: Option<u64>,
    core: PerProcess<redlatch::Semaphore>,
}

impl Semaphore {
    pub(crate) fn new(
        shared: Arc<Shared>,
        name: String,
        permits: Option<u64>,
        wait: Option<Duration>,
    ) -> Semaphore {
        Semaphore {
            shared,
            name,
            wait,
            permits,
            core: PerProcess::new(),
        }
    }

    fn core(&self) -> PyResult<(redlatch::Semaphore, tokio::runtime::Handle)> {
        self.core.get(&self.shared, |c| {
            let sem = c.semaphore(self.name.as_str());
            match self.permits {
                Some(n) => sem.initial_permits(n),
                None => sem,
            }
        })
    }

    /// `f`'s future on this process's handle, and the runtime to run it on.
    fn prepared<F, Fut, T>(
        &self,
        f: F,
    ) -> PyResult<(
        impl std::future::Future<Output = redlatch::Result<T>>,
        tokio::runtime::Handle,
    )>
    where
        F: FnOnce(redlatch::Semaphore) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = redlatch::Result<T>> + Send,
    {
        let (sem, rt) = self.core()?;
        Ok((f(sem), rt))
    }
}

/// Permits taken by one acquire; given back when dropped before `keep()`.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Grant {
    slot: Mutex<Option<(redlatch::Semaphore, u64)>>,
    origin: u32,
}

impl Grant {
    fn new(sem: redlatch::Semaphore, permits: u64) -> Grant {
        Grant {
            slot: Mutex::new(Some((sem, permits))),
            origin: pid(),
        }
    }

    fn take_slot(&self) -> Option<(redlatch::Semaphore, u64)> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let Some((sem, permits)) = self.take_slot() else {
            return;
        };
        if self.origin != pid() {
            std::mem::forget(sem); // a forked child: the parent's runtime is gone
            return;
        }
        if let Ok(rt) = runtime::runtime() {
            // Nowhere to report a failure: the caller had already stopped waiting. Permits not
            // given back stay taken, as for any holder that vanishes (RSemaphore's rule).
            rt.spawn(async move {
                let _ = sem.release(permits).await;
            });
        }
    }
}

#[pymethods]
impl Grant {
    /// The caller has the permits: they are no longer given back when this object goes.
    fn keep(&self) {
        drop(self.take_slot().map(|(sem, _)| sem));
    }

    /// Moves the permits into a new `Grant` (the asyncio layer takes them out of the resolved
    /// future, as it does a `Hold`); this one is left empty.
    fn take(&self) -> Grant {
        Grant {
            slot: Mutex::new(self.take_slot()),
            origin: self.origin,
        }
    }
}

/// A grant of `permits`, or None when the wait ran out (unless `raising`, as `Lock.acquire`).
fn granted(
    r: redlatch::Result<()>,
    sem: redlatch::Semaphore,
    permits: u64,
    raising: bool,
) -> redlatch::Result<Option<Grant>> {
    not_acquired_is_none(r, raising).map(|taken| taken.map(|()| Grant::new(sem, permits)))
}

#[pymethods]
impl Semaphore {
    /// The semaphore's name (its Redis key).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The default wait in seconds; None = until acquired.
    #[getter]
    fn wait(&self) -> Option<f64> {
        self.wait.map(|d| d.as_secs_f64())
    }

    /// Permits this handle acquired and did not release (local).
    #[getter]
    fn held(&self) -> PyResult<u64> {
        Ok(self.core()?.0.held())
    }

    /// Sets the permits if the semaphore does not exist. Raises `ValueError` for a count
    /// outside 1..2^31-1, `RedisConnectionError`.
    fn try_set_permits(&self, py: Python<'_>, permits: &Bound<'_, PyAny>) -> PyResult<bool> {
        let n = args::count("permits", permits)?;
        let (fut, rt) = self.prepared(move |s| async move { s.try_set_permits(n).await })?;
        runtime::block(py, &rt, fut)?.py()
    }

    /// Awaitable form of [`Semaphore::try_set_permits`].
    fn try_set_permits_async<'py>(
        &self,
        py: Python<'py>,
        permits: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count("permits", permits)?;
        let (fut, _) = self.prepared(move |s| async move { s.try_set_permits(n).await })?;
        crate::aio::awaitable(py, fut)
    }

    /// Takes `permits` (waits with the GIL released, Ctrl-C stops it). `blocking`/`timeout`
    /// as `Lock.acquire`. True when taken, False when the wait ran out (`raising`: raises
    /// `NotAcquiredError` with the core's reason instead).
    #[pyo3(signature = (permits, blocking=true, timeout=None, *, raising=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        permits: &Bound<'_, PyAny>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        raising: bool,
    ) -> PyResult<bool> {
        let n = args::count("permits", permits)?;
        let wait = args::acquire_wait(blocking, timeout, self.wait)?;
        let (fut, rt) = self.prepared(move |s| async move {
            let r = s.acquire_with_wait(n, wait).await;
            granted(r, s, n, raising)
        })?;
        let grant = runtime::block_interruptible(py, &rt, fut)?.py()?;
        Ok(grant.map(|g| g.keep()).is_some())
    }

    /// Awaitable form of [`Semaphore::acquire`]; resolves to a `Grant` (call `keep()`) or
    /// None when the wait ran out.
    #[pyo3(signature = (permits, blocking=true, timeout=None, *, raising=false))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        permits: &Bound<'_, PyAny>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        raising: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count("permits", permits)?;
        let wait = args::acquire_wait(blocking, timeout, self.wait)?;
        let (fut, _) = self.prepared(move |s| async move {
            let r = s.acquire_with_wait(n, wait).await;
            granted(r, s, n, raising)
        })?;
        crate::aio::awaitable(py, fut)
    }

    /// Gives back `permits` this handle holds (required: `None` is a `TypeError`, not "1").
    /// Raises `NotOwnedError` (more than held), `TypeError`, `ValueError`,
    /// `RedisConnectionError`.
    fn release(&self, py: Python<'_>, permits: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = args::count("permits", permits)?;
        let (sem, rt) = self.core()?;
        runtime::block(py, &rt, async move { sem.release(n).await })?.py()
    }

    /// Awaitable form of [`Semaphore::release`].
    fn release_async<'py>(&self, py: Python<'py>, permits: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count("permits", permits)?;
        let (sem, _) = self.core()?;
        crate::aio::awaitable(py, async move { sem.release(n).await })
    }

    /// Gives back `permits` at the end of a `with` block (the core's
    /// `Semaphore::release_final`): when the outcome stays unknown, the permits leave this
    /// handle's count and the release is settled in the background, so a later `release()`
    /// cannot give them back a second time. Raises as `release`.
    #[pyo3(signature = (permits=None))]
    fn release_final(&self, py: Python<'_>, permits: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let n = permits.map_or(Ok(1), |p| args::count("permits", p))?;
        let (sem, rt) = self.core()?;
        runtime::block(py, &rt, async move { sem.release_final(n).await })?.py()
    }

    /// Awaitable form of [`Semaphore::release_final`] (runs to completion even if the
    /// awaiting task is cancelled).
    #[pyo3(signature = (permits=None))]
    fn release_final_async<'py>(
        &self,
        py: Python<'py>,
        permits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = permits.map_or(Ok(1), |p| args::count("permits", p))?;
        let (sem, _) = self.core()?;
        crate::aio::awaitable(py, async move { sem.release_final(n).await })
    }

    /// Permits available now (asks Redis).
    fn available(&self, py: Python<'_>) -> PyResult<u64> {
        let (fut, rt) = self.prepared(|s| async move { s.available().await })?;
        runtime::block(py, &rt, fut)?.py()
    }

    /// Awaitable form of [`Semaphore::available`].
    fn available_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (fut, _) = self.prepared(|s| async move { s.available().await })?;
        crate::aio::awaitable(py, fut)
    }

    fn __repr__(&self) -> String {
        format!("<redlatch._native.Semaphore {:?}>", self.name)
    }
}
