//! One `MULTI`/`EXEC` transaction and the reading of its replies, for the plain-command
//! lease locks (see the parent module).

use redis::aio::ConnectionLike;
use redis::{Cmd, RedisError, RedisResult, Value};

/// The command `args` (name first).
pub(super) fn cmd(args: &[&str]) -> Cmd {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c
}

/// `SET key token IFEQ token PX lease`: replaces the TTL only while the token matches, and
/// never creates the key.
pub(super) fn set_if_ours(key: &str, token: &str, lease: &str) -> Cmd {
    cmd(&["SET", key, token, "IFEQ", token, "PX", lease])
}

/// `cmds` as one `MULTI`/`EXEC`, sent as one pipeline (contiguous on the multiplexed
/// connection). Returns `EXEC`'s replies, each possibly an error (a command that failed
/// while running, e.g. `WRONGTYPE`); a command refused while queued (`NOPERM`, `OOM`,
/// `MOVED`) is returned as the error, not the `EXECABORT` that follows it.
pub(super) async fn transaction<C: ConnectionLike + Send>(
    conn: &mut C,
    cmds: &[Cmd],
) -> RedisResult<Vec<Value>> {
    let mut pipe = redis::pipe();
    pipe.cmd("MULTI");
    for c in cmds {
        pipe.add_command(c.clone());
    }
    pipe.cmd("EXEC");
    let mut replies: Vec<Value> = pipe.ignore_errors().query_async(conn).await?;
    let exec = replies.pop();
    if let Some(Value::ServerError(e)) = replies.iter().find(|r| matches!(r, Value::ServerError(_))) {
        return Err(e.clone().into());
    }
    match exec {
        Some(Value::Array(items)) if items.len() == cmds.len() => Ok(items),
        Some(Value::ServerError(e)) => Err(e.into()),
        other => Err(RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "unexpected reply to EXEC",
            format!("{other:?}"),
        ))),
    }
}

/// The error a command inside the transaction answered, if any.
pub(super) fn failed(v: &Value) -> RedisResult<&Value> {
    match v {
        Value::ServerError(e) => Err(e.clone().into()),
        other => Ok(other),
    }
}

pub(super) fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

pub(super) fn ok(v: &Value) -> bool {
    matches!(v, Value::Okay) || matches!(v, Value::SimpleString(s) if s == "OK")
}

pub(super) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// `conflict.lua`'s `looks_like_token`: hex, base64 or uuid text of 16..128 characters.
pub(super) fn looks_like_token(value: &[u8]) -> bool {
    (16..=128).contains(&value.len())
        && value
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_+/=".contains(b))
}

/// `conflict.lua`'s `conflict`: the `WRONGTYPE` error the scripts raise for application data
/// under a lock's name.
pub(super) fn conflict(what: &str) -> RedisError {
    redis::make_extension_error(
        "WRONGTYPE".to_owned(),
        Some(format!(
            "the lock key holds {what}, not a lock of this kind (another kind of lock, semaphore or latch under the same name, or application data?)"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shapes_follow_conflict_lua() {
        assert!(looks_like_token(b"0123456789abcdef"));
        assert!(looks_like_token(b"5f0c6a3e-8d1b-4c1e-9a57-0b9de2f1c3a4"));
        assert!(looks_like_token(b"aGVsbG8gd29ybGQhIQ=="));
        assert!(!looks_like_token(b"short"));
        assert!(!looks_like_token(b"not a token, but text"));
        assert!(!looks_like_token(&[b'a'; 129]));
        let e = conflict("a string without TTL");
        assert_eq!(e.code(), Some("WRONGTYPE"));
        assert_eq!(
            crate::native::map_error(&e, &[]).kind(),
            crate::ErrorKind::KeyConflict
        );
    }
}
