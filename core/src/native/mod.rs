//! The native transport: redis-rs multiplexed connections on tokio, the pub/sub waker and the
//! connect helpers behind [`Client::connect`] and [`Client::quorum`] (feature `native`).

mod pubsub;
mod runtime;
mod transport;

pub use runtime::TokioRuntime;
pub use transport::RedisTransport;

use crate::client::Client;
use crate::driver::{Config, Transport};
use crate::error::{Error, ErrorKind, NodeOutcome, Result};
use crate::protocol::quorum;
use std::sync::Arc;
use std::time::Duration;

/// Builds a [`Client`] with non-default settings. Made by [`Client::builder`] or
/// [`Client::quorum_builder`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    urls: Vec<String>,
    config: Config,
    runtime: Option<tokio::runtime::Handle>,
}

impl ClientBuilder {
    /// Lease of locks acquired without one (watchdog mode), renewed every third of it.
    /// Default 30 s (Redisson `lockWatchdogTimeout`). Must be at least 3 ms.
    pub fn watchdog_timeout(mut self, timeout: Duration) -> Self {
        self.config.watchdog_timeout = timeout;
        self
    }

    /// Timeout of each command on a single node and of each connection attempt; also how
    /// long consecutive errors are retried while waiting. Default 3 s.
    pub fn network_timeout(mut self, timeout: Duration) -> Self {
        self.config.network_timeout = timeout;
        self
    }

    /// Quorum mode: per-node timeout. Default `min(lease / 20, 250 ms)`.
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.config.node_timeout = Some(timeout);
        self
    }

    /// Longest pause between attempts while waiting for a busy lock (pub/sub usually wakes
    /// waiters sooner). Default 50 ms.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.config.poll_interval = interval;
        self
    }

    /// How long this client holds back from re-acquiring a lock it just handed to a waiter
    /// (anti-barging). Default 2 ms; `Duration::ZERO` disables.
    pub fn handoff_grace(mut self, grace: Duration) -> Self {
        self.config.handoff_grace = grace;
        self
    }

    /// Runs the watchdog and background releases on this runtime instead of the current one.
    pub fn runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    fn validate(&self) -> Result<()> {
        if self.urls.is_empty() {
            return Err(Error::invalid("at least one Redis URL is required"));
        }
        self.config.validate()
    }

    /// Connects. A single node must answer `PING`; in quorum mode a majority must, and the
    /// others are connected lazily when they come back.
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs or settings; `Connection` (single node) or `Quorum`
    /// when too few nodes answer within the network timeout.
    pub async fn connect(self) -> Result<Client> {
        self.validate()?;
        let transports = self
            .urls
            .iter()
            .map(|u| RedisTransport::new(u, self.config.network_timeout).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        let timeout = self.config.network_timeout;
        let pings = futures::future::join_all(transports.iter().map(|t| async move {
            match tokio::time::timeout(timeout, t.ping()).await {
                Ok(r) => r,
                Err(_) => Err(Error::connection(format!(
                    "no answer within {} ms",
                    timeout.as_millis()
                ))),
            }
        }))
        .await;
        let answered = pings.iter().filter(|p| p.is_ok()).count();
        if answered < quorum::majority(transports.len()) {
            // Each error named by its node (`host:port: why`).
            let named = |t: &RedisTransport, e: &Error| format!("{}: {}", t.label(), e.message());
            if transports.len() == 1 {
                let e = pings.into_iter().find_map(|p| p.err());
                let e = e.unwrap_or_else(|| Error::connection("unreachable"));
                return Err(Error::new(e.kind(), named(&transports[0], &e)));
            }
            let detail: Vec<String> = transports
                .iter()
                .zip(&pings)
                .filter_map(|(t, p)| p.as_ref().err().map(|e| named(t, e)))
                .collect();
            let nodes = transports
                .iter()
                .zip(&pings)
                .map(|(t, p)| NodeOutcome {
                    node: t.label().to_owned(),
                    result: p.as_ref().map(|_| ()).map_err(|e| e.message().to_owned()),
                })
                .collect();
            return Err(Error::new(
                ErrorKind::Quorum,
                format!(
                    "only {answered} of {} nodes answered: {}",
                    transports.len(),
                    detail.join("; ")
                ),
            )
            .with_nodes(nodes));
        }
        let runtime = match self.runtime {
            Some(h) => TokioRuntime::with_handle(h),
            None => TokioRuntime::current(),
        };
        let transports: Vec<Arc<dyn Transport>> =
            transports.into_iter().map(|t| t as Arc<dyn Transport>).collect();
        Client::from_transports(transports, Arc::new(runtime), self.config)
    }
}

impl Client {
    /// Connects to one Redis node with default settings (`redis://host:port[/db]`).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad URL; `Connection` when the node does not answer.
    pub async fn connect(url: &str) -> Result<Client> {
        Self::builder(url).connect().await
    }

    /// A builder for a single-node client.
    pub fn builder(url: &str) -> ClientBuilder {
        ClientBuilder {
            urls: vec![url.to_owned()],
            config: Config::default(),
            runtime: None,
        }
    }

    /// Connects to N independent Redis nodes (Redlock quorum; no replication between them).
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs; `Quorum` when fewer than a majority answer.
    pub async fn quorum<S: AsRef<str>>(urls: &[S]) -> Result<Client> {
        Self::quorum_builder(urls).connect().await
    }

    /// A builder for a quorum client.
    pub fn quorum_builder<S: AsRef<str>>(urls: &[S]) -> ClientBuilder {
        ClientBuilder {
            urls: urls.iter().map(|u| u.as_ref().to_owned()).collect(),
            config: Config::default(),
            runtime: None,
        }
    }
}
