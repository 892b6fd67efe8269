//! [`LocalTransport`]: one Redis node for the local engine. Commands go over a redis-rs
//! `MultiplexedConnection` that runs on a Node socket ([`JsStream`]) on the JavaScript
//! thread; redis-rs does the protocol (RESP, `HELLO`/`AUTH` with ACL users, `SELECT`,
//! pipelining) and the core's `RedisTransport::run_on` picks the commands, so what goes on
//! the wire is the native transport's. Pub/sub waiters use the native transport's subscriber
//! on tokio (a wake-up crosses threads once; a waiter is waiting anyway).
//!
//! Reconnect: a connection whose socket ended (`CLIENT KILL`, a restart, an idle timeout) is
//! dropped, and the next call opens a new one, so only calls already in flight fail (the
//! core retries those within its network timeout). Timeouts: the core bounds every call by
//! its network (or per-node) timeout; opening a connection is bounded by the network timeout
//! too, so a node that never answers a SYN is given up on and its socket closed.

use super::socket::JsStream;
use super::{host::SocketSpec, LocalRuntime};
use futures::future::{select, Either};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, IntoConnectionInfo};
use redlatch::protocol::reply::Reply;
use redlatch::protocol::request::Request;
use redlatch::{BoxFut, Error, RedisTransport, Result, Runtime, Subscription, Transport};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

#[derive(Clone)]
struct Live {
    conn: MultiplexedConnection,
    /// Set when the connection's driver ended (its socket closed).
    dead: Arc<AtomicBool>,
}

/// One Redis node reached over a socket on the JavaScript thread.
pub(crate) struct LocalTransport {
    info: ConnectionInfo,
    /// The native transport of the same URL: its label, and its subscriber for waiters.
    native: Arc<RedisTransport>,
    connect_timeout: Duration,
    runtime: Arc<LocalRuntime>,
    live: Mutex<Option<Live>>,
    /// Held while a connection is being opened, so concurrent calls share one attempt.
    opening: futures::lock::Mutex<()>,
}

impl LocalTransport {
    /// Checks `url` as the native transport does (bad URLs are `InvalidArgument`, without the
    /// password in the message); connects on first use.
    pub(crate) fn new(url: &str, connect_timeout: Duration, runtime: Arc<LocalRuntime>) -> Result<LocalTransport> {
        let native = RedisTransport::new(url, connect_timeout)?;
        let info = url.into_connection_info().map_err(RedisTransport::error_from)?;
        Ok(LocalTransport {
            info,
            native: Arc::new(native),
            connect_timeout,
            runtime,
            live: Mutex::new(None),
            opening: futures::lock::Mutex::new(()),
        })
    }

    fn live(&self) -> MutexGuard<'_, Option<Live>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn current(&self) -> Option<MultiplexedConnection> {
        let mut live = self.live();
        match live.as_ref() {
            Some(l) if !l.dead.load(Ordering::Acquire) => Some(l.conn.clone()),
            Some(_) => {
                *live = None;
                None
            }
            None => None,
        }
    }

    async fn connection(&self) -> Result<MultiplexedConnection> {
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let _opening = self.opening.lock().await;
        if let Some(conn) = self.current() {
            return Ok(conn);
        }
        let timeout = self.runtime.sleep(self.connect_timeout);
        let live = match select(Box::pin(self.open()), timeout).await {
            Either::Left((result, _)) => result?,
            Either::Right(_) => {
                return Err(Error::connection(format!(
                    "{}: no connection within {} ms",
                    self.label(),
                    self.connect_timeout.as_millis()
                )))
            }
        };
        let conn = live.conn.clone();
        *self.live() = Some(live);
        Ok(conn)
    }

    async fn open(&self) -> Result<Live> {
        let stream = JsStream::open(socket_spec(self.info.addr()))
            .await
            .map_err(|e| Error::connection(format!("{}: {e}", self.label())))?;
        // The core bounds every call itself (network or per-node timeout); redis-rs timers
        // would need a tokio runtime on this thread.
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(None);
        let (conn, driver) = MultiplexedConnection::new_with_config(self.info.redis_settings(), stream, config)
            .await
            .map_err(|e| named(self.label(), RedisTransport::error_from(e)))?;
        let dead = Arc::new(AtomicBool::new(false));
        let ended = dead.clone();
        self.runtime.spawn(Box::pin(async move {
            driver.await;
            ended.store(true, Ordering::Release);
        }));
        Ok(Live { conn, dead })
    }

    /// Connects now (if not yet) and checks the node answers `PING`.
    pub(crate) async fn ping(&self) -> Result<()> {
        let mut conn = self.connection().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(RedisTransport::error_from)
    }
}

fn named(label: &str, e: Error) -> Error {
    Error::new(e.kind(), format!("{label}: {}", e.message()))
}

/// How JavaScript opens a socket to `addr` (TLS settings follow the URL, as in redis-rs).
fn socket_spec(addr: &ConnectionAddr) -> SocketSpec {
    match addr {
        ConnectionAddr::Tcp(host, port) => SocketSpec {
            host: Some(host.clone()),
            port: Some(u32::from(*port)),
            ..SocketSpec::default()
        },
        ConnectionAddr::TcpTls {
            host, port, insecure, ..
        } => SocketSpec {
            host: Some(host.clone()),
            port: Some(u32::from(*port)),
            tls: true,
            insecure: *insecure,
            ..SocketSpec::default()
        },
        ConnectionAddr::Unix(path) => SocketSpec {
            path: Some(path.to_string_lossy().into_owned()),
            ..SocketSpec::default()
        },
        #[allow(unreachable_patterns)] // the enum is non-exhaustive
        _ => SocketSpec::default(),
    }
}

impl Transport for LocalTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let result = RedisTransport::run_on(&mut conn, request).await;
            if matches!(&result, Err(e) if e.kind() == redlatch::ErrorKind::Connection) {
                // A broken connection is not used again; the next call opens a new one.
                *self.live() = None;
            }
            result
        })
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        let native = self.native.clone();
        let channel = channel.to_owned();
        Box::pin(async move {
            // The subscriber lives on tokio (it keeps a runtime handle for its unsubscribes).
            let joined = napi::bindgen_prelude::within_runtime_if_available(|| {
                tokio::spawn(async move { native.subscribe(&channel).await })
            })
            .await;
            joined.unwrap_or_else(|e| Err(Error::connection(format!("pub/sub subscription failed: {e}"))))
        })
    }

    fn label(&self) -> &str {
        self.native.label()
    }
}
