//! `_native.Client`: the Redis node(s) and settings, with connections made lazily and remade
//! in a forked child.
//!
//! The core client is built with `Client::from_transports` over `RedisTransport`s, which
//! connect on first use: constructing a Python `Client` touches no network (shared/API.md:
//! "lazy connect"), so a client made at import time in a pre-fork server is cheap and safe.
//! After `fork()` the child leaks the parent's core client (its connections belong to a
//! runtime whose threads are gone) and builds a new one on the next call, with a new client
//! id, so the child never owns or renews the parent's holds.

use crate::args;
use crate::errors::IntoPy;
use crate::lock::Lock;
use crate::runtime::{self, pid};
use pyo3::prelude::*;
use redlatch::{Config, RedisTransport, TokioRuntime, Transport};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Live {
    pid: u32,
    client: redlatch::Client,
}

/// What every lock and hold of a client shares.
pub(crate) struct Shared {
    urls: Vec<String>,
    config: Config,
    live: Mutex<Option<Live>>,
}

impl Shared {
    fn connect(&self, rt: &tokio::runtime::Handle) -> redlatch::Result<redlatch::Client> {
        let transports = self
            .urls
            .iter()
            .map(|u| {
                RedisTransport::new(u, self.config.network_timeout).map(|t| Arc::new(t) as Arc<dyn Transport>)
            })
            .collect::<redlatch::Result<Vec<_>>>()?;
        let runtime = Arc::new(TokioRuntime::with_handle(rt.clone()));
        redlatch::Client::from_transports(transports, runtime, self.config.clone())
    }

    /// The core client of this process and the runtime it runs on.
    pub(crate) fn client(&self) -> PyResult<(redlatch::Client, tokio::runtime::Handle)> {
        let rt = runtime::runtime()?;
        let pid = pid();
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = live.as_ref() {
            if l.pid == pid {
                return Ok((l.client.clone(), rt));
            }
        }
        if let Some(parent) = live.take() {
            std::mem::forget(parent); // see the module docs
        }
        let client = self.connect(&rt).py()?;
        *live = Some(Live {
            pid,
            client: client.clone(),
        });
        Ok((client, rt))
    }

    pub(crate) fn is_quorum(&self) -> bool {
        self.urls.len() > 1
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let live = self.live.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(l) = live {
            if l.pid != pid() {
                std::mem::forget(l);
            }
        }
    }
}

/// Connection settings and node URLs (`Client(urls, ...)`); locks come from [`Client::lock`].
#[pyclass(frozen, module = "redlatch._native")]
pub(crate) struct Client {
    pub(crate) shared: Arc<Shared>,
}

#[pymethods]
impl Client {
    /// Validates the settings and URLs; does not connect (connections are made on first use).
    ///
    /// Durations are float seconds. Raises `ValueError` for a bad URL, an empty URL list, or a
    /// bad duration (watchdog_timeout must be at least 0.003 s).
    #[new]
    #[pyo3(signature = (urls, *, watchdog_timeout=None, network_timeout=None, node_timeout=None, poll_interval=None))]
    fn new(
        urls: Vec<String>,
        watchdog_timeout: Option<&Bound<'_, PyAny>>,
        network_timeout: Option<&Bound<'_, PyAny>>,
        node_timeout: Option<&Bound<'_, PyAny>>,
        poll_interval: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if urls.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "at least one Redis URL is required",
            ));
        }
        let mut config = Config::default();
        if let Some(d) = args::opt_seconds("watchdog_timeout", watchdog_timeout, false)? {
            if d < Duration::from_millis(3) {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "watchdog_timeout must be at least 0.003 s",
                ));
            }
            config.watchdog_timeout = d;
        }
        if let Some(d) = args::opt_seconds("network_timeout", network_timeout, false)? {
            config.network_timeout = d;
        }
        config.node_timeout = args::opt_seconds("node_timeout", node_timeout, false)?;
        if let Some(d) = args::opt_seconds("poll_interval", poll_interval, false)? {
            config.poll_interval = d;
        }
        for url in &urls {
            RedisTransport::new(url, config.network_timeout).py()?;
        }
        Ok(Client {
            shared: Arc::new(Shared {
                urls,
                config,
                live: Mutex::new(None),
            }),
        })
    }

    /// The number of Redis nodes (1 = single node, more = quorum).
    #[getter]
    fn node_count(&self) -> usize {
        self.shared.urls.len()
    }

    /// The watchdog timeout in seconds (lease of locks acquired without one).
    #[getter]
    fn watchdog_timeout(&self) -> f64 {
        self.shared.config.watchdog_timeout.as_secs_f64()
    }

    /// This process's client id (a UUID; the first half of every reentrant owner id). A forked
    /// child gets a new one.
    #[getter]
    fn id(&self) -> PyResult<String> {
        Ok(self.shared.client()?.0.id().to_owned())
    }

    /// A lock handle. `reentrant` picks the Redisson RLock layout. `lease`/`wait` are seconds
    /// (`None`: watchdog mode / wait forever); `fence_ttl` seconds after the last fenced
    /// acquire the fencing counter expires (`None`: it persists). Raises `ValueError`/`TypeError`
    /// for bad input, and `ValueError` for `fenced` on a quorum client.
    #[pyo3(signature = (name, *, reentrant=false, lease=None, wait=None, fenced=false, fence_ttl=None))]
    fn lock(
        &self,
        name: String,
        reentrant: bool,
        lease: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
        fenced: bool,
        fence_ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lock> {
        args::name(&name)?;
        let lease = args::opt_seconds("lease", lease, false)?;
        let wait = args::opt_seconds("wait", wait, true)?;
        let fence_ttl = args::opt_seconds("fence_ttl", fence_ttl, false)?;
        if fenced && self.shared.is_quorum() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "fencing tokens are not offered in quorum mode",
            ));
        }
        Ok(Lock::new(
            self.shared.clone(),
            name,
            reentrant,
            lease,
            wait,
            fenced,
            fence_ttl,
        ))
    }

    /// Admin: deletes lock `name` whatever its owner. Returns True if a lock was deleted.
    /// Blocks (GIL released). Raises `RedisConnectionError`, `ValueError` for a bad name.
    fn force_unlock(&self, py: Python<'_>, name: String) -> PyResult<bool> {
        args::name(&name)?;
        let (client, rt) = self.shared.client()?;
        runtime::block(py, &rt, async move { client.force_unlock(&name).await })?.py()
    }

    /// Awaitable form of [`Client::force_unlock`].
    fn force_unlock_async<'py>(&self, py: Python<'py>, name: String) -> PyResult<Bound<'py, PyAny>> {
        args::name(&name)?;
        let (client, _) = self.shared.client()?;
        crate::aio::awaitable(py, async move { client.force_unlock(&name).await })
    }
}
