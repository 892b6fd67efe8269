//! `client.connect(id, out)`: connects a `NativeClient` to one node, a quorum, a Cluster or
//! a Sentinel master, with the core on the JavaScript thread (the local driver: local/; the
//! facade's choice for single nodes and quorums of `redis://` / `rediss://` URLs without
//! deployment options) or on tokio over redis-rs connections (every deployment). A local
//! client renews its watchdog-mode holds through a client of the same nodes on tokio
//! (`renewer`), so a blocked event loop does not let them expire.

use crate::calls::{Driver, Value};
use crate::client::NativeClient;
use crate::deployment::{warn_through, warn_with, Deployment, DeploymentWarning, WarningCallback};
use crate::error::{invalid, IntoNapi};
use crate::local::LocalTransport;
use crate::local::Scratch;
use crate::options::{opt_millis, ClientOptions};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use redlatch::protocol::quorum;
use redlatch::{Config, Error, ErrorKind, Transport};
use std::sync::Arc;

/// What `connect` needs, kept from the constructor.
pub(crate) struct Plan {
    pub(crate) urls: Vec<String>,
    pub(crate) config: Config,
    pub(crate) deployment: Deployment,
    /// The CA certificates Node trusts, for redis-rs connections without a CA option of
    /// their own (`ClientOptions::node_trusted_ca`).
    pub(crate) node_trusted_ca: Option<String>,
    pub(crate) cluster: bool,
    pub(crate) on_warning: WarningCallback,
}

impl Plan {
    /// `ERR_INVALID_ARGUMENT` unless the local driver can connect this: single nodes and
    /// quorums of `redis://` / `rediss://` URLs without deployment options (the facade picks
    /// the tokio driver for the rest).
    pub(crate) fn check_local(&self) -> napi::Result<()> {
        let plain = |u: &String| u.starts_with("redis://") || u.starts_with("rediss://");
        if self.cluster || !self.deployment.is_default() || !self.urls.iter().all(plain) {
            return Err(invalid(
                "the local engine connects to redis:// and rediss:// nodes \
                 without deployment options only",
            ));
        }
        Ok(())
    }
}

/// The core's settings from `options` (integer ms; checked).
pub(crate) fn config(options: &ClientOptions) -> napi::Result<Config> {
    let mut config = Config::default();
    // The core checks the watchdog timeout's minimum (`Config::validate`), with the words
    // the wasm entry's and every binding's error has.
    if let Some(d) = opt_millis("watchdogTimeoutMs", options.watchdog_timeout_ms, false)? {
        config.watchdog_timeout = d;
    }
    if let Some(d) = opt_millis("networkTimeoutMs", options.network_timeout_ms, false)? {
        config.network_timeout = d;
    }
    config.node_timeout = opt_millis("nodeTimeoutMs", options.node_timeout_ms, false)?;
    if let Some(d) = opt_millis("pollIntervalMs", options.poll_interval_ms, false)? {
        config.poll_interval = d;
    }
    config.validate().js()?;
    Ok(config)
}

#[napi]
impl NativeClient {
    /// Connects and settles call `id` (once). A single node must answer `PING`; in quorum
    /// mode a majority must. Rejects with `ERR_INVALID_ARGUMENT` for bad URLs,
    /// `ERR_CONNECTION` / `ERR_QUORUM` when too few nodes answer.
    #[napi]
    pub fn connect(&self, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let Some(plan) = crate::client::locked(&self.plan).take() else {
            return Err(invalid("connect() was already called"));
        };
        let shared = self.shared.clone();
        let driver = shared.driver.clone();
        let handle = driver.clone();
        // Built now, so bad deployment options throw here.
        let how = match &*handle {
            Driver::Local(..) => Err((plan.urls, plan.config, plan.node_trusted_ca, plan.on_warning)),
            Driver::Tokio(..) => Ok(tokio_builder(plan)?),
        };
        Ok(driver.call(out, id, async move {
            let client = match how {
                Err((urls, config, node_trusted_ca, on_warning)) => {
                    let on_warning = Arc::new(on_warning);
                    let renewer = renewer(&urls, config.clone(), node_trusted_ca, on_warning.clone());
                    let local = connect_local(&urls, config, &handle, on_warning.clone());
                    let (local, renewer) = futures::future::join(local, renewer).await;
                    let (client, nodes) = local?;
                    let failed = match renewer {
                        Ok(renewer) => client.renew_through(renewer).err(),
                        Err(e) => Some(e),
                    };
                    if let Some(e) = failed {
                        renewals_stay_here(&on_warning, nodes, &e);
                    }
                    crate::local::track(&shared);
                    client
                }
                Ok(builder) => builder.connect().await?,
            };
            if shared.opened(client) {
                Ok(Value::Unit)
            } else {
                Err(Error::new(ErrorKind::Connection, "the client is closed"))
            }
        }))
    }
}

/// The core's builder for `plan` (redis-rs connections on tokio, every deployment).
fn tokio_builder(plan: Plan) -> napi::Result<redlatch::ClientBuilder> {
    let Plan {
        urls,
        config,
        deployment,
        node_trusted_ca,
        cluster,
        on_warning,
    } = plan;
    let deployment = deployment.trusting(node_trusted_ca);
    let builder = if cluster {
        redlatch::Client::cluster_builder(&urls)
    } else {
        nodes_builder(&urls)
    };
    Ok(configured(deployment.apply(builder, Some(on_warning))?, &config))
}

/// The builder of a single node (one URL) or a quorum (more).
fn nodes_builder(urls: &[String]) -> redlatch::ClientBuilder {
    if urls.len() == 1 {
        redlatch::Client::builder(&urls[0])
    } else {
        redlatch::Client::quorum_builder(urls)
    }
}

/// `builder` with the core's settings of `config`.
fn configured(builder: redlatch::ClientBuilder, config: &Config) -> redlatch::ClientBuilder {
    let builder = builder
        .watchdog_timeout(config.watchdog_timeout)
        .network_timeout(config.network_timeout)
        .poll_interval(config.poll_interval);
    match config.node_timeout {
        Some(d) => builder.node_timeout(d),
        None => builder,
    }
}

/// Connects, on the addon's tokio thread, the client of `urls` through which a local client
/// renews its watchdog-mode holds (`Client::renew_through`): the renewals then go out while
/// the JavaScript thread is busy, as on the tokio engine (one per third of the watchdog
/// timeout, so their thread hops cost nothing that matters). Its connect checks report the
/// deployment warnings (an evicting `maxmemory-policy`) that the local connections do not.
async fn renewer(
    urls: &[String],
    config: Config,
    node_trusted_ca: Option<String>,
    on_warning: Arc<WarningCallback>,
) -> redlatch::Result<redlatch::Client> {
    let mut builder = warn_through(configured(nodes_builder(urls), &config), on_warning);
    if let Some(pem) = node_trusted_ca {
        builder = builder.tls(redlatch::TlsOptions::new().ca_pem(pem));
    }
    let tokio = Driver::current(false).map_err(|e| Error::new(ErrorKind::Panic, e.reason))?;
    let (sent, connected) = futures::channel::oneshot::channel();
    tokio.runtime().spawn(Box::pin(async move {
        let _ = sent.send(builder.connect().await);
    }));
    connected
        .await
        .unwrap_or_else(|_| Err(Error::new(ErrorKind::Panic, "the renewer's connect was dropped")))
}

/// The renewer could not be set up (it could not connect where the local engine did): the
/// client works, its renewals run on the JavaScript thread, and a `DeploymentWarning` of kind
/// `renewal` says so.
fn renewals_stay_here(on_warning: &WarningCallback, nodes: String, failed: &Error) {
    let message = format!(
        "redlatch: watchdog renewals of this client run on the JavaScript thread, so an event \
         loop blocked for longer than the watchdog timeout lets a hold expire: the client \
         that would renew them from the tokio thread could not be set up ({failed})"
    );
    let warning = DeploymentWarning {
        kind: "renewal".into(),
        node: nodes,
        message,
    };
    on_warning.call(warning, ThreadsafeFunctionCallMode::NonBlocking);
}

/// A client of the local driver over `urls`, and its nodes' labels (comma-separated).
async fn connect_local(
    urls: &[String],
    config: Config,
    driver: &Driver,
    on_warning: Arc<WarningCallback>,
) -> redlatch::Result<(redlatch::Client, String)> {
    let runtime = match driver {
        Driver::Local(_, runtime) => runtime.clone(),
        Driver::Tokio(..) => return Err(Error::new(ErrorKind::Panic, "not the local driver")),
    };
    // A quorum's nodes must reach servers of their own (`redlatch::QuorumServers`).
    let servers = (urls.len() > 1).then(|| Arc::new(redlatch::QuorumServers::default()));
    let transports = urls
        .iter()
        .map(|u| {
            let warn = warn_with(on_warning.clone());
            LocalTransport::new(u, config.network_timeout, runtime.clone(), warn, servers.clone())
                .map(Arc::new)
        })
        .collect::<redlatch::Result<Vec<_>>>()?;
    // Before any node is asked: a node given twice would cast two votes.
    quorum::independent(&transports.iter().map(|t| t.label()).collect::<Vec<_>>())?;
    let timeout = config.network_timeout;
    let runtime = &runtime;
    let pings = futures::future::join_all(transports.iter().map(|t| async move {
        // Retried as the core's connect retries (a connection closed as it was made).
        let ping = Box::pin(redlatch::ping_at_connect(&**runtime, timeout, || t.ping()));
        match futures::future::select(ping, redlatch::Runtime::sleep(&**runtime, timeout)).await {
            futures::future::Either::Left((r, _)) => r,
            futures::future::Either::Right(_) => Err(Error::connection(format!(
                "no answer within {} ms",
                timeout.as_millis()
            ))),
        }
    }))
    .await;
    let labels: Vec<&str> = transports.iter().map(|t| t.label()).collect();
    quorum::enough_answered(&labels, pings)?;
    let nodes = labels.join(",");
    let transports: Vec<Arc<dyn Transport>> =
        transports.into_iter().map(|t| t as Arc<dyn Transport>).collect();
    Ok((
        redlatch::Client::from_transports(transports, driver.runtime(), config)?,
        nodes,
    ))
}
