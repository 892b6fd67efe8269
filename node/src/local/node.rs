//! [`Node`]: how to reach one Redis node from the local engine: its address, TLS setting and
//! credentials from the URL, and [`Node::open`], which opens a connection (conn.rs) and
//! authenticates it, within the network timeout.
//!
//! - Authentication: the URL's user and password (`AUTH user pass`, ACL users included), its
//!   database (`SELECT`) and protocol (`HELLO 3` for `?protocol=resp3`), sent before any
//!   command; a refusal is a Connection error naming the node, never the password.
//! - TLS: `rediss://` opens a `tls.TLSSocket` (Node's TLS, its CA store and
//!   `NODE_EXTRA_CA_CERTS`; `#insecure` skips verification, as in redis-rs).
//! - Timeouts: opening, TLS handshake and authentication included, is bounded by the network
//!   timeout, so a node that never answers is given up on and its socket closed.

use super::conn::Conn;
use super::{host::SocketSpec, LocalRuntime};
use futures::future::{select, Either};
use redis::{ConnectionAddr, ConnectionInfo};
use redlatch::{Error, QuorumServers, RedisTransport, Result, Runtime, Transport};
use std::sync::Arc;
use std::time::Duration;

/// One Redis node: where it is and how to log in.
pub(crate) struct Node {
    info: ConnectionInfo,
    tls: Option<Tls>,
    pub(crate) label: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) runtime: Arc<LocalRuntime>,
    /// Whether the server has Valkey 9's `SET IFEQ` / `DELIFEQ`, asked on the first
    /// connection: lease locks then run without Lua, as on the tokio engine, so a user denied
    /// `EVAL` can use them (a user trial of stop 38: acquired, never released).
    ifeq: std::sync::OnceLock<bool>,
    /// A quorum's nodes: the server a connection reaches must be no other node's
    /// (`redlatch::QuorumServers`, as the tokio engine's transports check).
    servers: Option<Arc<QuorumServers>>,
}

#[derive(Clone, Copy)]
struct Tls {
    insecure: bool,
}

impl Node {
    /// Checks `url` as the native transport does (bad URLs are `InvalidArgument`, without
    /// the password in the message).
    pub(crate) fn new(
        url: &str,
        connect_timeout: Duration,
        runtime: Arc<LocalRuntime>,
        servers: Option<Arc<QuorumServers>>,
    ) -> Result<Node> {
        let (plain_url, tls) = split_tls(url)?;
        // Parsed as the native transport parses it (the same errors, redacted; the label
        // has no credentials).
        let label = RedisTransport::new(&plain_url, connect_timeout)?
            .label()
            .to_owned();
        let info = RedisTransport::connection_info(&plain_url)?;
        Ok(Node {
            info,
            tls,
            label,
            connect_timeout,
            runtime,
            ifeq: std::sync::OnceLock::new(),
            servers,
        })
    }

    /// A new authenticated connection, or a Connection error within the network timeout.
    pub(crate) async fn open(&self) -> Result<Conn> {
        let timeout = self.runtime.sleep(self.connect_timeout);
        match select(Box::pin(self.open_unbounded()), timeout).await {
            Either::Left((result, _)) => result,
            // Dropping the attempt closes its socket.
            Either::Right(_) => Err(Error::connection(format!(
                "{}: no connection within {} ms",
                self.label,
                self.connect_timeout.as_millis()
            ))),
        }
    }

    async fn open_unbounded(&self) -> Result<Conn> {
        let mut conn = Conn::open(socket_spec(self.info.addr(), self.tls))
            .await
            .map_err(|e| Error::connection(format!("{}: {e}", self.label)))?;
        self.handshake(&mut conn).await?;
        if self.ifeq.get().is_none() {
            let ifeq = RedisTransport::supports_ifeq(&mut conn, &self.label)
                .await
                .map_err(|e| Error::connection(format!("{}: {}", self.label, e.message())))?;
            let _ = self.ifeq.set(ifeq);
        }
        if let Some(servers) = &self.servers {
            let run_id = RedisTransport::server_run_id(&mut conn, &self.label)
                .await
                .map_err(|e| Error::connection(format!("{}: {}", self.label, e.message())))?;
            if let Some(run_id) = run_id {
                servers.claim(&self.label, &run_id)?;
            }
        }
        Ok(conn)
    }

    /// `true` when the server has `SET IFEQ` / `DELIFEQ` (known once a connection opened).
    pub(crate) fn ifeq(&self) -> bool {
        self.ifeq.get().copied().unwrap_or(false)
    }

    /// Authenticates, selects the database and the protocol the URL asks for.
    async fn handshake(&self, conn: &mut Conn) -> Result<()> {
        for cmd in RedisTransport::handshake_commands(&self.info) {
            // As the tokio engine says it (e.g. "the server refused the URL's user name or
            // password (WRONGPASS: ...)"), kind and permanence kept: a wait ends at once on
            // what no retry cures (a refused password, a database the server lacks).
            cmd.query_async::<()>(conn)
                .await
                .map_err(|e| RedisTransport::error_from(e).prefixed(&self.label))?;
        }
        Ok(())
    }
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
