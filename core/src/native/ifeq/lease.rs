//! The lease-lock requests as transactions of plain commands (see the parent module).

use super::multi::{bytes, cmd, conflict, failed, int, looks_like_token, ok, set_if_ours, transaction};
use super::SCRIPT_ONLY;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use redis::aio::ConnectionLike;
use redis::{RedisResult, Value};

/// 1 renewed, 0 absent, -1 held by someone else: `SET ... IFEQ`'s and `EXISTS`'s replies. A
/// `WRONGTYPE` from the `SET` (another type under the name) is "someone else's" for a
/// renewal batch, as in `renew_batch.lua`; the caller decides for an extend.
pub(super) fn renewal_code(set: &Value, exists: &Value) -> RedisResult<i64> {
    if ok(failed(set)?) {
        return Ok(1);
    }
    Ok(if int(failed(exists)?) == 0 { 0 } else { -1 })
}

pub(super) async fn acquire<C: ConnectionLike + Send>(conn: &mut C, request: &Request) -> RedisResult<Reply> {
    let (key, token, lease) = (&request.keys[0], &request.args[0], &request.args[1]);
    let t = transaction(
        conn,
        &[
            cmd(&["SET", key, token, "NX", "PX", lease]),
            set_if_ours(key, token, lease),
            cmd(&["PTTL", key]),
            cmd(&["GET", key]),
        ],
    )
    .await?;
    if ok(&t[0]) || ok(&t[1]) {
        return Ok(Reply::Array(vec![Reply::Int(1), Reply::Int(0)]));
    }
    // Another type under the name: GET's WRONGTYPE, as the script's GET raises it.
    let current = failed(&t[3])?;
    let pttl = int(failed(&t[2])?);
    if pttl == -1 && !bytes(current).is_some_and(looks_like_token) {
        return Err(conflict("a string without TTL"));
    }
    Ok(Reply::Array(vec![Reply::Int(0), Reply::Int(pttl)]))
}

/// `with_latch`: write the latch (only a user denied EVAL, under OOM, goes without).
pub(super) async fn release<C: ConnectionLike + Send>(
    conn: &mut C,
    request: &Request,
    with_latch: bool,
) -> RedisResult<Reply> {
    let (key, latch) = (&request.keys[0], &request.keys[1]);
    let (token, publish, channel, latch_ttl) = (
        &request.args[0],
        &request.args[1],
        &request.args[2],
        &request.args[3],
    );
    // No latch for the undo of a failed acquire (TTL 0), as in the script.
    let latched = with_latch && latch_ttl != "0";
    let mut cmds = Vec::new();
    if latched {
        cmds.push(cmd(&["GET", latch]));
        cmds.push(cmd(&["COPY", key, latch]));
    }
    cmds.push(cmd(&["DELIFEQ", key, token]));
    if latched {
        cmds.push(cmd(&["PEXPIRE", latch, latch_ttl]));
    }
    cmds.push(cmd(&[publish, channel, "0"]));
    cmds.push(cmd(&["EXISTS", key]));
    let t = transaction(conn, &cmds).await?;
    let (replay, copied, rest) = if latched {
        (Some(&t[0]), int(&t[1]) == 1, &t[2..])
    } else {
        (None, false, &t[..])
    };
    match replay.and_then(bytes) {
        // An earlier attempt of this release deleted the key: its latch holds our token.
        Some(latch) if latch == token.as_bytes() => return Ok(Reply::Int(1)),
        // A latch written by a script (lease_release.lua, or multi_release.lua for a
        // multi-lock member) holds that release's answer, 1 or 2, never a token: replayed as
        // the script does.
        Some(b"1") => return Ok(Reply::Int(1)),
        Some(b"2") => return Ok(Reply::Int(2)),
        _ => {}
    }
    let (deleted, published, exists) = if latched {
        (&rest[0], &rest[2], &rest[3])
    } else {
        (&rest[0], &rest[1], &rest[2])
    };
    if let Ok(deleted) = failed(deleted) {
        if int(deleted) == 1 {
            let listeners = int(failed(published)?);
            return Ok(Reply::Int(if listeners > 0 { 2 } else { 1 }));
        }
    }
    if copied {
        // Not released: the copy of someone else's value is no latch of ours. Best effort
        // (it expires with the latch TTL anyway).
        let _ = cmd(&["DEL", latch]).query_async::<Value>(conn).await;
    }
    failed(deleted)?; // WRONGTYPE: another type under the name, as the script's GET raises.
    Ok(Reply::Int(if int(failed(exists)?) == 0 { 0 } else { -1 }))
}

pub(super) async fn renew_batch<C: ConnectionLike + Send>(
    conn: &mut C,
    request: &Request,
) -> RedisResult<Reply> {
    let lease = &request.args[0];
    let mut cmds = Vec::with_capacity(request.keys.len() * 2);
    for (key, spec) in request.keys.iter().zip(&request.args[1..]) {
        cmds.push(set_if_ours(key, &spec[1..], lease));
        cmds.push(cmd(&["EXISTS", key]));
    }
    let t = transaction(conn, &cmds).await?;
    let mut out = Vec::with_capacity(request.keys.len());
    for pair in t.chunks(2) {
        let set = match &pair[0] {
            Value::ServerError(e) if e.code() == "WRONGTYPE" => &Value::Nil,
            other => other,
        };
        out.push(Reply::Int(renewal_code(set, &pair[1])?));
    }
    Ok(Reply::Array(out))
}

pub(super) async fn inspect<C: ConnectionLike + Send>(conn: &mut C, request: &Request) -> RedisResult<Reply> {
    let key = &request.keys[0];
    let id = &request.args[0][1..];
    let t = transaction(
        conn,
        &[cmd(&["EXISTS", key]), cmd(&["PTTL", key]), cmd(&["GET", key])],
    )
    .await?;
    let (exists, pttl) = (int(failed(&t[0])?), int(failed(&t[1])?));
    let mut owned = 0;
    if exists == 1 {
        let current = bytes(failed(&t[2])?);
        if pttl == -1 && !current.is_some_and(looks_like_token) {
            return Err(conflict("a string without TTL"));
        }
        owned = i64::from(!id.is_empty() && current == Some(id.as_bytes()));
    }
    Ok(Reply::Array(vec![
        Reply::Int(exists),
        Reply::Int(pttl),
        Reply::Int(owned),
        Reply::Int(owned),
    ]))
}

/// Deletes a string lock by compare-and-delete of the value just read (a value replaced in
/// between is read again, a few times, before the script takes over).
pub(super) async fn force_unlock<C: ConnectionLike + Send>(
    conn: &mut C,
    request: &Request,
) -> RedisResult<Reply> {
    let key = &request.keys[0];
    let (publish, channel) = (&request.args[0], &request.args[1]);
    for _ in 0..3 {
        let t = transaction(
            conn,
            &[cmd(&["TYPE", key]), cmd(&["GET", key]), cmd(&["PTTL", key])],
        )
        .await?;
        let kind = match failed(&t[0])? {
            Value::SimpleString(s) => s.clone(),
            other => String::from_utf8_lossy(bytes(other).unwrap_or_default()).into_owned(),
        };
        let value = match (kind.as_str(), failed(&t[1])) {
            ("none", _) => return Ok(Reply::Int(0)),
            ("string", Ok(v)) => bytes(v).unwrap_or_default().to_vec(),
            ("hash", _) => break,
            ("string", Err(e)) => return Err(e),
            (other, _) => return Err(conflict(&format!("a {other}"))),
        };
        // force_unlock.lua's rule: without TTL, only a string holding a token is a lock.
        if int(failed(&t[2])?) == -1 && !looks_like_token(&value) {
            return Err(conflict("a string without TTL"));
        }
        let mut delete = redis::cmd("DELIFEQ");
        delete.arg(key).arg(value);
        let t = transaction(conn, &[delete, cmd(&[publish, channel, "0"])]).await?;
        if int(failed(&t[0])?) == 1 {
            return Ok(Reply::Int(1));
        }
    }
    Err(redis::make_extension_error(SCRIPT_ONLY.to_owned(), None))
}
