//! [`ClientBuilder`]: every client setting, and the transports each deployment gets:
//! - one node (`redis://`, `rediss://`, `unix://`): a [`RedisTransport`] to that address;
//! - a quorum (several such URLs): one per node, independent (Redlock);
//! - a Cluster (`Client::cluster_builder(urls)` or one `redis+cluster://` URL): one
//!   [`ClusterTransport`] for the whole cluster;
//! - Sentinel (one `redis+sentinel://` URL): a [`RedisTransport`] to whichever node the
//!   sentinels name as master, asked again after a failover.

use super::cluster::ClusterTransport;
use super::connection::Source;
use super::deployment::{self, Deployment};
use super::node::node_spec;
use super::replication::SyncReplicas;
use super::sentinel::{SentinelAuth, SentinelSource};
use super::tls::TlsOptions;
use super::transport::{RedisTransport, TransportOptions};
use super::warnings::{Warning, WarningHandler, Warnings};
use super::TokioRuntime;
use crate::client::Client;
use crate::driver::{Config, Transport};
use crate::error::{Error, Result};
use crate::protocol::quorum;
use std::sync::Arc;
use std::time::Duration;

/// Default `WAIT` timeout of [`ClientBuilder::sync_replicas`] (Redisson's `slavesSyncTimeout`).
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(1);

/// Builds a [`Client`] with non-default settings. Made by [`Client::builder`],
/// [`Client::quorum_builder`] or [`Client::cluster_builder`]. Debug output shows no URL
/// (URLs may carry passwords).
#[derive(Clone)]
pub struct ClientBuilder {
    urls: Vec<String>,
    cluster: bool,
    config: Config,
    runtime: Option<tokio::runtime::Handle>,
    tls: TlsOptions,
    sentinel_auth: Option<SentinelAuth>,
    sync_replicas: Option<SyncReplicas>,
    on_warning: Option<WarningHandler>,
    sharded_pubsub: Option<bool>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("urls", &self.urls.len())
            .field("cluster", &self.cluster)
            .field("config", &self.config)
            .field("tls", &self.tls)
            .field("sentinel_auth", &self.sentinel_auth)
            .field("sync_replicas", &self.sync_replicas)
            .finish_non_exhaustive()
    }
}

/// A native transport before it is type-erased: what `connect` pings.
enum Native {
    Node(Arc<RedisTransport>),
    Cluster(Arc<ClusterTransport>),
}

impl Native {
    fn label(&self) -> &str {
        match self {
            Native::Node(t) => t.label(),
            Native::Cluster(t) => t.label(),
        }
    }

    async fn ping(&self) -> Result<()> {
        match self {
            Native::Node(t) => t.ping().await,
            Native::Cluster(t) => t.ping().await,
        }
    }

    fn erase(self) -> Arc<dyn Transport> {
        match self {
            Native::Node(t) => t,
            Native::Cluster(t) => t,
        }
    }
}

impl ClientBuilder {
    pub(crate) fn new(urls: Vec<String>, cluster: bool) -> Self {
        ClientBuilder {
            urls,
            cluster,
            config: Config::default(),
            runtime: None,
            tls: TlsOptions::default(),
            sentinel_auth: None,
            sync_replicas: None,
            on_warning: None,
            sharded_pubsub: None,
        }
    }

    /// Lease of locks acquired without one (watchdog mode), renewed every third of it.
    /// Default 30 s (Redisson `lockWatchdogTimeout`). Must be at least 3 ms.
    pub fn watchdog_timeout(mut self, timeout: Duration) -> Self {
        self.config.watchdog_timeout = timeout;
        self
    }

    /// Timeout of each command on a single node and of each connection attempt; also how
    /// long consecutive errors are retried by a wait without an end (a wait with one retries
    /// them until it ends). Default 3 s.
    pub fn network_timeout(mut self, timeout: Duration) -> Self {
        self.config.network_timeout = timeout;
        self
    }

    /// Quorum mode: per-node timeout. Default `min(lease / 20, 250 ms)`; with
    /// [`sync_replicas`](Self::sync_replicas), the `WAIT` timeout plus 250 ms (at most the
    /// network timeout), since each node waits for its replicas before it answers. Must then
    /// be above the `WAIT` timeout.
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.config.node_timeout = Some(timeout);
        self
    }

    /// Longest pause between attempts while waiting for a busy lease or fair lock, or without
    /// pub/sub (release messages usually wake waiters sooner). Default 50 ms. Waiters of
    /// Redisson's other kinds that hear every node poll at most every `max(interval, 1 s)`
    /// (see [`Config::poll_interval`](crate::Config)).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.config.poll_interval = interval;
        self
    }

    /// How long this client holds back from re-acquiring a lock it just handed to a waiter
    /// in another client or process (anti-barging). Default 2 ms; `Duration::ZERO` disables.
    /// Waiters of this client need none: a new acquire of a lease lock queues behind them.
    pub fn handoff_grace(mut self, grace: Duration) -> Self {
        self.config.handoff_grace = grace;
        self
    }

    /// Runs the watchdog and background releases on this runtime instead of the current one.
    pub fn runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// TLS settings for `rediss://` (and `rediss+cluster://`, `rediss+sentinel://`) URLs:
    /// CA, client certificate (mutual TLS), server name, the insecure switch. Without them a
    /// `rediss://` URL verifies against the system roots.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = tls;
        self
    }

    /// Credentials of the sentinels themselves (`redis+sentinel://` URLs; the URL's own
    /// credentials are the data nodes').
    pub fn sentinel_auth(mut self, username: Option<&str>, password: &str) -> Self {
        self.sentinel_auth = Some(SentinelAuth {
            username: username.map(str::to_owned),
            password: password.to_owned(),
        });
        self
    }

    /// Replication safety (Redisson's `checkLockSyncedSlaves`): after each acquire, extend
    /// and watchdog renewal, `WAIT replicas` for up to [`DEFAULT_SYNC_TIMEOUT`] (see
    /// [`sync_replicas_timeout`](Self::sync_replicas_timeout)). Too few acknowledgements make
    /// an acquire fail (`NotAcquired`, the grant rolled back) and a renewal not count (the
    /// hold is reported lost when its validity runs out). Off by default; `0` turns it off.
    pub fn sync_replicas(mut self, replicas: u32) -> Self {
        self.sync_replicas = (replicas > 0).then(|| SyncReplicas {
            replicas,
            timeout: self.sync_replicas.map_or(DEFAULT_SYNC_TIMEOUT, |s| s.timeout),
        });
        self
    }

    /// How long each `WAIT` of [`sync_replicas`](Self::sync_replicas) may block; less than
    /// the network timeout. Default 1 s.
    pub fn sync_replicas_timeout(mut self, timeout: Duration) -> Self {
        if let Some(s) = self.sync_replicas.as_mut() {
            s.timeout = timeout;
        } else {
            self.sync_replicas = Some(SyncReplicas { replicas: 0, timeout });
        }
        self
    }

    /// Called with each deployment warning (a `maxmemory-policy` that may evict lock keys, a
    /// user denied `SUBSCRIBE`, a renewal too few replicas confirmed, a quorum node that did
    /// not confirm a release: [`Warning::kind`]), once per node and kind, from a runtime
    /// thread. Warnings are also `tracing` events.
    pub fn on_warning(mut self, handler: impl Fn(&Warning) + Send + Sync + 'static) -> Self {
        self.on_warning = Some(Arc::new(handler));
        self
    }

    /// Cluster only: force sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`) on or off instead of
    /// detecting it. Both sides of a lock (releasers and waiters, Redisson included) must
    /// agree; the default detection matches Redisson 4.7 on Redis 7+.
    pub fn sharded_pubsub(mut self, on: bool) -> Self {
        self.sharded_pubsub = Some(on);
        self
    }

    fn validate(&self) -> Result<()> {
        if self.urls.is_empty() {
            return Err(Error::invalid("at least one Redis URL is required"));
        }
        self.config.validate()?;
        if let Some(s) = self.sync_replicas {
            if s.replicas > 0 && (s.timeout.is_zero() || s.timeout >= self.config.network_timeout) {
                return Err(Error::invalid(format!(
                    "sync_replicas timeout must be above 0 and below the network timeout ({} ms)",
                    self.config.network_timeout.as_millis()
                )));
            }
            // A node answers once its replicas confirmed (or the WAIT ran out): a node timeout
            // below that reports every node as not answering (a user trial of stop 42).
            match self.config.node_timeout {
                Some(t) if self.is_quorum() && s.replicas > 0 && t <= s.timeout => {
                    return Err(Error::invalid(format!(
                        "a quorum's node timeout ({} ms) must be above its sync_replicas timeout ({} ms): each node waits for its replicas before it answers",
                        t.as_millis(),
                        s.timeout.as_millis()
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn is_quorum(&self) -> bool {
        !self.cluster && self.urls.len() > 1
    }

    /// The driver's settings: a quorum with `sync_replicas` and no node timeout of its own
    /// waits for each node's `WAIT` (see [`node_timeout`](Self::node_timeout)).
    fn client_config(&self) -> Config {
        let mut config = self.config.clone();
        if let Some(s) = self.sync_replicas.filter(|s| s.replicas > 0 && self.is_quorum()) {
            let margin = Duration::from_millis(250);
            config.node_timeout = config
                .node_timeout
                .or(Some((s.timeout + margin).min(config.network_timeout)));
        }
        config
    }

    fn transport_options(&self) -> TransportOptions {
        TransportOptions {
            network_timeout: self.config.network_timeout,
            sync_replicas: self.sync_replicas.filter(|s| s.replicas > 0),
            warnings: Arc::new(Warnings::new(self.on_warning.clone())),
            // A quorum's nodes must reach servers of their own (`independence.rs`).
            servers: self.is_quorum().then(Arc::default),
        }
    }

    fn transports(&self) -> Result<Vec<Native>> {
        let options = self.transport_options();
        let cluster = |seeds: &[String]| -> Result<Native> {
            let specs = seeds
                .iter()
                .map(|u| node_spec(u, &self.tls))
                .collect::<Result<Vec<_>>>()?;
            let t = ClusterTransport::new(specs, &self.tls, options.clone(), self.sharded_pubsub)?;
            Ok(Native::Cluster(t))
        };
        let parsed = self
            .urls
            .iter()
            .map(|u| deployment::parse(u))
            .collect::<Result<Vec<_>>>()?;
        // The sentinels' own credentials mean nothing elsewhere; silently unused, a user
        // would believe them in effect (TLS options on a plain URL are refused likewise).
        if self.sentinel_auth.is_some() && !matches!(parsed.as_slice(), [Deployment::Sentinel(_)]) {
            return Err(Error::invalid(
                "sentinel credentials were given for a URL that is not redis+sentinel:// (they are the sentinels' own; the URL's are the data nodes')",
            ));
        }
        if self.cluster {
            let mut seeds = Vec::new();
            for d in parsed {
                match d {
                    Deployment::Node(u) => seeds.push(u),
                    Deployment::Cluster(s) => seeds.extend(s),
                    Deployment::Sentinel(_) => {
                        return Err(Error::invalid(
                            "a Cluster client takes Cluster node URLs, not redis+sentinel://",
                        ))
                    }
                }
            }
            return Ok(vec![cluster(&seeds)?]);
        }
        if let [single] = parsed.as_slice() {
            match single {
                Deployment::Cluster(seeds) => return Ok(vec![cluster(seeds)?]),
                Deployment::Sentinel(spec) => {
                    let source = SentinelSource::new(spec, self.sentinel_auth.as_ref(), &self.tls)?;
                    let label = format!("{} via Sentinel", spec.master);
                    let t = RedisTransport::from_source(label, Source::Sentinel(Arc::new(source)), options);
                    return Ok(vec![Native::Node(Arc::new(t))]);
                }
                Deployment::Node(_) => {}
            }
        }
        // Calling-thread I/O for one node only: a quorum's nodes are asked concurrently.
        let single = parsed.len() == 1;
        let nodes = parsed
            .into_iter()
            .map(|d| match d {
                Deployment::Node(url) => {
                    let spec = node_spec(&url, &self.tls)?;
                    let t = RedisTransport::fixed(spec, options.clone());
                    Ok(Native::Node(Arc::new(if single { t.with_local_io() } else { t })))
                }
                _ => Err(Error::invalid(
                    "a quorum is made of independent single nodes (redis:// or rediss:// URLs), not Cluster or Sentinel URLs",
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        // Checked here, so `check` and `connect` refuse it before any node is asked.
        quorum::independent(&nodes.iter().map(|t| t.label()).collect::<Vec<_>>())?;
        Ok(nodes)
    }

    fn runtime_handle(&self) -> Result<TokioRuntime> {
        match &self.runtime {
            Some(h) => Ok(TokioRuntime::with_handle(h.clone())),
            None => tokio::runtime::Handle::try_current()
                .map(TokioRuntime::with_handle)
                .map_err(|_| {
                    Error::invalid("no tokio runtime: call from inside one or pass ClientBuilder::runtime")
                }),
        }
    }

    /// Checks the URLs and settings (certificate files are read) without connecting.
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs or settings.
    pub fn check(&self) -> Result<()> {
        self.validate()?;
        self.transports().map(drop)
    }

    /// What errors will call each of the client's nodes, without connecting: `host:port`, a
    /// Cluster's `"cluster (seed host:port)"`, Sentinel's `"<master> via Sentinel"`; one per
    /// quorum node. Never a credential.
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs or settings (as [`check`](Self::check)).
    pub fn node_labels(&self) -> Result<Vec<String>> {
        self.validate()?;
        Ok(self.transports()?.iter().map(|t| t.label().to_owned()).collect())
    }

    /// The number of transports the client will have: 1 for a single node, a Cluster or
    /// Sentinel; N for a quorum of N nodes.
    pub fn node_count(&self) -> usize {
        if self.cluster {
            1
        } else {
            self.urls.len()
        }
    }

    /// Builds the client without connecting: connections are made on first use (the Python
    /// binding's "lazy connect"). Needs [`runtime`](Self::runtime) or a current runtime.
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs or settings.
    pub fn build_lazy(self) -> Result<Client> {
        self.validate()?;
        let runtime = self.runtime_handle()?;
        let _entered = self.runtime.as_ref().map(|h| h.enter());
        let transports = self.transports()?.into_iter().map(Native::erase).collect();
        let client = Client::from_transports(transports, Arc::new(runtime), self.client_config())?;
        client.engine.nodes.connect_lazily();
        Ok(client)
    }

    /// Connects. A single node (or the Cluster, or the Sentinel master) must answer `PING`;
    /// in quorum mode a majority must, and the others are connected lazily when they come back.
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs or settings; `Connection` (single node, Cluster,
    /// Sentinel; TLS failures say which) or `Quorum` when too few nodes answer within the
    /// network timeout.
    pub async fn connect(self) -> Result<Client> {
        self.validate()?;
        let transports = self.transports()?;
        let timeout = self.config.network_timeout;
        let runtime = match self.runtime.clone() {
            Some(h) => TokioRuntime::with_handle(h),
            None => TokioRuntime::current(),
        };
        let clock = &runtime;
        let pings = futures::future::join_all(transports.iter().map(|t| async move {
            let ping = crate::driver::ping_at_connect(clock, timeout, || t.ping());
            match tokio::time::timeout(timeout * 2, ping).await {
                Ok(r) => r,
                Err(_) => Err(Error::connection(format!(
                    "no answer within {} ms",
                    (timeout * 2).as_millis()
                ))),
            }
        }))
        .await;
        let labels: Vec<&str> = transports.iter().map(|t| t.label()).collect();
        quorum::enough_answered(&labels, pings)?;
        let config = self.client_config();
        let transports = transports.into_iter().map(Native::erase).collect();
        Client::from_transports(transports, Arc::new(runtime), config)
    }
}
