//! `_native.CountDownLatch` (Redisson RCountDownLatch): a thin translation of the core's.

use crate::args;
use crate::client::Shared;
use crate::errors::IntoPy;
use crate::family::PerProcess;
use crate::runtime;
use pyo3::prelude::*;
use std::sync::Arc;

/// A count-down latch handle.
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct CountDownLatch {
    shared: Arc<Shared>,
    name: String,
    core: PerProcess<redlatch::CountDownLatch>,
}

impl CountDownLatch {
    pub(crate) fn new(shared: Arc<Shared>, name: String) -> CountDownLatch {
        CountDownLatch {
            shared,
            name,
            core: PerProcess::new(),
        }
    }

    fn core(&self) -> PyResult<(redlatch::CountDownLatch, tokio::runtime::Handle)> {
        self.core
            .get(&self.shared, |c| c.count_down_latch(self.name.as_str()))
    }
}

#[pymethods]
impl CountDownLatch {
    /// The latch's name (its Redis key).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Arms the latch with `count` if it is open. Raises `ValueError` (count outside
    /// 1..2^31-1), `RedisConnectionError`.
    fn try_set_count(&self, py: Python<'_>, count: &Bound<'_, PyAny>) -> PyResult<bool> {
        let n = args::count("count", count)?;
        let (latch, rt) = self.core()?;
        runtime::block(py, &rt, async move { latch.try_set_count(n).await })?.py()
    }

    /// Awaitable form of [`CountDownLatch::try_set_count`].
    fn try_set_count_async<'py>(
        &self,
        py: Python<'py>,
        count: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count("count", count)?;
        let (latch, _) = self.core()?;
        crate::aio::awaitable(py, async move { latch.try_set_count(n).await })
    }

    /// Takes one off the count (opens the latch at zero). Raises `RedisConnectionError`.
    fn count_down(&self, py: Python<'_>) -> PyResult<()> {
        let (latch, rt) = self.core()?;
        runtime::block(py, &rt, async move { latch.count_down().await })?.py()
    }

    /// Awaitable form of [`CountDownLatch::count_down`].
    fn count_down_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (latch, _) = self.core()?;
        crate::aio::awaitable(py, async move { latch.count_down().await })
    }

    /// The current count; 0 when open.
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        let (latch, rt) = self.core()?;
        runtime::block(py, &rt, async move { latch.count().await })?.py()
    }

    /// Awaitable form of [`CountDownLatch::count`].
    fn count_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (latch, _) = self.core()?;
        crate::aio::awaitable(py, async move { latch.count().await })
    }

    /// Waits until the latch opens (GIL released, Ctrl-C stops it): True when open, False
    /// when `timeout` seconds ran out (None = forever). Raises `ValueError` for a bad timeout.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        let timeout = args::opt_seconds("timeout", timeout, true)?;
        let (latch, rt) = self.core()?;
        runtime::block_interruptible(py, &rt, async move { latch.wait(timeout).await })?.py()
    }

    /// Awaitable form of [`CountDownLatch::wait`].
    #[pyo3(signature = (timeout=None))]
    fn wait_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let timeout = args::opt_seconds("timeout", timeout, true)?;
        let (latch, _) = self.core()?;
        crate::aio::awaitable(py, async move { latch.wait(timeout).await })
    }

    fn __repr__(&self) -> String {
        format!("<redlatch._native.CountDownLatch {:?}>", self.name)
    }
}
