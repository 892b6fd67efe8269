//! Which script, keys and arguments each lock operation sends, per lock kind.
//!
//! This is the single place that knows the argument order of every script in `lua/`.

use super::keys;
use super::reply::{self, AcquireReply, OwnershipReply, Reply};
use super::scripts::{self, Script};
use crate::error::Result;

/// Publish command used by release scripts. Plain `PUBLISH` on a single node or a quorum of
/// independent nodes (sharded `SPUBLISH` is for Redis Cluster 7+, not used here).
pub const PUBLISH: &str = "publish";

/// One script invocation.
#[derive(Debug, Clone)]
pub struct Request {
    /// The script to run.
    pub script: &'static Script,
    /// `KEYS[]`.
    pub keys: Vec<String>,
    /// `ARGV[]`.
    pub args: Vec<String>,
    /// An equivalent plain command (no Lua) a transport may send instead of the script,
    /// saving the script's cost on the hot path. Its reply decodes to the same outcome.
    pub plain: Option<Vec<String>>,
    /// Send the script's source (`EVAL`) at once instead of its digest (`EVALSHA`, then
    /// `EVAL` on `NOSCRIPT`): for rare requests that must take effect in one round trip even
    /// on a node whose script cache is empty, such as the undo of a failed acquire on a slow
    /// node, where the `NOSCRIPT` answer could come after the call's timeout and the `EVAL`
    /// would never be sent.
    pub by_source: bool,
}

impl Request {
    /// The same request without its plain form: the script must run (retries, where the
    /// script's extra checks matter).
    pub fn script_only(mut self) -> Request {
        self.plain = None;
        self
    }
}

/// The two lock kinds and how a holder is identified in Redis.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Holder {
    /// Lease lock: the key holds this random token.
    Lease {
        /// The hold's token.
        token: String,
    },
    /// Reentrant lock: the key is a hash with this owner id as a field.
    Reentrant {
        /// The owner id `<client-uuid>:<n>`.
        owner: String,
    },
}

impl Holder {
    /// The `'L' .. token` / `'R' .. owner` spec used by `renew_batch` and `inspect`.
    pub fn spec(&self) -> String {
        match self {
            Holder::Lease { token } => format!("L{token}"),
            Holder::Reentrant { owner } => format!("R{owner}"),
        }
    }

    /// A fresh request id for an acquire: random for reentrant locks (it names their
    /// idempotency latches), empty for lease locks (their token already makes a retried
    /// acquire idempotent, so no random bytes are spent).
    ///
    /// # Errors
    /// `Panic` (internal) when the OS random source fails.
    pub fn request_id(&self) -> crate::error::Result<String> {
        match self {
            Holder::Lease { .. } => Ok(String::new()),
            Holder::Reentrant { .. } => super::token::new_token(),
        }
    }

    /// A fresh request id for a release, random for both kinds: it names the release's
    /// idempotency latch, which tells a retry whose first attempt applied from one that finds
    /// the hold lost (a lease lock's token alone cannot: both find the key gone or taken).
    ///
    /// # Errors
    /// `Panic` (internal) when the OS random source fails.
    pub fn release_id(&self) -> crate::error::Result<String> {
        super::token::new_token()
    }

    /// Acquire request for lock `name` with `lease_ms`. `fence`: `None` = not fenced, `Some(ttl)`
    /// = fenced, the counter key expiring `ttl` ms after this acquire (0 = it persists).
    /// `request_id` (random, one per `acquire()` call, reused by its retries) names the
    /// reentrant acquire's idempotency latch, kept `latch_ttl_ms`; lease locks need none
    /// (their token makes a retry idempotent).
    pub fn acquire(
        &self,
        name: &str,
        lease_ms: u64,
        fence: Option<u64>,
        request_id: &str,
        latch_ttl_ms: u64,
    ) -> Request {
        // An unfenced lease acquire is exactly `SET N token NX PX lease` (the redis-py /
        // node-redlock command) unless it is a retry, which needs the script's token check.
        let plain = fence.is_none().then(|| {
            let lease = lease_ms.to_string();
            ["SET", name, "", "NX", "PX", &lease].map(str::to_owned).to_vec()
        });
        let fenced = if fence.is_some() { "1" } else { "0" }.to_owned();
        let fence_ttl = fence.unwrap_or(0).to_string();
        let mut keys = vec![name.to_owned(), keys::fence_key(name)];
        match self {
            Holder::Lease { token } => Request {
                script: &scripts::LEASE_ACQUIRE,
                keys,
                args: vec![token.clone(), lease_ms.to_string(), fenced, fence_ttl],
                plain: plain.map(|mut p| {
                    p[2] = token.clone();
                    p
                }),
                by_source: false,
            },
            Holder::Reentrant { owner } => {
                keys.push(keys::acquire_latch(name, request_id));
                Request {
                    script: &scripts::RLOCK_ACQUIRE,
                    keys,
                    args: vec![
                        lease_ms.to_string(),
                        owner.clone(),
                        fenced,
                        latch_ttl_ms.to_string(),
                        fence_ttl,
                    ],
                    plain: None,
                    by_source: false,
                }
            }
        }
    }

    /// Release request; `lease_ms` is restored on a partial reentrant release. `request_id`
    /// (random, one per logical release, reused by its retries) names the release's
    /// idempotency latch (`redisson_unlock_latch:{N}:<id>`), kept `latch_ttl_ms` (a lease
    /// lock's release writes none when it is 0: the undo of a failed acquire). The unlock
    /// channel travels as an argument (an ACL user needs a channel permission for it, not a
    /// key permission).
    pub fn release(&self, name: &str, lease_ms: u64, request_id: &str, latch_ttl_ms: u64) -> Request {
        let channel = keys::lock_channel(name);
        let latch = keys::unlock_latch(name, request_id);
        match self {
            Holder::Lease { token } => Request {
                script: &scripts::LEASE_RELEASE,
                keys: vec![name.to_owned(), latch],
                args: vec![
                    token.clone(),
                    PUBLISH.to_owned(),
                    channel,
                    latch_ttl_ms.to_string(),
                ],
                plain: None,
                by_source: false,
            },
            Holder::Reentrant { owner } => Request {
                script: &scripts::RLOCK_RELEASE,
                keys: vec![name.to_owned(), latch],
                args: vec![
                    lease_ms.to_string(),
                    owner.clone(),
                    PUBLISH.to_owned(),
                    latch_ttl_ms.to_string(),
                    channel,
                ],
                plain: None,
                by_source: false,
            },
        }
    }

    /// Undo of an acquire whose outcome is unknown (cancelled, reply lost, quorum missed).
    /// Lease locks: the token-checked release. Reentrant locks: `rlock_abort`, which undoes
    /// only an acquire its latch proves applied.
    /// Sent by source ([`Request::by_source`]): an undo must land in one round trip.
    pub fn abort(&self, name: &str, request_id: &str) -> Request {
        let request = match self {
            Holder::Lease { .. } => self.release(name, 0, request_id, 0),
            Holder::Reentrant { owner } => Request {
                script: &scripts::RLOCK_ABORT,
                keys: vec![name.to_owned(), keys::acquire_latch(name, request_id)],
                args: vec![owner.clone(), PUBLISH.to_owned(), keys::lock_channel(name)],
                plain: None,
                by_source: false,
            },
        };
        Request {
            by_source: true,
            ..request
        }
    }

    /// Extend request: replace the TTL with `lease_ms` while still held.
    pub fn extend(&self, name: &str, lease_ms: u64) -> Request {
        let keys = vec![name.to_owned()];
        match self {
            Holder::Lease { token } => Request {
                script: &scripts::LEASE_EXTEND,
                keys,
                args: vec![token.clone(), lease_ms.to_string()],
                plain: None,
                by_source: false,
            },
            Holder::Reentrant { owner } => Request {
                script: &scripts::RLOCK_EXTEND,
                keys,
                args: vec![lease_ms.to_string(), owner.clone()],
                plain: None,
                by_source: false,
            },
        }
    }

    /// Decodes this kind's release reply.
    ///
    /// # Errors
    /// `Redis` on an unexpected reply.
    pub fn decode_release(&self, reply: &Reply) -> Result<OwnershipReply> {
        match self {
            Holder::Lease { .. } => reply::decode_lease_release(reply),
            Holder::Reentrant { .. } => reply::decode_ownership(reply),
        }
    }

    /// Decodes this kind's acquire reply.
    ///
    /// # Errors
    /// `Redis` on an unexpected reply.
    pub fn decode_acquire(&self, reply: &Reply) -> Result<AcquireReply> {
        reply::decode_acquire(reply)
    }
}

/// Batch renewal of `holds` (`(name, holder)` pairs) to `lease_ms`.
pub fn renew_batch<'a>(lease_ms: u64, holds: impl IntoIterator<Item = (&'a str, &'a Holder)>) -> Request {
    let mut keys = Vec::new();
    let mut args = vec![lease_ms.to_string()];
    for (name, holder) in holds {
        keys.push(name.to_owned());
        args.push(holder.spec());
    }
    Request {
        script: &scripts::RENEW_BATCH,
        keys,
        args,
        plain: None,
        by_source: false,
    }
}

/// Force-unlock request for `name`.
pub fn force_unlock(name: &str) -> Request {
    Request {
        script: &scripts::FORCE_UNLOCK,
        keys: vec![name.to_owned()],
        args: vec![PUBLISH.to_owned(), keys::lock_channel(name)],
        plain: None,
        by_source: false,
    }
}

/// Inspect request for `name`, a reentrant lock or not, asking about `holder` when given.
pub fn inspect(name: &str, reentrant: bool, holder: Option<&Holder>) -> Request {
    let spec = match holder {
        Some(h) => h.spec(),
        None if reentrant => "R".to_owned(),
        None => "L".to_owned(),
    };
    Request {
        script: &scripts::INSPECT,
        keys: vec![name.to_owned()],
        args: vec![spec],
        plain: None,
        by_source: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_requests_follow_script_argument_order() {
        let h = Holder::Lease { token: "tok".into() };
        let r = h.acquire("order:42", 5000, Some(0), "req", 9000);
        assert_eq!(r.script.name(), "lease_acquire");
        assert_eq!(r.keys, ["order:42", "redisson_lock_token:{order:42}"]);
        assert_eq!(r.args, ["tok", "5000", "1", "0"]);
        assert_eq!(r.plain, None, "fenced acquires need the script");
        assert_eq!(h.acquire("k", 1, Some(86_400_000), "", 0).args[3], "86400000");
        let plain = h.acquire("k", 700, None, "", 0).plain.unwrap();
        assert_eq!(plain, ["SET", "k", "tok", "NX", "PX", "700"]);
        assert_eq!(h.acquire("k", 700, None, "", 0).script_only().plain, None);
        let r = h.release("order:42", 5000, "req", 9000);
        assert_eq!(
            r.keys,
            ["order:42", "redisson_unlock_latch:{order:42}:req"],
            "the channel is not a key"
        );
        assert_eq!(
            r.args,
            ["tok", "publish", "redisson_lock__channel:{order:42}", "9000"]
        );
        assert_eq!(h.extend("a", 9).args, ["tok", "9"]);
    }

    #[test]
    fn reentrant_requests_follow_redisson_order() {
        let h = Holder::Reentrant {
            owner: "uuid:1".into(),
        };
        let r = h.acquire("n", 30000, None, "req", 9000);
        assert_eq!(r.script.name(), "rlock_acquire");
        assert_eq!(r.plain, None);
        assert_eq!(r.keys[2], "redlatch_acquire_latch:{n}:req");
        assert_eq!(r.args, ["30000", "uuid:1", "0", "9000", "0"]);
        let r = h.release("n", 30000, "req", 9000);
        assert_eq!(r.keys, ["n", "redisson_unlock_latch:{n}:req"]);
        assert_eq!(
            r.args,
            ["30000", "uuid:1", "publish", "9000", "redisson_lock__channel:{n}"]
        );
        assert_eq!(h.extend("n", 10).args, ["10", "uuid:1"]);
    }

    #[test]
    fn aborts_undo_only_what_applied() {
        let lease = Holder::Lease { token: "t".into() };
        assert_eq!(lease.abort("n", "req").script.name(), "lease_release");
        assert_eq!(lease.abort("n", "req").args[3], "0", "an undo writes no latch");
        assert!(lease.abort("n", "req").by_source);
        assert!(!lease.release("n", 1, "req", 9).by_source);
        let r = Holder::Reentrant { owner: "o:1".into() }.abort("n", "req");
        assert_eq!(r.script.name(), "rlock_abort");
        assert_eq!(r.keys, ["n", "redlatch_acquire_latch:{n}:req"]);
        assert_eq!(r.args, ["o:1", "publish", "redisson_lock__channel:{n}"]);
    }

    #[test]
    fn batch_and_admin_requests() {
        let a = Holder::Lease { token: "t".into() };
        let b = Holder::Reentrant { owner: "o:2".into() };
        let r = renew_batch(30000, [("x", &a), ("y", &b)]);
        assert_eq!(r.keys, ["x", "y"]);
        assert_eq!(r.args, ["30000", "Lt", "Ro:2"]);
        assert_eq!(force_unlock("x").keys, ["x"]);
        assert_eq!(force_unlock("x").args[1], "redisson_lock__channel:{x}");
        assert_eq!(inspect("x", false, None).args, ["L"]);
        assert_eq!(inspect("x", true, None).args, ["R"]);
        assert_eq!(inspect("x", true, Some(&b)).args, ["Ro:2"]);
    }
}
