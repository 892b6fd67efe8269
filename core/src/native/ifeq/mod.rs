//! Lease locks without Lua on servers that have `SET ... IFEQ` and `DELIFEQ` (Valkey 9), so
//! teams that forbid scripting can still use lease locks.
//!
//! Each lease-lock script is replaced by one `MULTI`/`EXEC` transaction of plain commands
//! (atomic like the script, one round trip, never interleaved with other calls on the
//! multiplexed connection) whose replies are composed into the reply the script would give,
//! so the driver decodes them the same way. A command the server refuses while queuing (ACL,
//! `OOM`) aborts the whole transaction: as with a refused script, nothing changed.
//! - acquire (unfenced): `SET N token NX PX lease`, `SET N token IFEQ token PX lease` (a
//!   retry finding its own token is a grant), `PTTL N`, `GET N` (busy, or a key conflict by
//!   the rules of `conflict.lua`).
//! - release: `GET latch`, `COPY N latch`, `DELIFEQ N token`, `PEXPIRE latch ttl`, the publish
//!   command on the unlock channel, `EXISTS N` (absent or taken). The latch is what keeps the
//!   retried-release rule without a script: it holds a copy of what the lock key held when the
//!   release ran, so a retry whose first attempt deleted the key finds its own token there
//!   (replayed as "released"); a latch holding anything else is never taken for a release.
//! - extend and watchdog renewal: `SET N token IFEQ token PX lease` and `EXISTS N`.
//! - inspect: `EXISTS`, `PTTL`, `GET`; force unlock: `TYPE` and `GET`, then `DELIFEQ` of the
//!   value read and the publish.
//!
//! Where plain commands cannot give the script's answer, that request runs the script:
//! fenced acquires (the counter moves in the grant's atomic step) and every reentrant-lock
//! request; a force unlock of a hash (no plain command deletes a key only while it is a hash);
//! a transaction refused with `OOM` (Valkey refuses `SET` and `COPY` over `maxmemory`, where
//! the scripts' `PEXPIRE` and post-`DEL` writes are allowed: a release and a renewal must work
//! under memory pressure); a Cluster redirect inside the transaction (redis-rs redirects
//! single commands, not a transaction's queued ones); a transaction refused by the ACL (a
//! user granted the scripts but not these commands). When the script is refused too (a user
//! denied `EVAL`), the transaction's own error is returned.
//!
//! Differences that change no outcome: the publish is sent even when the release found the
//! hold gone or taken (a waiter woken for nothing tries once and waits again); a replayed
//! release answers "released" without "handed off" (the hand-off grace is skipped).

mod lease;
mod multi;

use super::redis_calls::{eval_script, map_error};
use super::scripts_run::ScriptsRun;
use crate::error::ErrorKind;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use crate::protocol::scripts::{self, Script};
use lease::{acquire, force_unlock, inspect, release, renew_batch};
use multi::{cmd, set_if_ours, transaction};
use redis::aio::ConnectionLike;
use redis::{RedisError, RedisResult, ServerErrorKind};

fn is(request: &Request, script: &Script) -> bool {
    std::ptr::eq(request.script, script)
}

/// `true` when `request` can run as plain commands on a server with `IFEQ`/`DELIFEQ`.
pub(crate) fn handles(request: &Request) -> bool {
    let lease_only = |specs: &[String]| specs.iter().all(|s| s.starts_with('L'));
    (is(request, &scripts::LEASE_ACQUIRE) && request.args.get(2).is_some_and(|f| f == "0"))
        || is(request, &scripts::LEASE_RELEASE)
        || is(request, &scripts::LEASE_EXTEND)
        || is(request, &scripts::FORCE_UNLOCK)
        || (is(request, &scripts::RENEW_BATCH) && lease_only(&request.args[1..]))
        || (is(request, &scripts::INSPECT) && lease_only(&request.args))
}

/// Runs `request` (one [`handles`] accepted) as plain commands, or as its script where the
/// plain commands cannot answer as the script would (see the module docs).
pub(crate) async fn run<C: ConnectionLike + Send>(
    conn: &mut C,
    request: &Request,
    scripts: Option<&ScriptsRun>,
) -> RedisResult<Reply> {
    match plain(conn, request).await {
        Err(e) if needs_script(&e) => {
            tracing::debug!(
                script = request.script.name(),
                code = e.code().unwrap_or(""),
                "plain commands refused: running the script"
            );
            match eval_script(conn, request, scripts).await {
                // A user denied EVAL under OOM: a release without its latch (DELIFEQ and the
                // publish are allowed over maxmemory, COPY is not), as the script would release;
                // only a retry of it after a lost reply then finds "gone", never "released".
                Err(refused)
                    if refused_by_acl(&refused)
                        && e.code() == Some("OOM")
                        && is(request, &scripts::LEASE_RELEASE) =>
                {
                    release(conn, request, false).await
                }
                // Scripts refused too (a user denied EVAL): the plain commands' refusal says
                // what to grant for the path meant for that user.
                Err(refused) if refused_by_acl(&refused) => Err(e),
                other => other,
            }
        }
        other => other,
    }
}

fn refused_by_acl(e: &RedisError) -> bool {
    map_error(e, &[]).kind() == ErrorKind::NoPermission
}

/// Errors after which the script gives the right answer where the transaction could not.
/// `NOPERM`: a user granted the scripts but not the commands of the transaction (`MULTI`,
/// `EXEC`, `COPY`, `DELIFEQ`) still has every lease-lock operation, one round trip dearer.
fn needs_script(e: &RedisError) -> bool {
    use ServerErrorKind as S;
    e.code() == Some("OOM")
        || refused_by_acl(e)
        || matches!(
            e.kind(),
            redis::ErrorKind::Server(S::Moved | S::Ask | S::TryAgain | S::ClusterDown | S::MasterDown)
        )
        || e.code() == Some(SCRIPT_ONLY)
}

/// Internal code of [`plain`]'s "this one needs the script" answer (never shown: [`run`]
/// sends the script instead).
pub(super) const SCRIPT_ONLY: &str = "REDLATCH_SCRIPT_ONLY";

async fn plain<C: ConnectionLike + Send>(conn: &mut C, request: &Request) -> RedisResult<Reply> {
    if is(request, &scripts::LEASE_ACQUIRE) {
        acquire(conn, request).await
    } else if is(request, &scripts::LEASE_RELEASE) {
        release(conn, request, true).await
    } else if is(request, &scripts::LEASE_EXTEND) {
        let (key, token, lease) = (&request.keys[0], &request.args[0], &request.args[1]);
        let t = transaction(conn, &[set_if_ours(key, token, lease), cmd(&["EXISTS", key])]).await?;
        Ok(Reply::Int(lease::renewal_code(&t[0], &t[1])?))
    } else if is(request, &scripts::RENEW_BATCH) {
        renew_batch(conn, request).await
    } else if is(request, &scripts::FORCE_UNLOCK) {
        force_unlock(conn, request).await
    } else {
        inspect(conn, request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::request::{self, Holder};

    #[test]
    fn lease_requests_are_handled_and_reentrant_or_fenced_ones_are_not() {
        let lease = Holder::Lease { token: "t".into() };
        let rlock = Holder::Reentrant { owner: "o:1".into() };
        assert!(handles(&lease.acquire("n", 100, None, "", 0)));
        assert!(!handles(&lease.acquire("n", 100, Some(0), "", 0)));
        assert!(handles(&lease.release("n", 100, "r", 9000, 0)));
        assert!(handles(&lease.abort("n", "r", 0)));
        assert!(handles(&lease.extend("n", 100)));
        assert!(!handles(&rlock.acquire("n", 100, None, "r", 0)));
        assert!(!handles(&rlock.release("n", 100, "r", 0, 0)));
        assert!(!handles(&rlock.abort("n", "r", 0)));
        assert!(handles(&request::renew_batch(100, [("a", &lease)])));
        assert!(!handles(&request::renew_batch(
            100,
            [("a", &lease), ("b", &rlock)]
        )));
        assert!(handles(&request::inspect("n", false, Some(&lease))));
        assert!(handles(&request::inspect("n", false, None)));
        assert!(!handles(&request::inspect("n", true, None)));
        assert!(!handles(&request::inspect("n", true, Some(&rlock))));
        assert!(handles(&request::force_unlock("n", 0)));
    }

    #[test]
    fn the_argument_positions_read_here_are_the_requests_ones() {
        // plain() reads these positions; a change of the scripts' argument order must fail here.
        let lease = Holder::Lease { token: "tok".into() };
        let r = lease.acquire("n", 700, None, "", 0);
        assert_eq!(
            (&r.keys[0], &r.args[0], &r.args[1]),
            (&"n".to_owned(), &"tok".to_owned(), &"700".to_owned())
        );
        let r = lease.release("n", 700, "req", 9000, 0);
        assert_eq!(r.keys, ["n", "redisson_unlock_latch:{n}:req"]);
        assert_eq!(
            r.args,
            ["tok", request::PUBLISH, "redisson_lock__channel:{n}", "9000"]
        );
        assert_eq!(lease.abort("n", "req", 0).args[3], "0");
        assert_eq!(lease.extend("n", 700).args, ["tok", "700"]);
        let r = request::force_unlock("n", 0);
        assert_eq!(r.keys[0], "n");
        assert_eq!(r.args[..2], [request::PUBLISH, "redisson_lock__channel:{n}"]);
        assert_eq!(request::inspect("n", false, Some(&lease)).args, ["Ltok"]);
    }
}
