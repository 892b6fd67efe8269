//! [`ClusterTransport`]: a Redis Cluster as one transport, over redis-rs's async cluster
//! client (slot routing, `MOVED`/`ASK` redirects, topology refresh after a failover).
//!
//! Every script of one lock touches keys of one slot: companion keys carry the lock name as
//! a hash tag (`prefix:{N}`, shared/WIRE.md), so a script is routed by its first key. Two
//! requests are adjusted here:
//! - the watchdog's batch renewal names many locks; it is split into one call per slot,
//!   sent concurrently, and the flags are put back in order;
//! - release scripts publish with `SPUBLISH` when the cluster has sharded pub/sub (Redis and
//!   Valkey 7+, detected with `PUBSUB SHARDNUMSUB`), as Redisson 4.7 does in Cluster, and
//!   waiters `SSUBSCRIBE`; plain `PUBLISH`/`SUBSCRIBE` otherwise.
//!
//! `WAIT` (sync_replicas) goes to the master of the lock's slot, the node that ran the write.

use super::cluster_connect::{ClusterFacts, Connected, ConnectionCell, Connector};
use super::cluster_pubsub::ClusterSubscriber;
use super::node::NodeSpec;
use super::redis_calls::{cluster_error, eval_script, run_plain};
use super::replication;
use super::transport::TransportOptions;
use super::warnings::Warning;
use super::{ifeq, tls::TlsOptions};
use crate::driver::{BoxFut, Subscription, Transport};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::{Request, PUBLISH};
use crate::protocol::scripts;
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, Slot, SlotAddr};
use redis::{TlsMode, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, Weak};

/// A Redis Cluster reached with redis-rs.
pub struct ClusterTransport {
    label: String,
    connector: Connector,
    /// The cluster connection, made on first use; replaced by a new one (a new topology from
    /// the seeds) after a call that got no answer ([`Unanswered`]).
    conn: Mutex<Arc<ConnectionCell>>,
    subscriber: ClusterSubscriber,
    options: TransportOptions,
    /// A script was answered without an error: plain forms may stand in for scripts
    /// (`ScriptsRun::may_go_plain`).
    scripts_allowed: std::sync::atomic::AtomicBool,
    /// Itself, for the topology poll (cluster_topology.rs), which it starts on its first call.
    me: Weak<ClusterTransport>,
    polling: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for ClusterTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTransport")
            .field("seeds", &self.label)
            .finish()
    }
}

/// What the subscriber's cluster client does with each push message.
pub(crate) type PushHandler = Box<dyn Fn(&redis::PushInfo) + Send + Sync>;

/// A push handler shared by several cluster clients (the subscriber's, one per seed).
pub(crate) type SharedPushHandler = Arc<dyn Fn(&redis::PushInfo) + Send + Sync>;

/// The cluster client for `seeds` (RESP3 and `on_push` for the subscriber's).
pub(crate) fn cluster_client(
    seeds: &[NodeSpec],
    tls: &TlsOptions,
    options: &TransportOptions,
    on_push: Option<PushHandler>,
) -> Result<ClusterClient> {
    let infos = seeds.iter().map(|s| s.info.clone());
    let timeout = options.network_timeout;
    let mut b = ClusterClientBuilder::new(infos)
        .connection_timeout(timeout)
        .response_timeout(timeout)
        // A redirect after a failover or migration is retried at once, not after 1.28 s.
        .retries(8)
        .min_retry_wait(10)
        .max_retry_wait(500);
    if seeds.iter().any(|s| s.tls_name().is_some()) {
        b = b.certs(tls.certificates()?);
        if tls.insecure() {
            b = b.tls(TlsMode::Insecure);
        }
    }
    if let Some(on_push) = on_push {
        b = b
            .use_protocol(redis::ProtocolVersion::RESP3)
            .push_sender(move |push: redis::PushInfo| {
                on_push(&push);
                Ok::<(), std::convert::Infallible>(())
            });
    }
    b.build()
        .map_err(|e| Error::invalid(format!("bad Cluster setup: {e}")))
}

impl ClusterTransport {
    pub(crate) fn new(
        seeds: Vec<NodeSpec>,
        tls: &TlsOptions,
        options: TransportOptions,
        sharded_override: Option<bool>,
    ) -> Result<Arc<Self>> {
        if tls.server_name_override().is_some() {
            return Err(Error::invalid(
                "the TLS server name option applies to single nodes; Cluster nodes are verified by the addresses they announce",
            ));
        }
        // The seed is not the node that serves a request: said so, so that an error about a
        // request does not seem to name the node that failed (a user trial of stop 36 read it
        // so); timeouts add the key slot (`locate`).
        let label = format!(
            "cluster (seed {})",
            seeds.first().map_or("", |s| s.label.as_str())
        );
        let per_seed = super::cluster_connect::per_seed_clients(&seeds, tls, &options, None)?;
        let connector = Connector {
            client: cluster_client(&seeds, tls, &options, None)?,
            per_seed: Arc::new(per_seed),
            label: label.clone(),
            warnings: options.warnings.clone(),
            sharded_override,
        };
        let subscriber = ClusterSubscriber::new(&seeds, tls, &options)?;
        Ok(Arc::new_cyclic(|me| ClusterTransport {
            connector,
            subscriber,
            conn: Mutex::default(),
            label,
            options,
            scripts_allowed: Default::default(),
            me: me.clone(),
            polling: Default::default(),
        }))
    }

    /// The current connection's cell.
    pub(super) fn cell(&self) -> Arc<ConnectionCell> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The client's network timeout (each call's bound).
    pub(super) fn network_timeout(&self) -> std::time::Duration {
        self.options.network_timeout
    }

    /// Starts the topology poll once, in a task on the calling context's runtime.
    fn poll_topology(&self) {
        if self.polling.load(Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.polling.swap(true, Relaxed) {
            runtime.spawn(super::cluster_topology::poll(self.me.clone()));
        }
    }

    /// The topology poll saw other masters serving the slots than when `cell`'s connection
    /// was checked: connects again as after a call that got no answer.
    pub(super) fn topology_changed(&self, cell: &Arc<ConnectionCell>) {
        tracing::debug!(cluster = %self.label, "the slots' masters changed: connecting to the cluster again");
        self.forget(cell);
    }

    /// Replaces `cell`'s connection if it is still the current one by a new one, made from
    /// the seeds (a new topology). redis-rs' cluster connection re-reads the slots after a refused
    /// connection or a redirect, but keeps sending to a node that accepts and never answers
    /// (a paused master whose replica was promoted: a user trial of stop 41 saw a client made
    /// before the pause fail until the old master was resumed).
    ///
    /// The new connection is made in a task of its own, which the calls meanwhile wait for:
    /// made by a call, it would be dropped with that call at its timeout, and redis-rs may
    /// take that long to give up on the frozen node among the seeds.
    fn forget(&self, cell: &Arc<ConnectionCell>) {
        let Some(facts) = cell.facts() else {
            return; // still connecting: that connection is new already
        };
        let mut current = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if !Arc::ptr_eq(&current, cell) {
            return;
        }
        let fresh: Arc<ConnectionCell> = Arc::default();
        // The cluster's facts do not change with the connection.
        fresh.begin(&self.connector, Some(facts));
        *current = fresh;
        // The subscriber's connection may be held by the same silent node, with no push to
        // tell it (see cluster_pubsub).
        self.subscriber.renew();
    }

    async fn connection(&self) -> Result<Connected> {
        self.connection_in(&self.cell()).await
    }

    async fn connection_in(&self, cell: &ConnectionCell) -> Result<Connected> {
        let made = cell.get(&self.connector).await;
        if made.is_ok() {
            self.poll_topology();
        }
        made
    }

    /// Connects now (if not yet) and checks the cluster answers `PING`.
    ///
    /// # Errors
    /// `Connection` when no seed node can be reached.
    pub async fn ping(&self) -> Result<()> {
        let (mut conn, _) = self.connection().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| cluster_error(&e, &[]))
    }

    async fn run_one(
        &self,
        conn: &mut ClusterConnection,
        facts: ClusterFacts,
        request: &Request,
    ) -> Result<Reply> {
        // Checked before sending: a plain `SET` would succeed where its script could not.
        if let Some(first) = request.keys.first() {
            let slot = Slot::for_key(first);
            if request.keys.iter().any(|k| Slot::for_key(k) != slot) {
                return Err(cross_slot(request));
            }
        }
        let result = if facts.facts.ifeq && ifeq::handles(request) {
            ifeq::run(conn, request, None).await
        } else if let Some(plain) = request
            .plain
            .as_ref()
            .filter(|_| self.scripts_allowed.load(Relaxed))
        {
            run_plain(conn, plain).await
        } else {
            let reply = eval_script(conn, request, None).await;
            if reply.is_ok() {
                self.scripts_allowed.store(true, Relaxed);
            }
            reply
        };
        let reply = result.map_err(|e| self.failed(&e, request))?;
        if let Some(sync) = self.options.sync_replicas {
            if let Some(what) = replication::write_to_confirm(request, &reply) {
                let route = Route::with_key(&request.keys[0], SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                let acks = conn
                    .route_command(replication::wait_command(sync), routing)
                    .await
                    .map_err(|e| self.failed(&e, request))?;
                let acks = if let Value::Int(n) = acks { n } else { 0 };
                if acks < i64::from(sync.replicas) {
                    return Err(replication::too_few(what, request, acks, sync, &self.label));
                }
            }
        }
        Ok(reply)
    }

    fn failed(&self, e: &redis::RedisError, request: &Request) -> Error {
        if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::CrossSlot) {
            return cross_slot(request);
        }
        // Unprefixed: the driver names the node (the cluster's label) in front of every error.
        cluster_error(e, &request.args)
    }

    /// Renews a batch whose locks live in several slots: one call per slot.
    async fn renew_by_slot(
        &self,
        conn: &ClusterConnection,
        facts: ClusterFacts,
        request: &Request,
    ) -> Result<Reply> {
        let mut groups: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (i, key) in request.keys.iter().enumerate() {
            groups.entry(Slot::for_key(key)).or_default().push(i);
        }
        if groups.len() <= 1 {
            return self.run_one(&mut conn.clone(), facts, request).await;
        }
        let calls = groups.into_values().map(|indices| {
            let part = Request {
                script: request.script,
                keys: indices.iter().map(|&i| request.keys[i].clone()).collect(),
                args: std::iter::once(request.args[0].clone())
                    .chain(indices.iter().map(|&i| request.args[i + 1].clone()))
                    .collect(),
                plain: None,
                by_source: request.by_source,
            };
            let mut conn = conn.clone();
            async move {
                let reply = self.run_one(&mut conn, facts, &part).await;
                (indices, reply)
            }
        });
        let mut flags = vec![Reply::Int(0); request.keys.len()];
        for (indices, reply) in futures::future::join_all(calls).await {
            // A slot whose call failed fails the batch: the watchdog then retries it soon as a
            // transient error (renewals are idempotent), as it does for a single node.
            match reply {
                Ok(Reply::Array(items)) if items.len() == indices.len() => {
                    for (i, item) in indices.into_iter().zip(items) {
                        flags[i] = item;
                    }
                }
                Ok(other) => {
                    return Err(Error::new(
                        crate::ErrorKind::Redis,
                        format!("unexpected reply to renew_batch: {other}"),
                    ))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Reply::Array(flags))
    }
}

/// The error for a lock whose keys do not share a slot.
fn cross_slot(request: &Request) -> Error {
    let name = request.keys.first().map(String::as_str).unwrap_or("?");
    Error::invalid(format!(
        "lock name {name:?}: its companion keys hash to another Cluster slot (a '{{' without a non-empty '{{...}}' tag after it); use a name without braces or with a tag such as {{order}}:42"
    ))
}

impl ClusterTransport {
    /// `request` through the connection in `cell`.
    async fn eval_in(&self, cell: &ConnectionCell, request: &Request) -> Result<Reply> {
        let (mut conn, facts) = self.connection_in(cell).await?;
        let sharded;
        let request = if facts.sharded && request.args.iter().any(|a| a == PUBLISH) {
            sharded = request.clone().with_publish_command("spublish");
            &sharded
        } else {
            request
        };
        if std::ptr::eq(request.script, &scripts::RENEW_BATCH) {
            return self.renew_by_slot(&conn, facts, request).await;
        }
        self.run_one(&mut conn, facts, request).await
    }
}

/// Armed while a call runs: a call dropped before its answer (the driver's timeout) or
/// ended by a connection-class error has its connection replaced
/// ([`ClusterTransport::forget`]).
struct Unanswered<'a> {
    transport: &'a ClusterTransport,
    cell: Option<Arc<ConnectionCell>>,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            tracing::debug!(cluster = %self.transport.label, "a call got no answer: connecting to the cluster again");
            self.transport.forget(&cell);
        }
    }
}

impl Transport for ClusterTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            let mut unanswered = Unanswered {
                transport: self,
                cell: Some(self.cell()),
            };
            let cell = unanswered.cell.clone().expect("set above");
            let result = self.eval_in(&cell, request).await;
            // No answer (redis-rs' response timeout, or the driver dropping this call at its
            // own), or another connection-class failure (CLUSTERDOWN, TRYAGAIN, a redirect
            // given up, a broken connection): later calls use a new connection.
            if !result
                .as_ref()
                .is_err_and(|e| e.kind() == ErrorKind::Connection && !e.is_permanent())
            {
                unanswered.cell = None;
            }
            result
        })
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        Box::pin(async move {
            let (_, facts) = self.connection().await?;
            let sub = self
                .subscriber
                .subscribe(channel, facts.sharded)
                .await
                .inspect_err(|e| {
                    if let Some(w) = Warning::channel_denied(&self.label, e) {
                        self.options.warnings.emit(w);
                    }
                })?;
            Ok(Some(Box::new(sub) as Box<dyn Subscription>))
        })
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn is_cluster(&self) -> bool {
        true
    }

    fn locate(&self, request: &Request) -> Option<String> {
        let key = request.keys.first()?;
        // "Sent to": the label names the seed, which is only where the client first
        // connected (a user trial of stop 48 read the seed as the node that did not answer).
        Some(format!(
            "sent to the node serving key slot {}",
            crate::protocol::family::multi::hash_slot(key)
        ))
    }
}
