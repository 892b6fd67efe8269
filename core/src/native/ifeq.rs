//! Lease locks without Lua on servers that have `SET ... IFEQ` and `DELIFEQ` (Valkey 9), so
//! teams that forbid scripting can still use lease locks.
//!
//! Each lease-lock script is replaced by plain commands whose replies are composed into the
//! reply the script would give, so the driver decodes them the same way:
//! - acquire: `SET N token NX PX lease`; when that finds the key, `SET N token IFEQ token PX
//!   lease` (a retry finding its own token is a grant); else `PTTL N` (busy).
//! - release: `DELIFEQ N token`, then the publish command on the unlock channel; when nothing
//!   was deleted, `EXISTS N` tells "absent" from "taken".
//! - extend and watchdog renewal: `SET N token IFEQ token PX lease` (replace the TTL only
//!   while the token matches; never creates the key).
//! - inspect: `EXISTS`, `PTTL`, `GET`; force unlock: `DEL` then publish.
//!
//! The compare-and-set steps are single atomic commands; what follows them (a publish, an
//! `EXISTS` for the reason) only reports. Fenced acquires (the counter must move in the same
//! atomic step as the grant) and every reentrant-lock script still use Lua.

use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use crate::protocol::scripts::{self, Script};
use redis::aio::ConnectionLike;
use redis::{RedisResult, Value};

fn is(request: &Request, script: &Script) -> bool {
    std::ptr::eq(request.script, script)
}

/// `true` when `request` can run as plain commands on a server with `IFEQ`/`DELIFEQ`.
pub(crate) fn handles(request: &Request) -> bool {
    let lease_only = |specs: &[String]| specs.iter().all(|s| s.starts_with('L') || s.is_empty());
    (is(request, &scripts::LEASE_ACQUIRE) && request.args.get(2).is_some_and(|f| f == "0"))
        || is(request, &scripts::LEASE_RELEASE)
        || is(request, &scripts::LEASE_EXTEND)
        || is(request, &scripts::FORCE_UNLOCK)
        || (is(request, &scripts::RENEW_BATCH) && lease_only(&request.args[1..]))
        || (is(request, &scripts::INSPECT) && lease_only(&request.args))
}

async fn query<C: ConnectionLike + Send>(conn: &mut C, args: &[&str]) -> RedisResult<Value> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query_async(conn).await
}

/// A `WRONGTYPE` reply: the key holds another type (another library's key).
fn is_wrong_type(e: &redis::RedisError) -> bool {
    e.code() == Some("WRONGTYPE")
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

fn ok(v: &Value) -> bool {
    matches!(v, Value::Okay) || matches!(v, Value::SimpleString(s) if s == "OK")
}

/// `SET key token IFEQ token PX lease`: `true` when the token matched (TTL replaced). A
/// non-string value (another library's key) is "not ours", as the scripts' `pcall(GET)` has it.
async fn set_if_ours<C: ConnectionLike + Send>(
    conn: &mut C,
    key: &str,
    token: &str,
    lease: &str,
) -> RedisResult<bool> {
    match query(conn, &["SET", key, token, "IFEQ", token, "PX", lease]).await {
        Ok(v) => Ok(ok(&v)),
        Err(e) if is_wrong_type(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The watchdog's batch: one `SET key token IFEQ token PX lease` per hold, sent as one
/// pipeline. Why not one command after the other: the batch must reach the server as a unit,
/// as the script does. A release of one of its holds sent meanwhile on the same (multiplexed)
/// connection would otherwise run before that hold's renewal, which then finds the key gone
/// and reports a released hold as lost.
async fn renew_batch<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &[String],
    lease: &str,
    specs: &[String],
) -> RedisResult<Reply> {
    let mut pipe = redis::pipe();
    for (key, spec) in keys.iter().zip(specs) {
        let token = &spec[1..];
        pipe.cmd("SET")
            .arg(key)
            .arg(token)
            .arg("IFEQ")
            .arg(token)
            .arg("PX")
            .arg(lease);
    }
    // Each reply on its own: a WRONGTYPE (another library's key) is "not ours" for that hold.
    let replies: Vec<Value> = pipe.ignore_errors().query_async(conn).await?;
    let mut out = Vec::with_capacity(replies.len());
    for reply in replies {
        let renewed = match reply {
            Value::ServerError(e) if e.code() == "WRONGTYPE" => false,
            Value::ServerError(e) => return Err(e.into()),
            other => ok(&other),
        };
        out.push(Reply::Int(i64::from(renewed)));
    }
    Ok(Reply::Array(out))
}

/// 0 when `key` is absent, -1 when it holds something else (the scripts' codes).
async fn absent_or_taken<C: ConnectionLike + Send>(conn: &mut C, key: &str) -> RedisResult<Reply> {
    let exists = int(&query(conn, &["EXISTS", key]).await?);
    Ok(Reply::Int(if exists == 0 { 0 } else { -1 }))
}

/// Runs `request` (one [`handles`] accepted) as plain commands.
pub(crate) async fn run<C: ConnectionLike + Send>(conn: &mut C, request: &Request) -> RedisResult<Reply> {
    let (keys, args) = (&request.keys, &request.args);
    if is(request, &scripts::LEASE_ACQUIRE) {
        let (key, token, lease) = (&keys[0], &args[0], &args[1]);
        if ok(&query(conn, &["SET", key, token, "NX", "PX", lease]).await?)
            || set_if_ours(conn, key, token, lease).await?
        {
            return Ok(Reply::Array(vec![Reply::Int(1), Reply::Int(0)]));
        }
        let pttl = int(&query(conn, &["PTTL", key]).await?);
        return Ok(Reply::Array(vec![Reply::Int(0), Reply::Int(pttl)]));
    }
    if is(request, &scripts::LEASE_RELEASE) {
        let (key, channel, token, publish) = (&keys[0], &keys[1], &args[0], &args[1]);
        let deleted = match query(conn, &["DELIFEQ", key, token]).await {
            Ok(v) => int(&v) == 1,
            Err(e) if is_wrong_type(&e) => false,
            Err(e) => return Err(e),
        };
        if !deleted {
            return absent_or_taken(conn, key).await;
        }
        let listeners = int(&query(conn, &[publish, channel, "0"]).await?);
        return Ok(Reply::Int(if listeners > 0 { 2 } else { 1 }));
    }
    if is(request, &scripts::LEASE_EXTEND) {
        let (key, token, lease) = (&keys[0], &args[0], &args[1]);
        if set_if_ours(conn, key, token, lease).await? {
            return Ok(Reply::Int(1));
        }
        return absent_or_taken(conn, key).await;
    }
    if is(request, &scripts::RENEW_BATCH) {
        return renew_batch(conn, keys, &args[0], &args[1..]).await;
    }
    if is(request, &scripts::FORCE_UNLOCK) {
        let (key, channel, publish) = (&keys[0], &keys[1], &args[0]);
        if int(&query(conn, &["DEL", key]).await?) == 0 {
            return Ok(Reply::Int(0));
        }
        query(conn, &[publish, channel, "0"]).await?;
        return Ok(Reply::Int(1));
    }
    // INSPECT (lease lock or no owner).
    let key = &keys[0];
    let exists = int(&query(conn, &["EXISTS", key]).await?);
    let pttl = int(&query(conn, &["PTTL", key]).await?);
    let owned = match args[0].strip_prefix('L') {
        Some(token) if exists == 1 => match query(conn, &["GET", key]).await {
            Ok(Value::BulkString(b)) => b == token.as_bytes(),
            Ok(_) => false,
            Err(e) if is_wrong_type(&e) => false,
            Err(e) => return Err(e),
        },
        _ => false,
    };
    let owned = i64::from(owned);
    Ok(Reply::Array(vec![
        Reply::Int(exists),
        Reply::Int(pttl),
        Reply::Int(owned),
        Reply::Int(owned),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::request::{self, Holder};

    #[test]
    fn lease_requests_are_handled_and_reentrant_or_fenced_ones_are_not() {
        let lease = Holder::Lease { token: "t".into() };
        let rlock = Holder::Reentrant { owner: "o:1".into() };
        assert!(handles(&lease.acquire("n", 100, false, "", 0)));
        assert!(!handles(&lease.acquire("n", 100, true, "", 0)));
        assert!(handles(&lease.release("n", 100, "", 0)));
        assert!(handles(&lease.extend("n", 100)));
        assert!(!handles(&rlock.acquire("n", 100, false, "r", 0)));
        assert!(!handles(&rlock.release("n", 100, "r", 0)));
        assert!(handles(&request::renew_batch(100, [("a", &lease)])));
        assert!(!handles(&request::renew_batch(
            100,
            [("a", &lease), ("b", &rlock)]
        )));
        assert!(handles(&request::inspect("n", Some(&lease))));
        assert!(handles(&request::inspect("n", None)));
        assert!(!handles(&request::inspect("n", Some(&rlock))));
        assert!(handles(&request::force_unlock("n")));
    }

    #[test]
    fn the_argument_positions_read_here_are_the_requests_ones() {
        // run() reads these positions; a change of the scripts' argument order must fail here.
        let lease = Holder::Lease { token: "tok".into() };
        let r = lease.acquire("n", 700, false, "", 0);
        assert_eq!(
            (&r.keys[0], &r.args[0], &r.args[1]),
            (&"n".to_owned(), &"tok".to_owned(), &"700".to_owned())
        );
        let r = lease.release("n", 700, "", 0);
        assert_eq!(
            (r.keys[0].as_str(), r.keys[1].as_str()),
            ("n", "redisson_lock__channel:{n}")
        );
        assert_eq!(
            (r.args[0].as_str(), r.args[1].as_str()),
            ("tok", request::PUBLISH)
        );
        let r = lease.extend("n", 700);
        assert_eq!(r.args, ["tok", "700"]);
        let r = request::force_unlock("n");
        assert_eq!(r.keys[1], "redisson_lock__channel:{n}");
        assert_eq!(r.args, [request::PUBLISH]);
    }
}
