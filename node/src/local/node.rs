//! [`Node`]: how to reach one Redis node from the local engine: its address, TLS setting and
//! credentials from the URL, and [`Node::open`], which opens a connection (conn.rs) and
//! authenticates it, within the network timeout.
//!
//! - Authentication: the URL's user and password (`AUTH user pass`, ACL users included), its
//!   database (`SELECT`) and protocol (`HELLO 3` for `?protocol=resp3`), sent before any
//!   command; a refusal is a Connection error naming the node, never the password.
//! - TLS: `rediss://` opens a `tls.TLSSocket` (Node's TLS, its CA store and
//!   `NODE_EXTRA_CA_CERTS`). `#insecure` in the URL is refused as the tokio engine refuses
//!   it; clients with TLS options (`insecure` among them) run on the tokio engine.
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
    tls: bool,
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

impl Node {
    /// Checks `url` as the native transport does (bad URLs are `InvalidArgument`, without
    /// the password in the message).
    pub(crate) fn new(
        url: &str,
        connect_timeout: Duration,
        runtime: Arc<LocalRuntime>,
        servers: Option<Arc<QuorumServers>>,
    ) -> Result<Node> {
        let (plain_url, tls) = split_tls(url);
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
            // Dropping the attempt closes its socket. A TLS one is worded as the tokio engine
            // words it (a plain-text port, or a client certificate the server wants: a user
            // trial of stop 41 found this engine's "no connection" saying neither).
            Either::Right(_) if self.tls => Err(Error::connection(format!(
                "{}: {}",
                self.label,
                RedisTransport::tls_not_made_in_time()
            ))),
            Either::Right(_) => Err(Error::connection(format!(
                "{}: {}",
                self.label,
                RedisTransport::no_connection_within(self.connect_timeout)
            ))),
        }
    }

    async fn open_unbounded(&self) -> Result<Conn> {
        let mut conn = Conn::open(socket_spec(self.info.addr(), self.tls))
            .await
            .map_err(|e| Error::connection(format!("{}: {e}", self.label)))?;
        match self.set_up(&mut conn).await {
            Ok(()) => Ok(conn),
            // The server closed the connection as it was made: a TLS port reached by a plain
            // URL, or a TLS server that requires a client certificate. Said as the tokio
            // engine says it, with the socket's own error.
            Err(e) if e.kind() == redlatch::ErrorKind::Connection => match conn.ended_with() {
                // The failure is the socket's end (not, say, "max number of clients" before it).
                Some(why) if e.message().contains(&why) => Err(Error::connection(format!(
                    "{}: {}",
                    self.label,
                    RedisTransport::closed_while_connecting(&why, self.tls)
                ))),
                _ => Err(e),
            },
            Err(e) => Err(e),
        }
    }

    /// Logs in, and learns what the server offers (`SET IFEQ`) and which server it is.
    async fn set_up(&self, conn: &mut Conn) -> Result<()> {
        self.handshake(conn).await?;
        if self.ifeq.get().is_none() {
            let ifeq = RedisTransport::supports_ifeq(conn, &self.label)
                .await
                .map_err(|e| Error::connection(format!("{}: {}", self.label, e.message())))?;
            let _ = self.ifeq.set(ifeq);
        }
        if let Some(servers) = &self.servers {
            let run_id = RedisTransport::server_run_id(conn, &self.label)
                .await
                .map_err(|e| Error::connection(format!("{}: {}", self.label, e.message())))?;
            if let Some(run_id) = run_id {
                servers.claim(&self.label, &run_id)?;
            }
        }
        Ok(())
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

/// `rediss://` (or `valkeys://`) as the same URL in plain form and whether it is TLS: the
/// socket's TLS is Node's, so redis-rs only parses the rest (and refuses a fragment, such as
/// `#insecure`, in the tokio engine's words).
fn split_tls(url: &str) -> (String, bool) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_owned(), false);
    };
    match scheme {
        "rediss" => (format!("redis://{rest}"), true),
        "valkeys" => (format!("valkey://{rest}"), true),
        _ => (url.to_owned(), false),
    }
}

/// How JavaScript opens a socket to `addr`.
fn socket_spec(addr: &ConnectionAddr, tls: bool) -> SocketSpec {
    match addr {
        ConnectionAddr::Tcp(host, port) => SocketSpec {
            host: Some(host.clone()),
            port: Some(u32::from(*port)),
            tls,
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
