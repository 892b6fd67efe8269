//! The cluster connection of a [`ClusterTransport`](super::ClusterTransport): made in a task
//! of its own, which every call needing it meanwhile awaits, with the connect checks of the
//! first one ([`ClusterFacts`]).
//!
//! Why a task: made inside a call, the connect was dropped with that call at its timeout, and
//! with a seed that accepts and never answers (a paused node) redis-rs takes about that long
//! to give up on it; so every call began the connect again and none finished: a Python client
//! made while one seed was paused failed every call until the node ran again (a user trial of
//! stop 45; the Node client, whose connect no call bounds, connected in 3 s). In a task, the
//! first calls may time out, and the next find the connection made.

use super::probe::{self, Facts};
use super::redis_calls::{cluster_error, map_error, wrapped_refusal};
use super::warnings::Warnings;
use crate::error::{Error, Result};
use futures::future::{BoxFuture, FutureExt, Shared};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::Value;
use std::sync::{Arc, Mutex, OnceLock};

/// What the cluster supports, learned on the first connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClusterFacts {
    pub(crate) facts: Facts,
    pub(crate) sharded: bool,
}

/// A connection and what the cluster supports.
pub(crate) type Connected = (ClusterConnection, ClusterFacts);

/// A connect in progress, awaited by every call that needs its connection.
type Connecting = Shared<BoxFuture<'static, Result<Connected>>>;

/// What makes a cluster connection: the client and what the connect checks need.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) client: ClusterClient,
    /// A client of each seed alone (empty for one seed), for connecting again
    /// ([`connect_again`](Self::connect_again)).
    pub(crate) per_seed: Arc<Vec<ClusterClient>>,
    pub(crate) label: String,
    pub(crate) warnings: Arc<Warnings>,
    /// Sharded pub/sub as configured, instead of detected.
    pub(crate) sharded_override: Option<bool>,
}

impl Connector {
    /// A new connection; `known` facts skip the connect checks (they do not change with the
    /// connection).
    async fn connect(self, known: Option<ClusterFacts>) -> Result<Connected> {
        // A connection error (redis-rs says "Failed to create initial connections"); the
        // caller names the transport.
        let made = match known {
            Some(_) => self.connect_again().await,
            None => self.client.get_async_connection().await,
        };
        let mut conn = made.map_err(|e| {
            wrapped_refusal(&e)
                .or_else(|| not_a_cluster(&e))
                .or_else(|| super::tls::refusal_in_text(&e.to_string()))
                .unwrap_or_else(|| Error::connection(map_error(&e, &[]).message().to_owned()))
        })?;
        let facts = match known {
            Some(facts) => facts,
            None => self.probe(&mut conn).await?,
        };
        Ok((conn, facts))
    }

    /// A new connection after a call got no answer, through the first seed that answers:
    /// redis-rs makes one only once every seed has answered or timed out, so a paused seed
    /// (a master whose replica took over) held every new connection back a whole connect
    /// timeout, and the call after the one unanswered waited it out too (a user trial of
    /// stop 48: a holder's renewals so delayed lost a lock with a 6 s watchdog). The seed's
    /// view of the slots is then refreshed by redis-rs as usual (`MOVED`).
    async fn connect_again(&self) -> redis::RedisResult<ClusterConnection> {
        connect_through_first_answering(&self.client, &self.per_seed).await
    }

    /// Connect checks: the eviction policy of every master, `DELIFEQ`, sharded pub/sub.
    async fn probe(&self, conn: &mut ClusterConnection) -> Result<ClusterFacts> {
        let mut config = redis::cmd("CONFIG");
        config.arg("GET").arg("maxmemory-policy");
        let all_masters = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
        if let Ok(Value::Map(per_node)) = conn.route_command(config, all_masters).await {
            for (node, reply) in per_node {
                let node = match node {
                    Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                    Value::SimpleString(s) => s,
                    _ => continue,
                };
                probe::check_policy(&node, &reply, &self.warnings);
            }
        }
        let facts = probe::probe(conn, &self.label, &Default::default())
            .await
            .map_err(|e| cluster_error(&e, &[]))?;
        let sharded = match self.sharded_override {
            Some(s) => s,
            None => redis::cmd("PUBSUB")
                .arg("SHARDNUMSUB")
                .query_async::<Value>(conn)
                .await
                .is_ok(),
        };
        tracing::debug!(cluster = %self.label, sharded, ifeq = facts.ifeq, "connected to the cluster");
        Ok(ClusterFacts { facts, sharded })
    }

    /// A connect in a task of its own on the calling context's runtime (else run by its
    /// callers).
    fn begin(&self, known: Option<ClusterFacts>) -> Connecting {
        let connect = self.clone().connect(known);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return connect.boxed().shared();
        };
        let task = runtime.spawn(connect);
        async move {
            task.await.unwrap_or_else(|e| {
                Err(Error::connection(format!(
                    "connecting to the cluster stopped: {e}"
                )))
            })
        }
        .boxed()
        .shared()
    }
}

/// A cluster connection made through the first of `per_seed` (a client of each seed alone)
/// that answers, or through `all` (the seeds together) when there is one seed (see
/// [`Connector::connect_again`]).
pub(crate) async fn connect_through_first_answering(
    all: &ClusterClient,
    per_seed: &[ClusterClient],
) -> redis::RedisResult<ClusterConnection> {
    if per_seed.len() < 2 {
        return all.get_async_connection().await;
    }
    let tries = per_seed.iter().map(|c| Box::pin(c.get_async_connection()));
    futures::future::select_ok(tries).await.map(|(conn, _)| conn)
}

/// A client of each of `seeds` alone (none for one seed), with `on_push` when given.
pub(crate) fn per_seed_clients(
    seeds: &[super::node::NodeSpec],
    tls: &super::tls::TlsOptions,
    options: &super::transport::TransportOptions,
    on_push: Option<&super::cluster::SharedPushHandler>,
) -> Result<Vec<ClusterClient>> {
    if seeds.len() < 2 {
        return Ok(Vec::new());
    }
    seeds
        .iter()
        .map(|seed| {
            let push = on_push.map(|h| {
                let h = h.clone();
                Box::new(move |p: &redis::PushInfo| h(p)) as super::cluster::PushHandler
            });
            super::cluster::cluster_client(std::slice::from_ref(seed), tls, options, push)
        })
        .collect()
}

/// One cluster connection, made once (a failed connect is begun again by the next call).
#[derive(Default)]
pub(crate) struct ConnectionCell {
    made: OnceLock<Connected>,
    connecting: Mutex<Option<Connecting>>,
}

impl ConnectionCell {
    fn connecting(&self) -> std::sync::MutexGuard<'_, Option<Connecting>> {
        self.connecting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Its connection, once made.
    pub(crate) fn made(&self) -> Option<Connected> {
        self.made.get().cloned()
    }

    /// The facts of its connection, once made.
    pub(crate) fn facts(&self) -> Option<ClusterFacts> {
        self.made.get().map(|(_, facts)| *facts)
    }

    /// Begins its connect in the background unless one is made or in progress.
    pub(crate) fn begin(&self, connector: &Connector, known: Option<ClusterFacts>) {
        let mut connecting = self.connecting();
        if self.made.get().is_none() && connecting.is_none() {
            *connecting = Some(connector.begin(known));
        }
    }

    /// Its connection, made (or awaited) now if need be.
    ///
    /// # Errors
    /// `Connection` when no seed node can be reached; `InvalidArgument` for a seed that is no
    /// Cluster node; the connect checks' errors.
    pub(crate) async fn get(&self, connector: &Connector) -> Result<Connected> {
        if let Some((conn, facts)) = self.made.get() {
            return Ok((conn.clone(), *facts));
        }
        let connecting = {
            let mut slot = self.connecting();
            if let Some((conn, facts)) = self.made.get() {
                return Ok((conn.clone(), *facts));
            }
            slot.get_or_insert_with(|| connector.begin(None)).clone()
        };
        let result = connecting.clone().await;
        let mut slot = self.connecting();
        if slot.as_ref().is_some_and(|c| c.ptr_eq(&connecting)) {
            *slot = None;
            if let Ok(made) = &result {
                let _ = self.made.set(made.clone());
            }
        }
        match self.made.get() {
            Some((conn, facts)) => Ok((conn.clone(), *facts)),
            None => result,
        }
    }
}

/// A seed that is a single node (`cluster support disabled`), not a Cluster node: refused at
/// once (`InvalidArgument`, permanent), as a single-node client refuses a Cluster node, instead
/// of retried until the wait ends (a user trial of stop 43).
fn not_a_cluster(e: &redis::RedisError) -> Option<Error> {
    e.to_string().contains("cluster support disabled").then(|| {
        Error::invalid(
            "the seed node is not a Redis Cluster node (cluster support disabled): connect to it as a single node (a redis:// or rediss:// URL)",
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn tls_refusals_in_redis_rs_text_are_named_and_permanent() {
        // The texts a deployments trial of stop 45 got from a TLS Cluster.
        let cases = [
            (
                "Failed to create initial connections - Io: invalid peer certificate: UnknownIssuer",
                "not signed by a trusted CA",
            ),
            (
                "Failed to create initial connections - Io: received fatal alert: CertificateRequired",
                "client certificate",
            ),
        ];
        for (text, says) in cases {
            let e = super::super::tls::refusal_in_text(text).expect(text);
            assert_eq!(e.kind(), crate::ErrorKind::Connection);
            assert!(e.is_permanent() && e.message().contains(says), "{e}");
        }
        assert!(super::super::tls::refusal_in_text(
            "Failed to create initial connections - Io: Connection refused"
        )
        .is_none());
    }
}
