//! [`RedisTransport`]: one Redis node over a redis-rs `ConnectionManager` (a multiplexed
//! connection that reconnects by itself after `CLIENT KILL` or a restart).
//!
//! Scripts go out as `EVALSHA`; on `NOSCRIPT` (after `SCRIPT FLUSH` or a node restart) the
//! same call is repeated as `EVAL`, which also re-caches the script, so callers never see it
//! (requests marked `by_source` go out as `EVAL` at once). The connection is
//! made on first use, so a quorum client can start while some nodes are down.

use super::pubsub::Subscriber;
use crate::driver::{BoxFut, Subscription, Transport};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use tokio::sync::OnceCell;

/// One Redis node reached with redis-rs.
pub struct RedisTransport {
    client: redis::Client,
    label: String,
    connect_timeout: Duration,
    conn: OnceCell<ConnectionManager>,
    subscriber: Subscriber,
}

impl std::fmt::Debug for RedisTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTransport")
            .field("node", &self.label)
            .finish()
    }
}

/// `host:port` of a connection info, never its credentials.
fn label_of(info: &redis::ConnectionInfo) -> String {
    info.addr().to_string()
}

impl RedisTransport {
    /// Parses `url` (`redis://[user:pass@]host:port[/db]`, `rediss://`, `unix://`). Does not
    /// connect yet. `connect_timeout` bounds each connection attempt.
    ///
    /// # Errors
    /// `InvalidArgument` for a malformed URL.
    pub fn new(url: &str, connect_timeout: Duration) -> Result<Self> {
        let client = redis::Client::open(url)
            .map_err(|e| Error::invalid(format!("bad Redis URL: {}", redact(&e.to_string(), url))))?;
        let label = label_of(client.get_connection_info());
        let subscriber = Subscriber::new(client.clone(), connect_timeout);
        Ok(RedisTransport {
            client,
            label,
            connect_timeout,
            conn: OnceCell::new(),
            subscriber,
        })
    }

    async fn connection(&self) -> Result<ConnectionManager> {
        let conn = self
            .conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.connect_timeout))
                    // The driver bounds every call itself (network or per-node timeout).
                    .set_response_timeout(None)
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(500));
                ConnectionManager::new_with_config(self.client.clone(), config)
                    .await
                    .map_err(map_error)
            })
            .await?;
        Ok(conn.clone())
    }

    /// Connects now (if not yet) and checks the node answers `PING`.
    ///
    /// # Errors
    /// `Connection` when the node cannot be reached.
    pub async fn ping(&self) -> Result<()> {
        let mut conn = self.connection().await?;
        redis::cmd("PING")
            .query_async::<()>(&mut conn)
            .await
            .map_err(map_error)
    }
}

impl Transport for RedisTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            Self::run_on(&mut conn, request).await
        })
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        Box::pin(async move {
            let sub = self.subscriber.subscribe(channel).await?;
            Ok(Some(Box::new(sub) as Box<dyn Subscription>))
        })
    }

    fn label(&self) -> &str {
        &self.label
    }
}

impl RedisTransport {
    /// Runs `request` on a redis-rs connection: its plain form when it has one, `EVAL` when
    /// it must go by source, else `EVALSHA`, repeated as `EVAL` after a `NOSCRIPT`. This transport runs it on its
    /// `ConnectionManager`; bindings with connections of their own (the Node addon's sockets
    /// on the JavaScript thread) run it on theirs, so what goes on the wire is written once.
    ///
    /// # Errors
    /// As [`RedisTransport::error_from`] maps the connection's errors.
    pub async fn run_on<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        request: &Request,
    ) -> Result<Reply> {
        if let Some(plain) = &request.plain {
            let mut cmd = redis::cmd(&plain[0]);
            cmd.arg(&plain[1..]);
            return cmd.query_async(conn).await.map(convert).map_err(map_error);
        }
        let script = request.script;
        if request.by_source {
            return invoke(conn, "EVAL", script.source(), request)
                .await
                .map(convert)
                .map_err(map_error);
        }
        match invoke(conn, "EVALSHA", script.sha1(), request).await {
            // EVAL both runs the script and caches it for the next EVALSHA, atomically, so a
            // SCRIPT FLUSH between a SCRIPT LOAD and a retried EVALSHA cannot bite.
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                tracing::debug!(script = script.name(), "NOSCRIPT: falling back to EVAL");
                invoke(conn, "EVAL", script.source(), request).await
            }
            other => other,
        }
        .map(convert)
        .map_err(map_error)
    }

    /// The core error for a redis-rs error, as this transport maps its own: server error
    /// replies by their code (`NOPERM`, `OOM`, `WRONGTYPE`, others `Redis`), everything about
    /// reaching the server is `Connection`.
    pub fn error_from(e: redis::RedisError) -> Error {
        map_error(e)
    }
}

async fn invoke<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    command: &str,
    script: &str,
    request: &Request,
) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd(command);
    cmd.arg(script)
        .arg(request.keys.len())
        .arg(&request.keys)
        .arg(&request.args);
    cmd.query_async(conn).await
}

/// Maps a redis-rs error onto the taxonomy: server error replies by their code, as the core
/// classifies them ([`crate::error::redis_error_kind`]: `NOPERM`, `OOM`, `WRONGTYPE`, others
/// `Redis`), everything about reaching the server is `Connection`, including a peer whose
/// bytes are not the Redis protocol at all (redis-rs also answers such a parse error by
/// reconnecting).
pub(crate) fn map_error(e: redis::RedisError) -> Error {
    use redis::ErrorKind as K;
    match e.kind() {
        K::Parse => Error::connection(format!("the server's reply is not the Redis protocol ({e})")),
        K::Server(_) | K::Extension => match e.code() {
            // The reply as Redis sent it: `CODE detail`.
            Some(code) => Error::from_redis_reply(format!("{code} {}", e.detail().unwrap_or_default())),
            None => Error::new(ErrorKind::Redis, e.to_string()),
        },
        K::UnexpectedReturnType => Error::new(ErrorKind::Redis, e.to_string()),
        K::InvalidClientConfig => Error::new(ErrorKind::InvalidArgument, e.to_string()),
        _ => Error::connection(e.to_string()),
    }
}

/// Removes the password of `url` from `text`, should a message echo the URL.
fn redact(text: &str, url: &str) -> String {
    match url.split_once("://").and_then(|(_, rest)| rest.split_once('@')) {
        Some((userinfo, _)) => match userinfo.split_once(':') {
            Some((_, pass)) if !pass.is_empty() => text.replace(pass, "***"),
            _ => text.to_owned(),
        },
        None => text.to_owned(),
    }
}

fn convert(value: redis::Value) -> Reply {
    use redis::Value as V;
    match value {
        V::Nil => Reply::Nil,
        V::Int(i) => Reply::Int(i),
        V::BulkString(b) => Reply::Bytes(b),
        V::SimpleString(s) => Reply::Bytes(s.into_bytes()),
        V::Okay => Reply::Bytes(b"OK".to_vec()),
        V::Boolean(b) => Reply::Int(i64::from(b)),
        V::Array(items) | V::Set(items) => Reply::Array(items.into_iter().map(convert).collect()),
        other => Reply::Bytes(format!("{other:?}").into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("cannot reach redis://u:s3cret@h", "redis://u:s3cret@h"),
            "cannot reach redis://u:***@h"
        );
        assert_eq!(redact("x", "redis://h:1"), "x");
    }

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
