//! The native transports: redis-rs on tokio, for every deployment teams run (one node, a
//! Redlock quorum, Redis Cluster, Sentinel; TLS on each), the pub/sub wakers, and the connect
//! helpers behind [`Client::connect`], [`Client::quorum`] and [`Client::cluster`]
//! (feature `native`). docs/deployments.md says what each deployment guarantees.

mod builder;
mod cluster;
mod cluster_connect;
mod cluster_pubsub;
mod cluster_topology;
mod connection;
mod deployment;
mod ifeq;
mod live;
mod local_io;
mod loop_io;
mod node;
mod options;
mod probe;
mod pubsub;
mod redact;
mod redis_calls;
mod replication;
pub mod resp;
mod runtime;
mod scripts_run;
mod sentinel;
mod tls;
mod transport;
mod url_query;
mod warnings;

pub use builder::{ClientBuilder, DEFAULT_SYNC_TIMEOUT};
pub use cluster::ClusterTransport;
pub(crate) use local_io::concurrently;
pub use local_io::poll_here;
pub use loop_io::{poll_on_loop, EventLoop, LoopSocket, LoopWatcher};
pub use options::DeploymentOptions;
pub use replication::SyncReplicas;
pub use runtime::{worker_threads_from_env, TokioRuntime, WORKER_THREADS_VAR};
pub use scripts_run::ScriptsRun;
pub use sentinel::SentinelAuth;
pub use tls::TlsOptions;
pub use transport::RedisTransport;
pub use warnings::{Warning, WarningHandler};

pub(crate) use redis_calls::map_error;

use crate::client::Client;
use crate::error::Result;

impl Client {
    /// Connects with default settings to the deployment `url` names: one node
    /// (`redis://[user:pass@]host:port[/db]`, `rediss://` for TLS, `unix://`), a Cluster
    /// (`redis+cluster://host:port,host:port`) or Sentinel
    /// (`redis+sentinel://host:26379,host:26379/master[/db]`).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad URL; `Connection` when the node does not answer.
    pub async fn connect(url: &str) -> Result<Client> {
        Self::builder(url).connect().await
    }

    /// A builder for the deployment `url` names (see [`Client::connect`]).
    pub fn builder(url: &str) -> ClientBuilder {
        ClientBuilder::new(vec![url.to_owned()], false)
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
        ClientBuilder::new(urls.iter().map(|u| u.as_ref().to_owned()).collect(), false)
    }

    /// Connects to a Redis Cluster through any of its nodes (`redis://` or `rediss://` seed
    /// URLs); the client follows slot moves and failovers (`MOVED`/`ASK`).
    ///
    /// # Errors
    /// `InvalidArgument` for bad URLs; `Connection` when no seed node answers.
    pub async fn cluster<S: AsRef<str>>(urls: &[S]) -> Result<Client> {
        Self::cluster_builder(urls).connect().await
    }

    /// A builder for a Cluster client (see [`Client::cluster`]).
    pub fn cluster_builder<S: AsRef<str>>(urls: &[S]) -> ClientBuilder {
        ClientBuilder::new(urls.iter().map(|u| u.as_ref().to_owned()).collect(), true)
    }
}
