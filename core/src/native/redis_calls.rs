//! redis-rs calls and what their answers mean, shared by every transport (single node,
//! Cluster, Sentinel, the calling-thread and event-loop I/O, and bindings' own connections):
//! a script as `EVALSHA` with its `EVAL` fallback, a request's plain commands, the reply in
//! the core's [`Reply`] shape, and a redis-rs error as the core's [`Error`] (server replies
//! by their code, with echoed arguments scrubbed; everything about reaching a server is
//! `Connection`).

use super::redact;
use super::scripts_run::{evalsha_refused, ScriptsRun};
use crate::error::{Error, ErrorKind};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use redis::aio::ConnectionLike;

/// The error for `e` from `node`: a `MOVED` or `READONLY` answer named for what it means,
/// the rest as [`map_error`] maps them.
pub(crate) fn describe(node: &str, e: &redis::RedisError, args: &[String]) -> Error {
    use redis::ServerErrorKind as S;
    if e.kind() == redis::ErrorKind::Server(S::Moved) {
        return Error::invalid(format!(
            "{node} is a Redis Cluster node (it answered MOVED): connect with a Cluster client (a redis+cluster:// URL, or the binding's cluster client)"
        ));
    }
    if e.kind() == redis::ErrorKind::Server(S::ReadOnly) {
        return Error::connection(format!(
            "{node} is a replica now (READONLY); the next call looks for the master again"
        ));
    }
    map_error(e, args)
}

/// `EVALSHA`, falling back to `EVAL` on `NOSCRIPT`; `EVAL` at once for a request marked
/// `by_source` and for the first call of a script on a connection (`scripts`: see
/// `scripts_run.rs`; `None` where connections are not tracked, the Cluster's).
pub(crate) async fn eval_script<C: ConnectionLike + Send>(
    conn: &mut C,
    request: &Request,
    scripts: Option<&ScriptsRun>,
) -> redis::RedisResult<Reply> {
    let script = request.script;
    let by_source = scripts.is_some_and(|s| s.is_new(script) || s.evalsha_denied());
    if request.by_source || by_source {
        let reply = invoke(conn, "EVAL", script.source(), request).await;
        if let Some(scripts) = scripts.filter(|_| answered(&reply)) {
            scripts.ran(script);
            if reply.is_ok() {
                scripts.answered_ok();
            }
        }
        return reply.map(convert);
    }
    let reply = match invoke(conn, "EVALSHA", script.sha1(), request).await {
        // EVAL both runs the script and caches it for the next EVALSHA, atomically, so a
        // SCRIPT FLUSH between a SCRIPT LOAD and a retried EVALSHA cannot bite.
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            tracing::debug!(script = script.name(), "NOSCRIPT: falling back to EVAL");
            invoke(conn, "EVAL", script.source(), request).await
        }
        Err(e) if evalsha_refused(&e) => {
            tracing::warn!(script = script.name(), "this user may not run EVALSHA: scripts go by source (EVAL); grant +evalsha to save the bytes");
            if let Some(scripts) = scripts {
                scripts.deny_evalsha();
            }
            invoke(conn, "EVAL", script.source(), request).await
        }
        other => other,
    };
    if let (Some(scripts), Ok(_)) = (scripts, &reply) {
        scripts.answered_ok();
    }
    reply.map(convert)
}

/// Whether the node answered (so it compiled the script and has it cached): a reply, or an
/// error of its own rather than of the connection.
pub(crate) fn answered<T>(reply: &redis::RedisResult<T>) -> bool {
    match reply {
        Ok(_) => true,
        Err(e) => matches!(e.kind(), redis::ErrorKind::Server(_)),
    }
}

async fn invoke<C: ConnectionLike + Send>(
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
/// `Redis`), everything about reaching the server is `Connection`, including a refused
/// password (`WRONGPASS`, as redis-py's `AuthenticationError` is a `ConnectionError`) and a peer whose
/// bytes are not the Redis protocol at all (redis-rs also answers such a parse error by
/// reconnecting). `args` (the request's arguments) are kept out of the message, as are the
/// arguments a server echoes.
pub(crate) fn map_error(e: &redis::RedisError, args: &[String]) -> Error {
    use redis::ErrorKind as K;
    let text = redact::server_error(&e.to_string(), args);
    match e.kind() {
        // RESP2's refused `AUTH` (redis-rs' own kind); RESP3's `HELLO ... AUTH` refusal is the
        // server's `WRONGPASS` reply, which `from_redis_reply` gives the same error.
        K::AuthenticationFailed => Error::auth_refused(),
        // redis-rs' parse errors span several lines (one per unexpected byte): one line here.
        K::Parse => Error::connection(format!(
            "the server's reply is not the Redis protocol ({})",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        )),
        K::Server(_) | K::Extension => match e.code() {
            // The reply as Redis sent it: `CODE detail`, with echoed arguments scrubbed.
            Some(code) => Error::from_redis_reply(format!(
                "{code} {}",
                redact::server_error(e.detail().unwrap_or_default(), args)
            )),
            None => Error::new(ErrorKind::Redis, text),
        },
        K::UnexpectedReturnType => Error::new(ErrorKind::Redis, text),
        K::InvalidClientConfig => match super::tls::refusal_reason(&text) {
            Some(why) => Error::invalid(format!("{why} ({text})")),
            None => Error::new(ErrorKind::InvalidArgument, text),
        },
        _ => Error::connection(text),
    }
}

/// A refusal inside a connect failure that redis-rs reports wrapped in its own error (the
/// Cluster's "Failed to create initial connections - ...", Sentinel's master lookup), whose
/// kind says only that connecting failed: a refused password is the permanent `Connection`
/// error it is on a single node, a missing ACL permission (`NOPERM`) `NoPermission`, so a wait
/// ends at once instead of retrying what no retry cures (found by the stop 36 user trial:
/// both waited out the whole wait on Cluster and Sentinel). `None` for the other failures.
pub(crate) fn wrapped_refusal(e: &redis::RedisError) -> Option<Error> {
    // Unwrapped (the Cluster's initial slots query refused: its own reply).
    let mapped = map_error(e, &[]);
    if mapped.kind() == ErrorKind::NoPermission || mapped.is_permanent() {
        return Some(mapped);
    }
    let text = e.to_string();
    if e.kind() == redis::ErrorKind::AuthenticationFailed
        || text.contains("AuthenticationFailed")
        || text.contains("WRONGPASS")
    {
        return Some(Error::auth_refused());
    }
    let at = text.find("NOPERM")?;
    Some(Error::new(
        ErrorKind::NoPermission,
        redact::server_error(&text[at..], &[]),
    ))
}

/// `e` from a Cluster, mapped as on a single node ([`map_error`]), except the refusals redis-rs
/// reports wrapped while it (re)connects or refreshes the slots ([`wrapped_refusal`]: a refused
/// password or a missing permission, `NOPERM` for `CLUSTER SLOTS`, is permanent here too), and
/// a redirect or refusal it could not follow within its own retries, which says why: a
/// failover or a slot migration under way (a user trial of stop 41 got a bare `MOVED` right
/// after a master was killed, and `TRYAGAIN` during a migration). Both stay `Connection`
/// errors, retried within the caller's wait.
pub(crate) fn cluster_error(e: &redis::RedisError, args: &[String]) -> Error {
    let mapped = map_error(e, args);
    if matches!(e.code(), Some("MOVED" | "ASK" | "TRYAGAIN" | "CLUSTERDOWN")) {
        return Error::connection(format!(
            "the Cluster is changing (a failover or a slot migration under way): {}",
            mapped.message()
        ));
    }
    match mapped.kind() {
        ErrorKind::Connection if !mapped.is_permanent() => wrapped_refusal(e).unwrap_or(mapped),
        _ => mapped,
    }
}

/// A request's plain commands as redis-rs sends them: one command as itself, several as one
/// pipeline (not a transaction; [`run_plain`] answers with the array of their replies).
pub(crate) fn plain_command(plain: &[Vec<String>]) -> PlainCommand {
    match plain {
        [one] => {
            let mut cmd = redis::cmd(&one[0]);
            cmd.arg(&one[1..]);
            PlainCommand::One(cmd)
        }
        several => {
            let mut pipe = redis::pipe();
            for c in several {
                pipe.cmd(&c[0]).arg(&c[1..]);
            }
            PlainCommand::Pipeline(pipe)
        }
    }
}

/// What [`plain_command`] builds.
pub(crate) enum PlainCommand {
    One(redis::Cmd),
    Pipeline(redis::Pipeline),
}

/// Sends a request's plain form ([`Request::plain`]) on `conn`.
pub(crate) async fn run_plain<C: ConnectionLike + Send>(
    conn: &mut C,
    plain: &[Vec<String>],
) -> redis::RedisResult<Reply> {
    match plain_command(plain) {
        PlainCommand::One(cmd) => cmd.query_async(conn).await.map(convert),
        PlainCommand::Pipeline(pipe) => pipe.query_async(conn).await.map(convert),
    }
}

pub(crate) fn convert(value: redis::Value) -> Reply {
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
    use redis::{ErrorKind as K, ServerErrorKind as S};

    #[test]
    fn a_cluster_redirect_not_followed_says_the_cluster_is_changing() {
        for (kind, detail) in [
            (S::Moved, "3999 127.0.0.1:7001"),
            (S::TryAgain, "Multiple keys request during rehashing of slot"),
        ] {
            let e = redis::RedisError::from((K::Server(kind), "redirect", detail.to_owned()));
            let mapped = cluster_error(&e, &[]);
            assert_eq!(mapped.kind(), ErrorKind::Connection, "{mapped}");
            assert!(!mapped.is_permanent(), "{mapped}");
            assert!(
                mapped.message().starts_with("the Cluster is changing"),
                "{mapped}"
            );
            assert!(mapped.message().contains(detail), "{mapped}");
        }
        // Other server errors are mapped as on a single node.
        let oom = redis::RedisError::from((K::Server(S::ResponseError), "oom", "OOM no memory".to_owned()));
        assert!(!cluster_error(&oom, &[]).message().contains("Cluster is changing"));
    }
}
