//! [`LocalTransport`]: one Redis node for the local engine, over a pipelined connection on a
//! Node socket (conn.rs). redis-rs encodes the commands and parses the replies, and the
//! core's `RedisTransport::run_on` picks them, so what goes on the wire is the native
//! transport's. Pub/sub waiters use the native transport's subscriber on tokio (a wake-up
//! crosses threads once; a waiter is waiting anyway); where it cannot run (a `rediss://` URL
//! while the native transport has no TLS), waiters poll.
//!
//! - Authentication: the URL's user and password (`AUTH user pass`, ACL users included), its
//!   database (`SELECT`) and protocol (`HELLO 3` for `?protocol=resp3`), sent before any
//!   command; a refusal is a Connection error naming the node, never the password.
//! - TLS: `rediss://` opens a `tls.TLSSocket` (Node's TLS, its CA store, `NODE_EXTRA_CA_CERTS`;
//!   `#insecure` skips verification, as in redis-rs).
//! - Reconnect: a connection whose socket ended (`CLIENT KILL`, a restart, an idle timeout)
//!   is dropped, and the next call opens a new one, so only calls already in flight fail
//!   (the core retries those once within its timeout).
//! - Timeouts: the core bounds every call by its network (or per-node) timeout; opening a
//!   connection, handshake included, is bounded by the network timeout too, so a node that
//!   never answers is given up on and its socket closed.

use super::conn::Conn;
use super::{host::SocketSpec, LocalRuntime};
use futures::future::{select, Either};
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, ProtocolVersion};
use redlatch::protocol::reply::Reply;
use redlatch::protocol::request::Request;
use redlatch::{BoxFut, Error, RedisTransport, Result, Runtime, Subscription, Transport};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// One Redis node reached over a socket on the JavaScript thread.
pub(crate) struct LocalTransport {
    info: ConnectionInfo,
    tls: Option<Tls>,
    label: String,
    /// The native transport of the same URL, for its subscriber (None: waiters poll).
    native: Option<Arc<RedisTransport>>,
    connect_timeout: Duration,
    runtime: Arc<LocalRuntime>,
    live: Mutex<Option<Conn>>,
    /// Held while a connection is being opened, so concurrent calls share one attempt.
    opening: futures::lock::Mutex<()>,
}

#[derive(Clone, Copy)]
struct Tls {
    insecure: bool,
}

impl LocalTransport {
    /// Checks `url` as the native transport does (bad URLs are `InvalidArgument`, without
    /// the password in the message); connects on first use.
    pub(crate) fn new(
        url: &str,
        connect_timeout: Duration,
        runtime: Arc<LocalRuntime>,
    ) -> Result<LocalTransport> {
        let (plain_url, tls) = split_tls(url)?;
        // Parsed as the native transport parses it (the same errors, redacted).
        let (label, native) = match tls {
            None => {
                let native = RedisTransport::new(url, connect_timeout)?;
                (native.label().to_owned(), Some(Arc::new(native)))
            }
            Some(_) => {
                let label = RedisTransport::new(&plain_url, connect_timeout)?
                    .label()
                    .to_owned();
                (
                    label,
                    RedisTransport::new(url, connect_timeout).ok().map(Arc::new),
                )
            }
        };
        let info = plain_url
            .as_str()
            .into_connection_info()
            .map_err(RedisTransport::error_from)?;
        Ok(LocalTransport {
            info,
            tls,
            label,
            native,
            connect_timeout,
            runtime,
            live: Mutex::new(None),
            opening: futures::lock::Mutex::new(()),
        })
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
        let timeout = self.runtime.sleep(self.connect_timeout);
        let conn = match select(Box::pin(self.open()), timeout).await {
            Either::Left((result, _)) => result?,
            Either::Right(_) => {
                return Err(Error::connection(format!(
                    "{}: no connection within {} ms",
                    self.label,
                    self.connect_timeout.as_millis()
                )))
            }
        };
        *self.live() = Some(conn.clone());
        Ok(conn)
    }

    async fn open(&self) -> Result<Conn> {
        let mut conn = Conn::open(socket_spec(self.info.addr(), self.tls))
            .await
            .map_err(|e| Error::connection(format!("{}: {e}", self.label)))?;
        self.handshake(&mut conn).await?;
        Ok(conn)
    }

    /// Authenticates, selects the database and the protocol the URL asks for.
    async fn handshake(&self, conn: &mut Conn) -> Result<()> {
        let settings = self.info.redis_settings();
        let refused = |e: redis::RedisError| {
            let e = RedisTransport::error_from(e);
            Error::connection(format!(
                "{}: the server refused the connection: {}",
                self.label,
                e.message()
            ))
        };
        let mut auth = None;
        if let Some(password) = settings.password() {
            let mut cmd = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                cmd.arg(user);
            }
            cmd.arg(password);
            auth = Some(cmd);
        }
        if settings.protocol() == ProtocolVersion::RESP3 {
            let mut hello = redis::cmd("HELLO");
            hello.arg(3);
            if let Some(password) = settings.password() {
                hello
                    .arg("AUTH")
                    .arg(settings.username().unwrap_or("default"))
                    .arg(password);
            }
            hello.query_async::<()>(conn).await.map_err(refused)?;
        } else if let Some(auth) = auth {
            auth.query_async::<()>(conn).await.map_err(refused)?;
        }
        if settings.db() != 0 {
            redis::cmd("SELECT")
                .arg(settings.db())
                .query_async::<()>(conn)
                .await
                .map_err(refused)?;
        }
        Ok(())
    }

    /// Connects now (if not yet) and checks the node answers `PING`.
    pub(crate) async fn ping(&self) -> Result<()> {
        let mut conn = self.connection().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| named(&self.label, RedisTransport::error_from(e)))
    }
}

fn named(label: &str, e: Error) -> Error {
    Error::new(e.kind(), format!("{label}: {}", e.message()))
}

/// `rediss://` (or `valkeys://`) as the same URL in plain form plus the TLS setting: the
/// socket's TLS is Node's, so redis-rs only parses the rest.
fn split_tls(url: &str) -> Result<(String, Option<Tls>)> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok((url.to_owned(), None));
    };
    let plain_scheme = match scheme {
        "rediss" => "redis",
        "valkeys" => "valkey",
        _ => return Ok((url.to_owned(), None)),
    };
    let (rest, insecure) = match rest.split_once('#') {
        Some((rest, "insecure")) => (rest, true),
        Some(_) => {
            return Err(Error::invalid(
                "bad Redis URL: only #insecure is supported as URL fragment",
            ))
        }
        None => (rest, false),
    };
    Ok((format!("{plain_scheme}://{rest}"), Some(Tls { insecure })))
}

/// How JavaScript opens a socket to `addr`.
fn socket_spec(addr: &ConnectionAddr, tls: Option<Tls>) -> SocketSpec {
    match addr {
        ConnectionAddr::Tcp(host, port) => SocketSpec {
            host: Some(host.clone()),
            port: Some(u32::from(*port)),
            tls: tls.is_some(),
            insecure: tls.is_some_and(|t| t.insecure),
            ..SocketSpec::default()
        },
        ConnectionAddr::Unix(path) => SocketSpec {
            path: Some(path.to_string_lossy().into_owned()),
            ..SocketSpec::default()
        },
        // TcpTls is never parsed here (split_tls) and the enum is non-exhaustive.
        _ => SocketSpec::default(),
    }
}

impl Transport for LocalTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            RedisTransport::run_on(&mut conn, request).await
        })
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        let native = self.native.clone();
        let channel = channel.to_owned();
        Box::pin(async move {
            let Some(native) = native else { return Ok(None) };
            // The subscriber lives on tokio (it keeps a runtime handle for its unsubscribes).
            let joined = napi::bindgen_prelude::within_runtime_if_available(|| {
                tokio::spawn(async move { native.subscribe(&channel).await })
            })
            .await;
            joined.unwrap_or_else(|e| Err(Error::connection(format!("pub/sub subscription failed: {e}"))))
        })
    }

    fn label(&self) -> &str {
        &self.label
    }
}
