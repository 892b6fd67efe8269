//! [`Live`]: one multiplexed redis-rs connection to a node: making it ([`Live::connect`], with
//! its connect checks and the words of a failed connect), and how a call on it learns, without
//! waiting out its reply timeout, that the connection is gone.
//!
//! A call that finds its connection dropped (a broken pipe, a reset) marks it lost
//! ([`Live::mark_lost`]), and every other call still waiting on it ends at once with a
//! connection error ([`Live::unless_lost`]) instead of waiting out its reply timeout:
//! redis-rs 1.8 can lose a request handed to a connection while the connection dies (seen
//! under `CLIENT KILL`: two calls failed with a broken pipe while a third, sent between
//! them, waited its whole response timeout), and that wait would use up the budget in
//! which the driver retries the call on a new connection.
//!
//! A call alone on a connection has no other call to find it dropped, and redis-rs can lose
//! it too: when the server closes the connection, redis-rs's task ends and drops the
//! receiving end of its request channel; a request whose send raced that drop (its permit
//! taken before the channel closed, its message pushed after the receiver drained the
//! channel) stays in the channel, so its reply sender is never dropped and the call waits
//! its whole response timeout (tokio's `mpsc` does not promise delivery to a receiver
//! dropped meanwhile). Seen as ~0.3 % of calls right after a `CLIENT KILL`
//! (tests/faults, `lone_calls_after_killed_connections_never_wait_out_their_timeout`).
//! So a waiting call checks now and then that the task still runs
//! ([`Live::unless_lost`]); once it has ended, the call ends with a connection error at
//! once (the request was never sent: the task took nothing more) and is sent again on a
//! new connection. The connect checks ([`probe`]), a new connection's first calls and alone
//! on it, wait the same way (tests/faults, `calls_through_a_kill_storm_end_soon`).

use super::connection::Settings;
use super::node::NodeSpec;
use super::probe::{self, Facts};
use super::scripts_run::ScriptsRun;
use super::{map_error, tls};
use crate::error::{Error, Result};
use futures::FutureExt;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, PushInfo};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// A live connection and what was learned when it was made.
#[derive(Clone)]
pub(crate) struct Live {
    pub(crate) conn: MultiplexedConnection,
    /// Distinguishes connections, so a stale failure does not drop a newer one.
    pub(crate) id: u64,
    pub(crate) facts: Facts,
    /// The node actually connected to (`host:port`; for Sentinel, the current master).
    pub(crate) node: Arc<str>,
    /// The source's generation when the node was resolved.
    generation: u64,
    /// Set once a call found the connection dropped (see the module docs).
    lost: Arc<watch::Sender<bool>>,
    /// The scripts run on this connection (the first of each goes by source).
    pub(crate) scripts: Arc<ScriptsRun>,
}

impl Live {
    /// Connects to `spec` with `settings` (connection `id`, made at the source's `generation`),
    /// running the connect checks of `settings` on it.
    ///
    /// # Errors
    /// `Connection` (naming a TLS or plain-text mix-up, or a server not answering in time),
    /// `InvalidArgument` for a URL redis-rs refuses, and the checks' own (a quorum node that is
    /// another node's server).
    pub(super) async fn connect(spec: &NodeSpec, s: &Settings, id: u64, generation: u64) -> Result<Live> {
        let mut info = spec.info.clone();
        if s.push.is_some() {
            let settings = info
                .redis_settings()
                .clone()
                .set_protocol(redis::ProtocolVersion::RESP3);
            info = info.set_redis_settings(settings);
        }
        let client = redis::Client::open(info).map_err(|e| Error::invalid(e.to_string()))?;
        let mut config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(s.connect_timeout))
            .set_response_timeout(s.response_timeout);
        if let Some(resolver) = &spec.resolver {
            config = config.set_dns_resolver(SharedResolver(resolver.clone()));
        }
        if let Some(push) = &s.push {
            let push = push.clone();
            config = config.set_push_sender(move |info: PushInfo| {
                push(id, info);
                Ok::<(), std::convert::Infallible>(())
            });
        }
        let connected = client.get_multiplexed_async_connection_with_config(&config).await;
        let conn = connected.map_err(|e| connect_error(&e, spec, s.connect_timeout))?;
        let mut probing = conn.clone();
        let facts = match &s.checks {
            // The checks are the new connection's first calls, alone on it: a server that
            // closes it meanwhile can strand one as it strands any lone call (module docs).
            Some(warnings) => tokio::select! {
                biased;
                facts = probe::probe(&mut probing, &spec.label, warnings) => {
                    facts.map_err(|e| connect_error(&e, spec, s.connect_timeout))?
                }
                () = until_task_ended(&conn) => return Err(map_error(&lost_error(), &[])),
            },
            None => Facts::default(),
        };
        if let Some(servers) = &s.servers {
            // A quorum node: the server it reached must be no other node's.
            let run_id = tokio::select! {
                biased;
                id = probe::run_id(&mut probing, &spec.label) => id.map_err(|e| connect_error(&e, spec, s.connect_timeout))?,
                () = until_task_ended(&conn) => return Err(map_error(&lost_error(), &[])),
            };
            if let Some(run_id) = run_id {
                servers.claim(&spec.label, &run_id)?;
            }
        }
        Ok(Live::new(conn, id, facts, spec.label.as_str().into(), generation))
    }

    pub(super) fn new(
        conn: MultiplexedConnection,
        id: u64,
        facts: Facts,
        node: Arc<str>,
        generation: u64,
    ) -> Self {
        Live {
            conn,
            id,
            facts,
            node,
            generation,
            lost: Arc::new(watch::channel(false).0),
            scripts: Arc::new(ScriptsRun::new()),
        }
    }

    /// The source's generation when the node was resolved.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// Records that a call found this connection dropped: the calls waiting on it end (see
    /// the module docs).
    pub(crate) fn mark_lost(&self) {
        self.lost.send_replace(true);
    }

    /// Whether a call found this connection dropped.
    pub(super) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// `call` (a request on this connection), ended early with a connection error when
    /// another call finds the connection dropped first, or when the connection's task has
    /// ended while the call waits (see the module docs).
    ///
    /// # Errors
    /// `call`'s own, or an I/O error (`BrokenPipe`) when the connection was lost.
    pub(crate) async fn unless_lost<T>(
        &self,
        call: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> redis::RedisResult<T> {
        let mut lost = self.lost.subscribe();
        tokio::select! {
            biased;
            reply = call => reply,
            _ = lost.wait_for(|lost| *lost) => Err(lost_error()),
            () = self.until_task_ended() => {
                self.mark_lost();
                Err(lost_error())
            }
        }
    }

    async fn until_task_ended(&self) {
        until_task_ended(&self.conn).await
    }
}

/// Returns once `conn`'s redis-rs task is found ended, checked at growing intervals while a
/// call waits (see the module docs). The check is a `PING` polled once and dropped: on an
/// ended task it fails at that first poll (its channel is closed); on a live one it is
/// queued and then skipped unsent, since redis-rs sends nothing whose caller has gone.
pub(super) async fn until_task_ended(conn: &MultiplexedConnection) {
    let mut every = FIRST_TASK_CHECK;
    loop {
        tokio::time::sleep(every).await;
        let mut conn = conn.clone();
        let ping = redis::cmd("PING").query_async::<()>(&mut conn).now_or_never();
        if let Some(Err(e)) = ping {
            if e.is_connection_dropped() {
                return;
            }
        }
        every = (every * 2).min(LAST_TASK_CHECK);
    }
}

/// When a waiting call first checks that its connection's task still runs, and the longest
/// interval between checks: far above a reply's usual time (0.1-1 ms on a LAN), so a call
/// that is only slow costs a few channel sends, and short against a network timeout.
const FIRST_TASK_CHECK: Duration = Duration::from_millis(20);
const LAST_TASK_CHECK: Duration = Duration::from_millis(320);

pub(super) fn lost_error() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the connection was lost before this call's reply came",
    ))
}

/// A connect failure, naming the TLS cause when it was one, and what a connect timeout may
/// mean (redis-rs says only "timed out"; a user trial of stop 42).
fn connect_error(e: &redis::RedisError, spec: &NodeSpec, timeout: Duration) -> Error {
    if let Some(name) = spec.tls_name() {
        if let Some(why) = tls::describe_failure(e, name) {
            let error = Error::connection(why);
            return if tls::refused_for_good(e) {
                error.permanently()
            } else {
                error
            };
        }
    } else if let Some(why) = tls::describe_plain_failure(e) {
        return Error::connection(why);
    } else if e.is_timeout() {
        return Error::connection(no_connection_within(timeout));
    }
    map_error(e, &[])
}

/// What a plain connection not made within `timeout` says.
pub(crate) fn no_connection_within(timeout: Duration) -> String {
    format!(
        "no connection within {} ms: is the server running and answering (not paused or overloaded)?",
        timeout.as_millis()
    )
}

/// `Arc<ServerNameResolver>` as the owned resolver redis-rs takes.
struct SharedResolver(Arc<super::node::ServerNameResolver>);

impl redis::io::AsyncDNSResolver for SharedResolver {
    fn resolve<'a, 'b: 'a>(
        &'a self,
        host: &'b str,
        port: u16,
    ) -> redis::RedisFuture<'a, Box<dyn Iterator<Item = std::net::SocketAddr> + Send + 'a>> {
        self.0.resolve(host, port)
    }
}
