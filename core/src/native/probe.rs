//! What a client learns from a server when it connects, once per connection:
//! - `CONFIG GET maxmemory-policy`: anything but `noeviction` may evict lock keys (warned);
//! - `COMMAND INFO DELIFEQ`: Valkey 9's compare-and-delete, so lease locks need no script.
//!
//! Each check tolerates a refusal (an ACL without `config|get`, a managed service that
//! renames `CONFIG`, a server without `COMMAND INFO`): it is then skipped, never an error.
//! Only losing the connection is, and a `NOAUTH` answer (a server that requires a password
//! the URL did not give).

use super::warnings::{self, Warnings};
use redis::aio::ConnectionLike;
use redis::{RedisResult, Value};

/// What one server supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// `SET ... IFEQ` and `DELIFEQ` exist (lease locks run without Lua).
    pub(crate) ifeq: bool,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// The value of `maxmemory-policy` in a `CONFIG GET` reply (RESP2 array or RESP3 map).
fn policy_of(reply: &Value) -> Option<String> {
    match reply {
        Value::Array(items) => items.get(1).and_then(text),
        Value::Map(pairs) => pairs.first().and_then(|(_, v)| text(v)),
        _ => None,
    }
}

/// A refusal of the check itself (permissions, unknown or renamed command), as opposed to
/// a broken connection or one that the server wants authenticated first (`NOAUTH`: every
/// call on it would be refused, so the connection fails here, with that reason, rather
/// than at its first call, where Redis may close it before the reply is read).
fn refused(e: &redis::RedisError) -> bool {
    matches!(
        e.kind(),
        redis::ErrorKind::Server(_) | redis::ErrorKind::Extension
    ) && !e.code().is_some_and(|code| code.eq_ignore_ascii_case("NOAUTH"))
}

async fn tolerant<C: ConnectionLike + Send>(
    conn: &mut C,
    args: &[&str],
    node: &str,
) -> RedisResult<Option<Value>> {
    let mut cmd = redis::cmd(args[0]);
    cmd.arg(&args[1..]);
    match cmd.query_async::<Value>(conn).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if refused(&e) => {
            tracing::debug!(node, check = args.join(" "), error = %e, "connect check refused; skipped");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Runs the connect checks on `conn` to `node`, reporting warnings through `warnings`.
///
/// # Errors
/// Only a connection failure during the checks.
pub(crate) async fn probe<C: ConnectionLike + Send>(
    conn: &mut C,
    node: &str,
    warnings: &Warnings,
) -> RedisResult<Facts> {
    if let Some(reply) = tolerant(conn, &["CONFIG", "GET", "maxmemory-policy"], node).await? {
        check_policy(node, &reply, warnings);
    }
    let ifeq = supports_ifeq(conn, node).await?;
    Ok(Facts { ifeq })
}

/// `COMMAND INFO DELIFEQ` (Valkey 9): `true` when the command exists; a refusal is `false`.
pub(crate) async fn supports_ifeq<C: ConnectionLike + Send>(conn: &mut C, node: &str) -> RedisResult<bool> {
    Ok(
        match tolerant(conn, &["COMMAND", "INFO", "DELIFEQ"], node).await? {
            Some(Value::Array(items)) => items.first().is_some_and(|i| !matches!(i, Value::Nil)),
            _ => false,
        },
    )
}

/// The server's `run_id` (`INFO server`; see `independence.rs`); `None` when refused.
///
/// # Errors
/// Only a connection failure.
pub(crate) async fn run_id<C: ConnectionLike + Send>(
    conn: &mut C,
    node: &str,
) -> RedisResult<Option<String>> {
    Ok(tolerant(conn, &["INFO", "server"], node)
        .await?
        .as_ref()
        .and_then(text)
        .and_then(|info| crate::protocol::independence::run_id_of(&info).map(str::to_owned)))
}

/// Warns when a `CONFIG GET maxmemory-policy` reply shows an evicting policy.
pub(crate) fn check_policy(node: &str, reply: &Value, warnings: &Warnings) {
    if let Some(w) = policy_of(reply).and_then(|p| warnings::eviction(node, &p)) {
        warnings.emit(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_policy_from_either_protocol() {
        let resp2 = Value::Array(vec![
            Value::BulkString(b"maxmemory-policy".to_vec()),
            Value::BulkString(b"allkeys-lru".to_vec()),
        ]);
        assert_eq!(policy_of(&resp2).as_deref(), Some("allkeys-lru"));
        let resp3 = Value::Map(vec![(
            Value::BulkString(b"maxmemory-policy".to_vec()),
            Value::BulkString(b"noeviction".to_vec()),
        )]);
        assert_eq!(policy_of(&resp3).as_deref(), Some("noeviction"));
        assert_eq!(policy_of(&Value::Array(vec![])), None);
    }
}
