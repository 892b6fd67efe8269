//! [`LocalTransport`]: one Redis node for the local engine: a pipelined command connection
//! (conn.rs) and a subscriber connection for waiters (pubsub.rs), both on Node sockets on the
//! JavaScript thread and opened as node.rs says (TLS, AUTH/ACL, timeouts). redis-rs encodes
//! the commands, replies are read into redis-rs' values as its own parser reads them
//! (`redlatch::resp`), and the core's `RedisTransport::run_on` picks them, so what goes on the wire
//! is the native transport's.
//!
//! Reconnect: a connection whose socket ended (`CLIENT KILL`, a restart, an idle timeout) is
//! dropped, and the next call opens a new one, so only calls already in flight fail (the core
//! retries those once within its timeout). Timeouts: the core bounds every call by its
//! network (or per-node) timeout.

use super::conn::Conn;
use super::node::Node;
use super::pubsub::Subscriber;
use super::LocalRuntime;
use redlatch::protocol::reply::Reply;
use redlatch::protocol::request::Request;
use redlatch::{BoxFut, QuorumServers, RedisTransport, Result, Subscription, Transport, Warning};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One Redis node reached over sockets on the JavaScript thread.
pub(crate) struct LocalTransport {
    node: Arc<Node>,
    live: Mutex<Option<Conn>>,
    /// Held while a connection is being opened, so concurrent calls share one attempt.
    opening: futures::lock::Mutex<()>,
    subscriber: Arc<Subscriber>,
    /// Where deployment warnings go (the client's `onWarning`), and the kinds already
    /// reported (once per node and kind, as the core's transports do).
    warn: Arc<dyn Fn(Warning) + Send + Sync>,
    warned: Mutex<Vec<&'static str>>,
}

impl LocalTransport {
    /// Checks `url` (bad URLs are `InvalidArgument`, without the password in the message);
    /// connects on first use.
    pub(crate) fn new(
        url: &str,
        connect_timeout: Duration,
        runtime: Arc<LocalRuntime>,
        warn: Arc<dyn Fn(Warning) + Send + Sync>,
        servers: Option<Arc<QuorumServers>>,
    ) -> Result<LocalTransport> {
        let node = Arc::new(Node::new(url, connect_timeout, runtime, servers)?);
        Ok(LocalTransport {
            subscriber: Subscriber::new(node.clone()),
            node,
            live: Mutex::new(None),
            opening: futures::lock::Mutex::new(()),
            warn,
            warned: Mutex::default(),
        })
    }

    /// Hands `warning` to the client's `onWarning` unless its kind was reported for this node.
    fn warn_once(&self, warning: Warning) {
        let first = {
            let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
            let first = !warned.contains(&warning.kind);
            if first {
                warned.push(warning.kind);
            }
            first
        };
        if first {
            (self.warn)(warning);
        }
    }

    fn live(&self) -> MutexGuard<'_, Option<Conn>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn current(&self) -> Option<Conn> {
        let mut live = self.live();
        match live.as_ref() {
            Some(conn) if conn.alive() => Some(conn.clone()),
            Some(_) => {
                *live = None;
                None
            }
            None => None,
        }
    }

    async fn connection(&self) -> Result<Conn> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let _opening = self.opening.lock().await;
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let conn = self.node.open().await?;
        *self.live() = Some(conn.clone());
        Ok(conn)
    }

    /// Connects now (if not yet) and checks the node answers `PING`.
    pub(crate) async fn ping(&self) -> Result<()> {
        let mut conn = self.connection().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| {
                let e = RedisTransport::error_from(e);
                redlatch::Error::new(e.kind(), format!("{}: {}", self.node.label, e.message()))
            })
    }
}

impl Transport for LocalTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let scripts = conn.scripts.clone();
            RedisTransport::run_on(&mut conn, &scripts, request, self.node.ifeq(), &self.node.label).await
        })
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        Box::pin(async move {
            let sub = self.subscriber.subscribe(channel).await.inspect_err(|e| {
                if let Some(w) = Warning::channel_denied(&self.node.label, e) {
                    self.warn_once(w);
                }
            })?;
            Ok(Some(sub))
        })
    }

    fn label(&self) -> &str {
        &self.node.label
    }

    fn warn(&self, kind: &'static str, message: String) {
        self.warn_once(Warning {
            kind,
            node: self.node.label.clone(),
            message,
        });
    }
}
