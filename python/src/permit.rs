//! `_native.PermitSemaphore` (Redisson RPermitExpirableSemaphore) and `_native.Permit`, one
//! permit held: the core's `Permit`, which the watchdog renews while it lives (no lease) and
//! which is released in the background when dropped unreleased.
//!
//! Fork: as for a `Hold`, a permit made in the parent is the parent's; in a child, `release`
//! raises `NotOwnedError` and dropping it leaks it rather than touching the parent's runtime.

use crate::args;
use crate::client::Shared;
use crate::errors::{not_owned, IntoPy};
use crate::family::PerProcess;
use crate::lock::not_acquired_is_none;
use crate::runtime::{self, pid};
use pyo3::prelude::*;
use redlatch::protocol::family::permits;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A permit-expirable semaphore handle.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct PermitSemaphore {
    shared: Arc<Shared>,
    name: String,
    wait: Option<Duration>,
    /// Set by the core's first acquire or `available` if the semaphore has no count yet.
    permits: Option<u64>,
    core: PerProcess<redlatch::PermitSemaphore>,
}

impl PermitSemaphore {
    pub(crate) fn new(
        shared: Arc<Shared>,
        name: String,
        permits: Option<u64>,
        wait: Option<Duration>,
    ) -> PermitSemaphore {
        PermitSemaphore {
            shared,
            name,
            wait,
            permits,
            core: PerProcess::new(),
        }
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
        F: FnOnce(redlatch::PermitSemaphore) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = redlatch::Result<T>> + Send,
    {
        let (sem, rt) = self.core.get(&self.shared, |c| {
            let sem = c.permit_semaphore(self.name.as_str());
            match self.permits {
                Some(n) => sem.initial_permits(n),
                None => sem,
            }
        })?;
        Ok((f(sem), rt))
    }

    fn acquire_future(
        &self,
        lease: Option<&Bound<'_, PyAny>>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        raising: bool,
    ) -> PyResult<(
        impl std::future::Future<Output = redlatch::Result<Option<Permit>>>,
        tokio::runtime::Handle,
        bool,
    )> {
        let lease = args::opt_seconds("lease", lease, false)?;
        let wait = args::acquire_wait(blocking, timeout, self.wait)?;
        let name = self.name.clone();
        let (fut, rt) = self.prepared(move |s| async move {
            let permit = not_acquired_is_none(s.acquire_with_wait(lease, wait).await, raising)?;
            Ok(permit.map(|p| Permit::new(p, name)))
        })?;
        Ok((fut, rt, wait == Some(Duration::ZERO)))
    }
}

#[pymethods]
impl PermitSemaphore {
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

    /// Sets the permits if the semaphore does not exist. Raises `ValueError`, `RedisConnectionError`.
    fn try_set_permits(&self, py: Python<'_>, permits: &Bound<'_, PyAny>) -> PyResult<bool> {
        let n = args::count("permits", permits)?;
        let (fut, rt) = self.prepared(move |s| async move { s.try_set_permits(n).await })?;
        runtime::block(py, &rt, fut)?.py()
    }

    /// Awaitable form of [`PermitSemaphore::try_set_permits`].
    fn try_set_permits_async<'py>(
        &self,
        py: Python<'py>,
        permits: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count("permits", permits)?;
        let (fut, _) = self.prepared(move |s| async move { s.try_set_permits(n).await })?;
        crate::aio::awaitable(py, fut)
    }

    /// Takes one permit (`lease` seconds, None = watchdog), waiting as `Lock.acquire` does
    /// (GIL released, Ctrl-C stops it). None when the wait ran out (`raising`: raises
    /// `NotAcquiredError` with the core's reason instead).
    #[pyo3(signature = (lease=None, blocking=true, timeout=None, *, raising=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        lease: Option<&Bound<'_, PyAny>>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        raising: bool,
    ) -> PyResult<Option<Permit>> {
        let (fut, rt, once) = self.acquire_future(lease, blocking, timeout, raising)?;
        let permit = if once {
            runtime::block(py, &rt, fut)?
        } else {
            runtime::block_interruptible(py, &rt, fut)?
        };
        permit.py()
    }

    /// Awaitable form of [`PermitSemaphore::acquire`]; resolves to a `Permit` (call `take()`)
    /// or None.
    #[pyo3(signature = (lease=None, blocking=true, timeout=None, *, raising=false))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        lease: Option<&Bound<'_, PyAny>>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        raising: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (fut, _, _) = self.acquire_future(lease, blocking, timeout, raising)?;
        crate::aio::awaitable(py, fut)
    }

    /// Releases permit `permit_id` (32 hex digits). Raises `NotOwnedError` (unknown or
    /// expired id), `ValueError` (not a permit id), `RedisConnectionError`.
    fn release(&self, py: Python<'_>, permit_id: String) -> PyResult<()> {
        permits::validate_permit_id(&permit_id).py()?;
        let (fut, rt) = self.prepared(move |s| async move { s.release(&permit_id).await })?;
        runtime::block(py, &rt, fut)?.py()
    }

    /// Awaitable form of [`PermitSemaphore::release`].
    fn release_async<'py>(&self, py: Python<'py>, permit_id: String) -> PyResult<Bound<'py, PyAny>> {
        permits::validate_permit_id(&permit_id).py()?;
        let (fut, _) = self.prepared(move |s| async move { s.release(&permit_id).await })?;
        crate::aio::awaitable(py, fut)
    }

    /// Permits available now (asks Redis).
    fn available(&self, py: Python<'_>) -> PyResult<u64> {
        let (fut, rt) = self.prepared(|s| async move { s.available().await })?;
        runtime::block(py, &rt, fut)?.py()
    }

    /// Awaitable form of [`PermitSemaphore::available`].
    fn available_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (fut, _) = self.prepared(|s| async move { s.available().await })?;
        crate::aio::awaitable(py, fut)
    }

    fn __repr__(&self) -> String {
        format!("<redlatch._native.PermitSemaphore {:?}>", self.name)
    }
}

/// One permit held (the core's `Permit`), released at most once.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Permit {
    /// `None` once moved out by `take()`.
    permit: Mutex<Option<Arc<redlatch::Permit>>>,
    id: String,
    name: String,
    lease: Option<Duration>,
    origin: u32,
    /// Handed to the caller (made by `take()`, which the wrappers call when they return it).
    /// One dropped before that was never the caller's, whatever its lease: the outcome of an
    /// acquire whose task was cancelled, or that Ctrl-C interrupted as it returned. Its
    /// permit is given back in the background (a user trial of stop 44 found such a permit
    /// taken for its whole lease; a delivered permit with a lease stays taken when dropped,
    /// see the core's `Permit`).
    delivered: bool,
}

impl Permit {
    fn new(p: redlatch::Permit, name: String) -> Permit {
        Permit {
            id: p.id().to_owned(),
            name,
            lease: (!p.is_renewed()).then(|| p.lease()),
            permit: Mutex::new(Some(Arc::new(p))),
            origin: pid(),
            delivered: false,
        }
    }

    /// Moves the permit out of this object and gives it back in the background (the core's
    /// `Permit::release_final`). Without a runtime (the interpreter exiting) its lease, or
    /// the core's drop, ends it.
    fn give_back_now(&self) {
        let taken = self.permit.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let (Some(p), Ok(rt)) = (taken, runtime::runtime()) {
            // An unknown outcome is retried by the core; a refusal is the core's to log.
            rt.spawn(async move {
                let _ = p.release_final().await;
            });
        }
    }

    fn own(&self) -> PyResult<Arc<redlatch::Permit>> {
        if self.origin != pid() {
            return Err(not_owned("a forked child does not own its parent's permits"));
        }
        self.permit
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| not_owned("this permit was already released"))
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.origin != pid() {
            let p = self.permit.get_mut().unwrap_or_else(|p| p.into_inner()).take();
            std::mem::forget(p);
        } else if !self.delivered {
            self.give_back_now();
        }
    }
}

#[pymethods]
impl Permit {
    /// Moves the permit into a new `Permit` (see `Hold.take`), handed to the caller: dropped,
    /// it is released only when the watchdog renews it (a fixed lease runs on; its id may
    /// have been handed over). Raises `NotOwnedError` when already taken.
    fn take(&self) -> PyResult<Permit> {
        let p = self.own()?;
        self.permit.lock().unwrap_or_else(|p| p.into_inner()).take();
        Ok(Permit {
            permit: Mutex::new(Some(p)),
            id: self.id.clone(),
            name: self.name.clone(),
            lease: self.lease,
            origin: self.origin,
            delivered: true,
        })
    }

    /// Gives back, in the background, a permit an acquire got for a caller that is gone (its
    /// task was cancelled): whatever its lease, nobody has its id. Does nothing once taken.
    fn give_back(&self) {
        if self.origin == pid() {
            self.give_back_now();
        }
    }

    /// The permit id: 32 lower-case hex digits (Redisson's format).
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The semaphore's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The fixed lease in seconds; None when the watchdog renews it.
    #[getter]
    fn lease(&self) -> Option<f64> {
        self.lease.map(|d| d.as_secs_f64())
    }

    /// `True` once it is known no longer held (the core's `Permit::is_lost`); `False` once
    /// moved out by `take()` (the new object answers).
    #[getter]
    fn lost(&self) -> bool {
        let permit = self.permit.lock().unwrap_or_else(|p| p.into_inner());
        permit.as_ref().is_some_and(|p| p.is_lost())
    }

    /// Gives the permit back (blocks, GIL released), at most once. Raises `NotOwnedError`
    /// (`expired`, `never_held`), `RedisConnectionError` (then it may be released again).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let p = self.own()?;
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, async move { p.release().await })?.py()
    }

    /// Awaitable form of [`Permit::release`]; runs to completion even if the task is cancelled.
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.own()?;
        crate::aio::awaitable(py, async move { p.release().await })
    }

    /// Releases as `release` does, for the end of a `with` block: this object forgets the
    /// permit whatever the outcome, and an outcome that stays unknown goes on in the
    /// background at once, retried for up to the permit's lease (the core's
    /// `Permit::release_final`; why not leave it to the dropped permit: `Hold.release_final`).
    /// Raises as `release`.
    fn release_final(&self, py: Python<'_>) -> PyResult<()> {
        let p = self.own()?;
        self.permit.lock().unwrap_or_else(|p| p.into_inner()).take();
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, async move { p.release_final().await })?.py()
    }

    /// Awaitable form of [`Permit::release_final`] (runs to completion even if the awaiting
    /// task is cancelled).
    fn release_final_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let p = self.own()?;
        self.permit.lock().unwrap_or_else(|p| p.into_inner()).take();
        crate::aio::awaitable(py, async move { p.release_final().await })
    }

    fn __repr__(&self) -> String {
        // No id: it is what releases the permit.
        format!(
            "<redlatch._native.Permit of {:?} lease={:?}>",
            self.name,
            self.lease()
        )
    }
}
