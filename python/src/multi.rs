//! `_native.MultiLock` (Redisson RedissonMultiLock) and `_native.MultiHold`, the core's
//! `MultiGuard`. Members are lock handles of this client (any kind) and names (lease locks);
//! the core lock of a reentrant member is made at each acquire with the acquiring thread's
//! (or task's) owner, as a single lock's is.

use crate::args;
use crate::client::Shared;
use crate::errors::{not_owned, IntoPy};
use crate::lock::{not_acquired_is_none, Lock};
use crate::runtime::{self, pid};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One member as given.
pub(crate) enum Member {
    Lock(Py<Lock>),
    Name(String),
}

/// A multi-lock handle: members and options, validated when made.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct MultiLock {
    shared: Arc<Shared>,
    members: Vec<Member>,
    lease: Option<Duration>,
    wait: Option<Duration>,
    names: Vec<String>,
}

impl MultiLock {
    /// Checks the set with the core (empty, duplicates, locks of another client) and keeps it.
    pub(crate) fn new(
        shared: Arc<Shared>,
        members: Vec<Member>,
        lease: Option<Duration>,
        wait: Option<Duration>,
    ) -> PyResult<MultiLock> {
        let mut handle = MultiLock {
            shared,
            members,
            lease,
            wait,
            names: Vec::new(),
        };
        let (multi, _) = handle.core(None)?;
        handle.names = multi.names().into_iter().map(str::to_owned).collect();
        Ok(handle)
    }

    /// The core multi-lock for `owner` (`None` = the calling thread).
    fn core(&self, owner: Option<u64>) -> PyResult<(redlatch::MultiLock, tokio::runtime::Handle)> {
        let (client, rt) = self.shared.client()?;
        let mut locks = Vec::with_capacity(self.members.len());
        for m in &self.members {
            locks.push(match m {
                Member::Lock(l) => l.get().core(owner)?.0,
                Member::Name(n) => client.lock(n.as_str()),
            });
        }
        let mut multi = client.multi_lock(locks).py()?;
        if let Some(lease) = self.lease {
            multi = multi.lease(lease);
        }
        Ok((multi, rt))
    }
}

#[pymethods]
impl MultiLock {
    /// The members' names, in the order they are taken (sorted).
    #[getter]
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The default wait in seconds; None = until acquired.
    #[getter]
    fn wait(&self) -> Option<f64> {
        self.wait.map(|d| d.as_secs_f64())
    }

    /// Checks `acquire`'s arguments without acquiring (see `Lock.check_acquire`).
    #[pyo3(signature = (blocking=true, timeout=None))]
    fn check_acquire(&self, blocking: bool, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        args::acquire_wait(blocking, timeout, self.wait).map(|_| ())
    }

    /// Takes every member (GIL released, Ctrl-C stops the wait and undoes what was taken).
    /// `blocking`/`timeout`/`raising` as `Lock.acquire`. None when the wait ran out.
    #[pyo3(signature = (blocking=true, timeout=None, owner=None, *, raising=false))]
    fn acquire(
        &self,
        py: Python<'_>,
        blocking: bool,
        timeout: Option<&Bound<'_, PyAny>>,
        owner: Option<u64>,
        raising: bool,
    ) -> PyResult<Option<MultiHold>> {
        let wait = args::acquire_wait(blocking, timeout, self.wait)?;
        let (multi, rt) = self.core(owner)?;
        let fut = async move {
            not_acquired_is_none(multi.acquire_with_wait(wait).await, raising).map(|g| g.map(MultiHold::new))
        };
        let hold = if wait == Some(Duration::ZERO) {
            runtime::block(py, &rt, fut)?
        } else {
            runtime::block_interruptible(py, &rt, fut)?
        };
        hold.py()
    }

    /// Awaitable form of [`MultiLock::acquire`]; resolves to a `MultiHold` (call `take()`) or None.
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
        let (multi, _) = self.core(owner)?;
        crate::aio::awaitable(py, async move {
            not_acquired_is_none(multi.acquire_with_wait(wait).await, raising).map(|g| g.map(MultiHold::new))
        })
    }

    fn __repr__(&self) -> String {
        format!("<redlatch._native.MultiLock {:?}>", self.names)
    }
}

/// Every member held (the core's `MultiGuard`, released in the background when dropped).
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct MultiHold {
    /// `None` once moved out by `take()`.
    guard: Mutex<Option<Arc<redlatch::MultiGuard>>>,
    origin: u32,
}

impl MultiHold {
    fn new(g: redlatch::MultiGuard) -> MultiHold {
        MultiHold {
            guard: Mutex::new(Some(Arc::new(g))),
            origin: pid(),
        }
    }

    fn guard(&self) -> Option<Arc<redlatch::MultiGuard>> {
        self.guard.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn own(&self) -> PyResult<Arc<redlatch::MultiGuard>> {
        if self.origin != pid() {
            return Err(not_owned("a forked child does not own its parent's holds"));
        }
        self.guard()
            .ok_or_else(|| not_owned("this multi-lock hold was already released"))
    }
}

impl Drop for MultiHold {
    fn drop(&mut self) {
        if self.origin != pid() {
            let g = self.guard.get_mut().unwrap_or_else(|p| p.into_inner()).take();
            std::mem::forget(g);
        }
    }
}

#[pymethods]
impl MultiHold {
    /// Moves the hold into a new `MultiHold` (see `Hold.take`).
    fn take(&self) -> PyResult<MultiHold> {
        let g = self.own()?;
        self.guard.lock().unwrap_or_else(|p| p.into_inner()).take();
        Ok(MultiHold {
            guard: Mutex::new(Some(g)),
            origin: self.origin,
        })
    }

    /// True while some member is held (not released, not lost). False in a forked child.
    #[getter]
    fn held(&self) -> bool {
        self.origin == pid()
            && self
                .guard()
                .is_some_and(|g| g.guards().iter().any(|m| m.is_held()))
    }

    /// True once any member is known lost.
    #[getter]
    fn lost(&self) -> bool {
        self.origin == pid() && self.guard().is_some_and(|g| g.is_lost())
    }

    /// Releases every member (blocks, GIL released). Errors as `Hold.release`.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.own()?;
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, async move { g.release().await })?.py()
    }

    /// Awaitable form of [`MultiHold::release`].
    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let g = self.own()?;
        crate::aio::awaitable(py, async move { g.release().await })
    }

    /// Releases as `release` does, for the end of a `with` block: a member whose outcome stays
    /// unknown goes on being released in the background at once (the core's
    /// `MultiGuard::release_final`; why not leave it to the dropped hold: `Hold.release_final`).
    /// Raises as `release`.
    fn release_final(&self, py: Python<'_>) -> PyResult<()> {
        let g = self.own()?;
        let rt = runtime::runtime()?;
        runtime::block(py, &rt, async move { g.release_final().await })?.py()
    }

    /// Awaitable form of [`MultiHold::release_final`] (runs to completion even if the awaiting
    /// task is cancelled).
    fn release_final_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let g = self.own()?;
        crate::aio::awaitable(py, async move { g.release_final().await })
    }
}
