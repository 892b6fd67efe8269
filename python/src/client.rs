//! `_native.Client`: the Redis node(s) and settings, with connections made lazily and remade
//! in a forked child.
//!
//! The core client is built with `ClientBuilder::build_lazy`, whose transports connect on
//! first use: constructing a Python `Client` touches no network (shared/API.md: "lazy
//! connect"), so a client made at import time in a pre-fork server is cheap and safe. The
//! builder (URLs, settings, TLS, Sentinel, `sync_replicas`) is kept to build again.
//! Deployment warnings (an evicting `maxmemory-policy`) go to `warnings.warn` with
//! `redlatch.DeploymentWarning`.
//! After `fork()` the child leaks the parent's core client (its connections belong to a
//! runtime whose threads are gone) and builds a new one on the next call, with a new client
//! id, so the child never owns or renews the parent's holds.

use crate::args;
use crate::errors::IntoPy;
use crate::lock::Lock;
use crate::runtime::{self, pid};
use pyo3::prelude::*;
use redlatch::{ClientBuilder, DeploymentOptions, Warning};
use std::sync::{Arc, Mutex};
use std::time::Duration;

struct Live {
    pid: u32,
    client: redlatch::Client,
}

/// What every lock and hold of a client shares.
pub(crate) struct Shared {
    builder: ClientBuilder,
    node_count: usize,
    node_labels: Vec<String>,
    watchdog_timeout: Duration,
    live: Mutex<Option<Live>>,
}

/// Reports a deployment warning through Python's `warnings` module (skipped while the
/// interpreter is finalizing).
fn warn(w: &Warning) {
    let message = w.message.clone();
    Python::try_attach(|py| {
        let category = py
            .import("redlatch")
            .and_then(|m| m.getattr("DeploymentWarning"))
            .unwrap_or_else(|_| py.get_type::<pyo3::exceptions::PyUserWarning>().into_any());
        if let Err(e) = py
            .import("warnings")
            .and_then(|w| w.call_method1("warn", (message, category)))
        {
            // A filter turned warnings into errors: nothing can raise here; show it instead.
            e.print(py);
        }
    });
}

impl Shared {
    fn connect(&self, rt: &tokio::runtime::Handle) -> redlatch::Result<redlatch::Client> {
        self.builder.clone().runtime(rt.clone()).build_lazy()
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
        self.node_count > 1
    }
}

impl Client {
    fn semaphore_args(
        &self,
        name: &str,
        permits: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Option<u64>, Option<Duration>)> {
        args::name(name)?;
        let permits = match permits {
            Some(p) if !p.is_none() => Some(args::count("permits", p)?),
            _ => None,
        };
        Ok((permits, args::opt_seconds("wait", wait, true)?))
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
    /// Durations are float seconds. `cluster`: the URLs are seed nodes of a Redis Cluster.
    /// TLS (`rediss://`): `tls_ca_file` or `tls_ca_pem` replace the system roots,
    /// `tls_cert_file` + `tls_key_file` (or the `_pem` pair) present a client certificate,
    /// `tls_server_name` is verified instead of the URL's host, `tls_insecure` accepts any
    /// certificate. `sentinel_username` / `sentinel_password`: the sentinels' own
    /// credentials. `sync_replicas`: replicas that must confirm each grant and renewal
    /// (`WAIT`, within `sync_replicas_timeout` seconds, default 1). Raises `ValueError` for a
    /// bad URL or setting, an unreadable certificate file, or an empty URL list.
    #[new]
    #[pyo3(signature = (urls, *, watchdog_timeout=None, network_timeout=None, node_timeout=None, poll_interval=None, cluster=false, tls_ca_file=None, tls_ca_pem=None, tls_cert_file=None, tls_key_file=None, tls_cert_pem=None, tls_key_pem=None, tls_server_name=None, tls_insecure=false, sentinel_username=None, sentinel_password=None, sync_replicas=0, sync_replicas_timeout=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        urls: Vec<String>,
        watchdog_timeout: Option<&Bound<'_, PyAny>>,
        network_timeout: Option<&Bound<'_, PyAny>>,
        node_timeout: Option<&Bound<'_, PyAny>>,
        poll_interval: Option<&Bound<'_, PyAny>>,
        cluster: bool,
        tls_ca_file: Option<std::path::PathBuf>,
        tls_ca_pem: Option<args::Pem>,
        tls_cert_file: Option<std::path::PathBuf>,
        tls_key_file: Option<std::path::PathBuf>,
        tls_cert_pem: Option<args::Pem>,
        tls_key_pem: Option<args::Pem>,
        tls_server_name: Option<String>,
        tls_insecure: bool,
        sentinel_username: Option<String>,
        sentinel_password: Option<String>,
        sync_replicas: u32,
        sync_replicas_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if urls.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "at least one Redis URL is required",
            ));
        }
        let mut builder = if cluster {
            redlatch::Client::cluster_builder(&urls)
        } else {
            redlatch::Client::quorum_builder(&urls)
        };
        let mut watchdog = redlatch::Config::default().watchdog_timeout;
        if let Some(d) = args::opt_seconds("watchdog_timeout", watchdog_timeout, false)? {
            if d < Duration::from_millis(3) {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "watchdog_timeout must be at least 0.003 s",
                ));
            }
            watchdog = d;
            builder = builder.watchdog_timeout(d);
        }
        if let Some(d) = args::opt_seconds("network_timeout", network_timeout, false)? {
            builder = builder.network_timeout(d);
        }
        if let Some(d) = args::opt_seconds("node_timeout", node_timeout, false)? {
            builder = builder.node_timeout(d);
        }
        if let Some(d) = args::opt_seconds("poll_interval", poll_interval, false)? {
            builder = builder.poll_interval(d);
        }
        let deployment = DeploymentOptions {
            tls_ca_file,
            tls_ca_pem: tls_ca_pem.map(|p| p.0),
            tls_cert_file,
            tls_key_file,
            tls_cert_pem: tls_cert_pem.map(|p| p.0),
            tls_key_pem: tls_key_pem.map(|p| p.0),
            tls_server_name,
            tls_insecure,
            sentinel_username,
            sentinel_password,
            sync_replicas,
            sync_replicas_timeout: args::opt_seconds("sync_replicas_timeout", sync_replicas_timeout, false)?,
        };
        let builder = deployment.apply(builder).py()?.on_warning(warn);
        let node_labels = builder.node_labels().py()?; // checks the URLs and settings
        Ok(Client {
            shared: Arc::new(Shared {
                node_count: builder.node_count(),
                node_labels,
                watchdog_timeout: watchdog,
                builder,
                live: Mutex::new(None),
            }),
        })
    }

    /// The number of Redis nodes (1 = single node, more = quorum).
    #[getter]
    fn node_count(&self) -> usize {
        self.shared.node_count
    }

    /// Each node as errors name it (`"host:port"`, `"cluster (seed host:port)"`, `"<master> via
    /// Sentinel"`; one per quorum node), without credentials.
    #[getter]
    fn node_labels(&self) -> Vec<String> {
        self.shared.node_labels.clone()
    }

    /// The watchdog timeout in seconds (lease of locks acquired without one).
    #[getter]
    fn watchdog_timeout(&self) -> f64 {
        self.shared.watchdog_timeout.as_secs_f64()
    }

    /// This process's client id (a UUID; the first half of every reentrant owner id). A forked
    /// child gets a new one.
    #[getter]
    fn id(&self) -> PyResult<String> {
        Ok(self.shared.client()?.0.id().to_owned())
    }

    /// A lock handle. `kind`: `"lease"` (`lock`), `"reentrant"` (`rlock`, Redisson RLock),
    /// `"fair"` (RFairLock), `"read"` / `"write"` (the two sides of RReadWriteLock).
    /// `lease`/`wait` are seconds
    /// (`None`: watchdog mode / wait forever); `fence_ttl` seconds after the last fenced
    /// acquire the fencing counter expires (`None`: it persists). Raises `ValueError`/`TypeError`
    /// for bad input, and `ValueError` for `fenced` on a quorum client.
    #[pyo3(signature = (name, *, kind="lease", lease=None, wait=None, fenced=None, fence_ttl=None))]
    fn lock(
        &self,
        name: String,
        kind: &str,
        lease: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
        fenced: Option<&Bound<'_, PyAny>>,
        fence_ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lock> {
        args::name(&name)?;
        let fenced = fenced.map_or(Ok(false), |f| args::flag("fenced", f))?;
        let kind = crate::lock::parse_kind(kind)?;
        let lease = args::opt_seconds("lease", lease, false)?;
        let wait = args::opt_seconds("wait", wait, true)?;
        let fence_ttl = args::opt_seconds("fence_ttl", fence_ttl, false)?;
        if fenced && self.shared.is_quorum() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "fencing tokens are not offered in quorum mode",
            ));
        }
        let lock = Lock::new(self.shared.clone(), name, kind, lease, wait, fenced, fence_ttl);
        // The core's checks of the options together (a fenced read lock: a user trial found
        // it refused only at acquire).
        lock.core(None)?.0.check().py()?;
        Ok(lock)
    }

    /// A semaphore handle (Redisson RSemaphore). `permits`: set with `try_set_permits` before
    /// the handle's first call; `wait` seconds (None = until acquired). Raises `ValueError`
    /// for a bad name, count or wait. Sends nothing.
    #[pyo3(signature = (name, *, permits=None, wait=None))]
    fn semaphore(
        &self,
        name: String,
        permits: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::semaphore::Semaphore> {
        let (permits, wait) = self.semaphore_args(&name, permits, wait)?;
        Ok(crate::semaphore::Semaphore::new(
            self.shared.clone(),
            name,
            permits,
            wait,
        ))
    }

    /// A permit-expirable semaphore handle (Redisson RPermitExpirableSemaphore); arguments as
    /// for [`Client::semaphore`].
    #[pyo3(signature = (name, *, permits=None, wait=None))]
    fn permit_semaphore(
        &self,
        name: String,
        permits: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::permit::PermitSemaphore> {
        let (permits, wait) = self.semaphore_args(&name, permits, wait)?;
        Ok(crate::permit::PermitSemaphore::new(
            self.shared.clone(),
            name,
            permits,
            wait,
        ))
    }

    /// A count-down latch handle (Redisson RCountDownLatch). Raises `ValueError` for a bad name.
    fn count_down_latch(&self, name: String) -> PyResult<crate::latch::CountDownLatch> {
        args::name(&name)?;
        Ok(crate::latch::CountDownLatch::new(self.shared.clone(), name))
    }

    /// A multi-lock over `members` (`Lock` handles of this client and names of lease locks).
    /// `lease` seconds applies to every member; `wait` seconds for the whole set. Raises
    /// `ValueError` for an empty set, duplicate names, a lock of another client or bad
    /// durations, `TypeError` for a member of another type.
    #[pyo3(signature = (members, *, lease=None, wait=None))]
    fn multi_lock(
        &self,
        members: Vec<Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<crate::multi::MultiLock> {
        let lease = args::opt_seconds("lease", lease, false)?;
        let wait = args::opt_seconds("wait", wait, true)?;
        let mut out = Vec::with_capacity(members.len());
        for m in members {
            if let Ok(lock) = m.cast::<Lock>() {
                out.push(crate::multi::Member::Lock(lock.clone().unbind()));
            } else if m.is_instance_of::<pyo3::types::PyString>() {
                // A str without a UTF-8 form (a lone surrogate) raises UnicodeEncodeError, as
                // a lock's name does, not "must be locks or str, not str" (a user trial).
                let name = m.extract::<String>()?;
                args::name(&name)?;
                out.push(crate::multi::Member::Name(name));
            } else {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "multi_lock members must be locks or str, not {}",
                    m.get_type().name()?
                )));
            }
        }
        crate::multi::MultiLock::new(self.shared.clone(), out, lease, wait)
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
