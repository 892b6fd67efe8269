//! [`RedisTransport`]: one Redis node (a fixed address, or the master of a Sentinel
//! deployment) over a [`Reconnecting`] multiplexed connection.
//!
//! Scripts go out as `EVALSHA`; on `NOSCRIPT` (after `SCRIPT FLUSH` or a node restart) the
//! same call is repeated as `EVAL`, which also re-caches the script, so callers never see it
//! (requests marked `by_source` go out as `EVAL` at once). On a server with `DELIFEQ`
//! (Valkey 9) lease-lock requests run as plain commands instead (see `ifeq/`). With
//! `sync_replicas`, grants and renewals are confirmed with `WAIT` (see `replication.rs`). A
//! broken connection or a `READONLY` answer (the node was demoted) drops the connection, so
//! the next call reconnects, or asks the sentinels again; after a reply timeout or a call
//! abandoned before its reply, the next call does too, except the undo of an acquire attempt,
//! which follows the attempt onto its connection (see `connection.rs`). A `MOVED` answer means the node is in Cluster mode: an error at once,
//! since no retry can help.

use super::connection::{Live, Reconnecting, Settings, Source};
use super::local_io::{self, LocalConnections};
use super::loop_io::LoopNode;
use super::node::{node_spec, NodeSpec};
use super::pubsub::Subscriber;
use super::redis_calls::{describe, eval_script, map_error, run_plain};
use super::replication::{self, SyncReplicas};
use super::scripts_run::ScriptsRun;
use super::tls::TlsOptions;
use super::warnings::{Warning, Warnings};
use super::{ifeq, redact};
use crate::driver::{BoxFut, Subscription, Transport};
use crate::error::{Error, Result};
use crate::protocol::independence::QuorumServers;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use redis::aio::ConnectionLike;
use std::sync::Arc;
use std::time::Duration;

/// Settings a transport shares with the client that made it.
#[derive(Clone)]
pub(crate) struct TransportOptions {
    pub(crate) network_timeout: Duration,
    pub(crate) sync_replicas: Option<SyncReplicas>,
    pub(crate) warnings: Arc<Warnings>,
    /// Set for the nodes of a quorum: each must reach a server of its own.
    pub(crate) servers: Option<Arc<QuorumServers>>,
}

impl TransportOptions {
    pub(crate) fn new(network_timeout: Duration) -> Self {
        TransportOptions {
            network_timeout,
            sync_replicas: None,
            warnings: Arc::default(),
            servers: None,
        }
    }

    fn command_settings(&self) -> Settings {
        Settings {
            connect_timeout: self.network_timeout,
            response_timeout: Some(self.network_timeout),
            push: None,
            checks: Some(self.warnings.clone()),
            servers: self.servers.clone(),
        }
    }
}

/// One Redis node reached with redis-rs.
pub struct RedisTransport {
    label: String,
    conn: Reconnecting,
    subscriber: Subscriber,
    options: TransportOptions,
    /// Synchronous connections for calling-thread I/O (single-node clients; see `local_io`).
    local: Option<Arc<LocalConnections>>,
    /// Event-loop I/O for a binding's asynchronous calls (single-node clients; `loop_io`).
    on_loop: Option<Arc<LoopNode>>,
}

impl std::fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTransport")
            .field("node", &self.label)
            .finish()
    }
}

impl RedisTransport {
    /// Parses `url` (`redis://[user:pass@]host:port[/db]`, `rediss://`, `unix://`) with
    /// default settings. Does not connect yet. `connect_timeout` bounds each connection
    /// attempt and each reply.
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL.
    pub fn new(url: &str, connect_timeout: Duration) -> Result<Self> {
        let spec = node_spec(url, &TlsOptions::default())?;
        Ok(Self::fixed(spec, TransportOptions::new(connect_timeout)))
    }

    /// The connection info of `url` as the transports read it: redis-py's `?db=N` moved into
    /// the path, parameters redis-rs would ignore and impossible database numbers refused. For
    /// a binding's own connections (the Node addon's sockets).
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL.
    pub fn connection_info(url: &str) -> Result<redis::ConnectionInfo> {
        Ok(node_spec(url, &TlsOptions::default())?.info)
    }

    pub(crate) fn fixed(spec: NodeSpec, options: TransportOptions) -> Self {
        let label = spec.label.clone();
        Self::from_source(label, Source::Fixed(Box::new(spec)), options)
    }

    pub(crate) fn from_source(label: String, source: Source, options: TransportOptions) -> Self {
        RedisTransport {
            conn: Reconnecting::new(source.clone(), options.command_settings()),
            subscriber: Subscriber::new(source, options.network_timeout),
            label,
            options,
            local: None,
            on_loop: None,
        }
    }

    /// Turns on calling-thread I/O for blocking calls (see `local_io`) and event-loop I/O
    /// for a binding's asynchronous calls (see `loop_io`) where they apply: a fixed address
    /// without a TLS server-name override, and no `WAIT` for replicas (event-loop I/O: no TLS).
    pub(crate) fn with_local_io(mut self) -> Self {
        if let (Source::Fixed(spec), None) = (self.conn.source(), self.options.sync_replicas) {
            if spec.resolver.is_none() {
                let timeout = self.options.network_timeout;
                self.local = Some(Arc::new(LocalConnections::new(spec.info.clone(), timeout)));
                self.on_loop = LoopNode::new(&spec.info, timeout);
            }
        }
        self
    }

    /// Connects now (if not yet) and checks the node answers `PING`.
    ///
    /// # Errors
    /// `Connection` when the node cannot be reached (naming TLS failures).
    pub async fn ping(&self) -> Result<()> {
        let live = self.conn.get().await?;
        let mut conn = live.conn.clone();
        let in_flight = self.conn.in_flight(&live, None);
        let pong = live
            .unless_lost(redis::cmd("PING").query_async::<()>(&mut conn))
            .await;
        in_flight.done();
        pong.map_err(|e| self.failed(&live, &e, None))
    }

    /// Maps `e` (the error of `request`, or of a call of the transport's own) and drops the
    /// connection when it cannot be trusted any more.
    fn failed(&self, live: &Live, e: &redis::RedisError, request: Option<&Request>) -> Error {
        let args = request.map_or(&[][..], |r| &r.args[..]);
        let readonly = e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly);
        if e.is_timeout() {
            // Maybe only slow: the next call gets a new connection, an undo still this one.
            // (Checked first: redis-rs' reply timeout is also an I/O error.)
            self.conn.suspect(live, request);
        } else if readonly || e.is_io_error() || e.is_connection_dropped() {
            tracing::debug!(node = %live.node, error = %redact::server_error(&e.to_string(), args), "dropping the connection");
            self.conn.invalidate(live.id);
            if !readonly {
                live.mark_lost();
            }
        }
        describe(&live.node, e, args)
    }

    /// The request sent on the calling event loop's connection, when a binding polls this
    /// call inside `loop_io::poll_on_loop` (or on the connection a timed-out attempt is queued
    /// on, for its undo); `None` sends it on the multiplexed connection.
    async fn eval_on_loop(&self, request: &Request) -> Option<Result<Reply>> {
        let on_loop = self.on_loop.as_ref()?;
        if !request.is_undo() && !super::loop_io::on_a_loop() {
            return None; // checked first: the async path pays one thread-local read
        }
        // Once the multiplexed connection's connect checks ran (DELIFEQ, eviction). An undo
        // goes on regardless: it must follow its attempt onto a loop connection even while
        // the multiplexed connection is being replaced (an abandoned call there makes it
        // suspect), and the script form undoes either form of a lease acquire.
        let ifeq = match self.conn.existing_facts() {
            Some(facts) => facts.ifeq,
            None if request.is_undo() => false,
            None => return None,
        };
        let reply = on_loop.eval(request, ifeq).await?;
        Some(reply.map_err(|e| describe(&self.label, &e, &request.args)))
    }

    async fn run(
        &self,
        conn: &mut redis::aio::MultiplexedConnection,
        live: &Live,
        request: &Request,
    ) -> redis::RedisResult<Reply> {
        let scripts = Some(&*live.scripts);
        if live.facts.ifeq && ifeq::handles(request) {
            return ifeq::run(conn, request, scripts).await;
        }
        match &request.plain {
            Some(plain) if live.scripts.may_go_plain() => run_plain(conn, plain).await,
            _ => eval_script(conn, request, scripts).await,
        }
    }
}

impl Transport for RedisTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            if request.is_undo() {
                // Boxed: undos are rare, and their future would make every call's larger.
                if let Some(reply) = Box::pin(self.undo_behind_its_attempt(request)).await {
                    return reply;
                }
            } else if request.follows_its_grant() {
                if let Some(reply) = Box::pin(self.release_behind_its_grant(request)).await {
                    return reply;
                }
            }
            // A quorum node's acquire try, noted until it ends: the release of its hold goes
            // behind it (connection_grants.rs).
            let grant = self.conn.grant_try(request);
            // Not for an undo: its place is behind its attempt (above), else any connection.
            let set_up_held = !request.is_undo()
                && match self.eval_local(request).await {
                    Local::Done(reply) => return reply,
                    Local::SetUpHeld => true,
                    Local::Elsewhere => match self.eval_on_loop(request).await {
                        Some(reply) => return reply,
                        None => false,
                    },
                };
            let live = if set_up_held {
                self.conn.get_while_set_up_is_held().await?
            } else {
                self.conn.get_for(request.is_undo().then_some(request)).await?
            };
            let mut conn = live.conn.clone();
            let in_flight = self.conn.in_flight(&live, Some(request));
            // Pinned here and passed by reference: moved into `unless_lost`, the call's future
            // would be stored twice in this one, which every call boxes.
            let reply = {
                let run = std::pin::pin!(self.run(&mut conn, &live, request));
                let mut call = std::pin::pin!(live.unless_lost(run));
                match (&grant, futures::poll!(call.as_mut())) {
                    (_, std::task::Poll::Ready(reply)) => reply,
                    // Polled once: the request is queued on the connection.
                    (Some(grant), std::task::Poll::Pending) => {
                        grant.sent_on(&live);
                        call.await
                    }
                    (None, std::task::Poll::Pending) => call.await,
                }
            };
            let confirm = match (&reply, self.options.sync_replicas) {
                (Ok(r), Some(sync)) => replication::write_to_confirm(request, r).map(|w| (w, sync)),
                _ => None,
            };
            let Some((what, sync)) = confirm else {
                in_flight.done();
                return reply.map_err(|e| self.failed(&live, &e, Some(request)));
            };
            let acks = live
                .unless_lost(replication::wait_command(sync).query_async::<i64>(&mut conn))
                .await;
            in_flight.done();
            let acks = acks.map_err(|e| self.failed(&live, &e, Some(request)))?;
            if acks < i64::from(sync.replicas) {
                return Err(replication::too_few(what, request, acks, sync, &live.node));
            }
            reply.map_err(|e| self.failed(&live, &e, Some(request)))
        })
    }

    fn stalled(&self) -> Option<String> {
        self.conn.is_connecting_tls().then(super::tls::no_handshake)
    }

    fn refused(&self) -> Option<Error> {
        self.options.servers.as_ref()?.refusal(&self.label)
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        Box::pin(async move {
            let sub = self.subscriber.subscribe(channel).await.inspect_err(|e| {
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

    fn warn(&self, kind: &'static str, message: String) {
        self.options.warnings.emit(Warning {
            kind,
            node: self.label.clone(),
            message,
        });
    }
}

impl RedisTransport {
    /// Runs `request` on a redis-rs connection of a binding's own (the Node addon's sockets
    /// on the JavaScript thread): with `ifeq` (the server has Valkey 9's `SET IFEQ` /
    /// `DELIFEQ`: [`Self::supports_ifeq`]) a lease lock's request as those commands, as this
    /// transport runs them (a user denied `EVAL` can then use lease locks); else its plain
    /// form when it has one and a script ran on `conn` (`ScriptsRun::may_go_plain`), else its script (`EVAL` by source, the first time on `conn`
    /// (`scripts`: one per connection, see [`ScriptsRun`]), or `EVALSHA` repeated as `EVAL`
    /// after a `NOSCRIPT`), so what goes on the wire is written once. None of this transport's
    /// other deployment handling (`WAIT`, replica checks) applies.
    ///
    /// # Errors
    /// Errors mapped as this transport maps its own: a `MOVED` answer is `InvalidArgument`
    /// saying that `node` is a Cluster node (retrying would follow no redirect), a `READONLY`
    /// one a `Connection` error saying it is a replica; the rest as
    /// [`RedisTransport::error_from`].
    pub async fn run_on<C: ConnectionLike + Send>(
        conn: &mut C,
        scripts: &ScriptsRun,
        request: &Request,
        ifeq: bool,
        node: &str,
    ) -> Result<Reply> {
        let reply = if ifeq && ifeq::handles(request) {
            ifeq::run(conn, request, Some(scripts)).await
        } else if let Some(plain) = request.plain.as_ref().filter(|_| scripts.may_go_plain()) {
            run_plain(conn, plain).await
        } else {
            eval_script(conn, request, Some(scripts)).await
        };
        reply.map_err(|e| describe(node, &e, &request.args))
    }

    /// `true` when the server on `conn` has Valkey 9's `SET IFEQ` / `DELIFEQ` (`COMMAND INFO
    /// DELIFEQ`, as this transport's connect checks ask; a refused or unknown `COMMAND` is
    /// `false`). For a binding's own connections, once per node (see [`Self::run_on`]).
    ///
    /// # Errors
    /// `Connection` when the connection fails meanwhile.
    pub async fn supports_ifeq<C: ConnectionLike + Send>(conn: &mut C, node: &str) -> Result<bool> {
        super::probe::supports_ifeq(conn, node)
            .await
            .map_err(|e| map_error(&e, &[]))
    }

    /// The `run_id` of the server `conn` reached (`INFO server`), `None` when the user may not
    /// ask: the identity a quorum's nodes are told apart by ([`QuorumServers`]). For a
    /// binding's own connections.
    ///
    /// # Errors
    /// `Connection` when the connection fails meanwhile.
    pub async fn server_run_id<C: ConnectionLike + Send>(conn: &mut C, node: &str) -> Result<Option<String>> {
        super::probe::run_id(conn, node)
            .await
            .map_err(|e| map_error(&e, &[]))
    }

    /// What a new connection to `info`'s node sends before any command, as redis-rs logs in
    /// its own: `HELLO 3` (with `AUTH` when the URL has a password) for `?protocol=resp3`,
    /// else `AUTH [user] password` when there is one; then `SELECT db` for a database
    /// other than 0. For a binding's own connections (the Node addon's sockets).
    pub fn handshake_commands(info: &redis::ConnectionInfo) -> Vec<redis::Cmd> {
        super::loop_io::handshake_commands(info.redis_settings())
    }

    /// The core error for a redis-rs error, as this transport maps its own: server error
    /// replies by their code (`NOPERM`, `OOM`, `WRONGTYPE`, others `Redis`), everything about
    /// reaching the server is `Connection`.
    pub fn error_from(e: redis::RedisError) -> Error {
        map_error(&e, &[])
    }

    /// What a binding's own connection (the Node addon's sockets) says when the server closed
    /// it while it was being made, in this transport's words: a plain one may have reached a
    /// TLS port; a TLS one, a server that requires a client certificate (TLS 1.3 checks it
    /// after the client's side of the handshake). `detail`: the socket's own error.
    pub fn closed_while_connecting(detail: &str, tls: bool) -> String {
        super::tls::closed_as_made(&detail, tls)
    }

    /// What a binding's own plain connection not made within `timeout` says, in this
    /// transport's words.
    pub fn no_connection_within(timeout: Duration) -> String {
        super::live::no_connection_within(timeout)
    }

    /// What a binding's own TLS connection not made within the network timeout says, in this
    /// transport's words (a plain-text port, or a client certificate the server wants).
    pub fn tls_not_made_in_time() -> String {
        super::tls::no_handshake()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn labels_have_no_credentials() {
        let t = RedisTransport::new("redis://user:hunter2@127.0.0.1:6390/0", Duration::from_secs(1)).unwrap();
        assert_eq!(t.label(), "127.0.0.1:6390");
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn bad_urls_are_invalid_arguments() {
        let e = RedisTransport::new("http://nope", Duration::from_secs(1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}

#[path = "transport_undo.rs"]
mod undo;

#[cfg(test)]
#[path = "transport_lost_tests.rs"]
mod lost_connection_tests;

#[path = "transport_local.rs"]
mod local;
use local::Local;
