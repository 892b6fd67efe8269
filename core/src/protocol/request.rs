//! Which script, keys and arguments each lock operation sends, per lock kind.
//!
//! This is the single place that knows the argument order of every script in `lua/`.

use super::family::{fair, keys as family_keys, rwlock};
use super::keys;
use super::reply::{self, AcquireReply, OwnershipReply, Reply};
use super::scripts::{self, Script};
use crate::error::{Error, ErrorKind, Result};

/// Publish command used by release scripts: plain `PUBLISH` on a single node or a quorum of
/// independent nodes; a Cluster transport swaps in `SPUBLISH` where the cluster has sharded
/// pub/sub ([`Request::with_publish_command`]).
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

    /// The fair and write acquires' optional last argument: the fencing counter's TTL in ms
    /// when `fence` is `Some(ttl)` with `ttl > 0` (the counter persists otherwise, as in
    /// Redisson). Only for `fair_acquire` and `rw_write_acquire` requests.
    pub fn with_fence_ttl(mut self, fence: Option<u64>) -> Request {
        if let Some(ttl) = fence.filter(|ttl| *ttl > 0) {
            self.args.push(ttl.to_string());
        }
        self
    }

    /// The same request publishing with `command` instead of [`PUBLISH`]: `spublish` for
    /// sharded pub/sub on Redis Cluster 7+ (a per-client choice of the transport). Only the
    /// publish argument can equal [`PUBLISH`]: tokens are hex, owner ids `uuid:n`, the rest
    /// numbers or `L`/`R` specs.
    pub fn with_publish_command(mut self, command: &str) -> Request {
        for arg in self.args.iter_mut().filter(|a| *a == PUBLISH) {
            command.clone_into(arg);
        }
        self
    }
}

/// The lock kinds and how a holder is identified in Redis.
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
    /// Fair lock (Redisson `RFairLock`): the reentrant hash, plus the queue this owner waits
    /// in ([`crate::protocol::family::fair`]).
    Fair {
        /// The owner id `<client-uuid>:<n>`.
        owner: String,
        /// The wait slot this acquire queues with ([`fair::wait_slot_ms`]), ms; its give-up
        /// must send the same.
        wait_slot_ms: u64,
    },
    /// Read side of a read/write lock: field `owner`, one timeout key per hold
    /// ([`crate::protocol::family::rwlock`]).
    Read {
        /// The owner id `<client-uuid>:<n>`.
        owner: String,
    },
    /// Write side of a read/write lock: field `<owner>:write`.
    Write {
        /// The owner id `<client-uuid>:<n>` (the one its read side uses).
        owner: String,
    },
}

/// What an acquire attempt of a fair lock needs beyond the other kinds' arguments (the other
/// kinds ignore it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Turn {
    /// The caller's wall clock, ms since the Unix epoch (fair-lock deadlines are absolute).
    pub now_ms: u64,
    /// Join the fair lock's queue when it is busy (a waiting attempt); `false` for one try.
    pub queue: bool,
}

/// How long the release latch of an undo (the `undo` form of the read/write releases) lives:
/// only a retry inside the same call reads it, and a repeat without it finds nothing to undo.
const UNDO_LATCH_MS: u64 = 1_000;

impl Holder {
    /// The `'L' .. token` / `'R' .. owner` spec used by `renew_batch` and `inspect`.
    /// A read hold's spec is its owner's field: right for `inspect`, but its renewal is
    /// [`Holder::extend`] (the timeout keys), never `renew_batch` ([`Self::renews_in_batch`]).
    pub fn spec(&self) -> String {
        match self {
            Holder::Lease { token } => format!("L{token}"),
            Holder::Reentrant { owner } | Holder::Fair { owner, .. } | Holder::Read { owner } => {
                format!("R{owner}")
            }
            Holder::Write { owner } => format!("R{}", family_keys::write_owner(owner)),
        }
    }

    /// `false` for read holds, whose renewal must reach their timeout keys (one
    /// `rw_read_extend` per name and owner); every other kind renews in `renew_batch`.
    pub fn renews_in_batch(&self) -> bool {
        !matches!(self, Holder::Read { .. })
    }

    /// The hash field whose holds share one TTL, and so one validity, per lock: the owner
    /// id of reentrant and fair holds, `<owner>:write` of write holds. `None` for lease holds
    /// (one key each) and read holds (one timeout key each).
    pub fn shared_field(&self) -> Option<String> {
        match self {
            Holder::Reentrant { owner } | Holder::Fair { owner, .. } => Some(owner.clone()),
            Holder::Write { owner } => Some(family_keys::write_owner(owner)),
            Holder::Lease { .. } | Holder::Read { .. } => None,
        }
    }

    /// The channel this holder's waiters listen on: the unlock channel of lease and
    /// reentrant locks, the waiter's own channel of a fair lock (a release tells the queue
    /// head only), `redisson_rwlock:{N}` of both sides of a read/write lock.
    pub fn channel(&self, name: &str) -> String {
        match self {
            Holder::Lease { .. } | Holder::Reentrant { .. } => keys::lock_channel(name),
            Holder::Fair { owner, .. } => family_keys::fair_waiter_channel(name, owner),
            Holder::Read { .. } | Holder::Write { .. } => family_keys::rw_channel(name),
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
            _ => super::token::new_token(),
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
        self.acquire_turn(name, lease_ms, fence, request_id, latch_ttl_ms, Turn::default())
    }

    /// [`Self::acquire`] with the fair lock's [`Turn`] (its wall clock and whether to queue);
    /// the other kinds ignore `turn`. Fair and write holders take `fence` as the others;
    /// read holders are never fenced (`fence` is ignored).
    pub fn acquire_turn(
        &self,
        name: &str,
        lease_ms: u64,
        fence: Option<u64>,
        request_id: &str,
        latch_ttl_ms: u64,
        turn: Turn,
    ) -> Request {
        let fenced = if fence.is_some() { "1" } else { "0" }.to_owned();
        let fence_ttl = fence.unwrap_or(0).to_string();
        match self {
            Holder::Lease { token } => Request {
                script: &scripts::LEASE_ACQUIRE,
                keys: vec![name.to_owned(), keys::fence_key(name)],
                args: vec![token.clone(), lease_ms.to_string(), fenced, fence_ttl],
                // An unfenced lease acquire is exactly `SET N token NX PX lease` (the
                // redis-py / node-redlock command) unless it is a retry, which needs the
                // script's token check.
                plain: fence.is_none().then(|| {
                    let lease = lease_ms.to_string();
                    ["SET", name, token, "NX", "PX", &lease]
                        .map(str::to_owned)
                        .to_vec()
                }),
                by_source: false,
            },
            Holder::Reentrant { owner } => Request {
                script: &scripts::RLOCK_ACQUIRE,
                keys: vec![
                    name.to_owned(),
                    keys::fence_key(name),
                    keys::acquire_latch(name, request_id),
                ],
                args: vec![
                    lease_ms.to_string(),
                    owner.clone(),
                    fenced,
                    latch_ttl_ms.to_string(),
                    fence_ttl,
                ],
                plain: None,
                by_source: false,
            },
            Holder::Fair { owner, wait_slot_ms } => fair::acquire(&fair::Acquire {
                name,
                owner,
                lease_ms,
                wait_slot_ms: *wait_slot_ms,
                now_ms: turn.now_ms,
                queue: turn.queue,
                fenced: fence.is_some(),
                request_id,
                latch_ttl_ms,
            })
            .with_fence_ttl(fence),
            Holder::Read { owner } => rwlock::read_acquire(name, owner, lease_ms, request_id, latch_ttl_ms),
            Holder::Write { owner } => {
                rwlock::write_acquire(name, owner, lease_ms, fence.is_some(), request_id, latch_ttl_ms)
                    .with_fence_ttl(fence)
            }
        }
    }

    /// Release request; `lease_ms` is restored on a partial reentrant release. `request_id`
    /// (random, one per logical release, reused by its retries) names the release's
    /// idempotency latch (`redisson_unlock_latch:{N}:<id>`), kept `latch_ttl_ms` (a lease
    /// lock's release writes none when it is 0: the undo of a failed acquire). The unlock
    /// channel travels as an argument (an ACL user needs a channel permission for it, not a
    /// key permission). `now_ms` is the caller's wall clock (ms since the Unix epoch): a fair
    /// release first drops queued waiters whose deadline passed; the other kinds ignore it.
    pub fn release(
        &self,
        name: &str,
        lease_ms: u64,
        request_id: &str,
        latch_ttl_ms: u64,
        now_ms: u64,
    ) -> Request {
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
            Holder::Fair { owner, .. } => {
                fair::release(name, owner, lease_ms, now_ms, PUBLISH, request_id, latch_ttl_ms)
            }
            Holder::Read { owner } => {
                rwlock::read_release(name, owner, PUBLISH, request_id, latch_ttl_ms, None)
            }
            Holder::Write { owner } => {
                rwlock::write_release(name, owner, lease_ms, PUBLISH, request_id, latch_ttl_ms, None)
            }
        }
    }

    /// Undo of an acquire whose outcome is unknown (cancelled, reply lost, quorum missed), or
    /// the give-up of a fair-lock waiter. Lease locks: the token-checked release. Reentrant
    /// locks: `rlock_abort`, which undoes only an acquire its latch proves applied. Fair locks:
    /// `fair_abort` (undo a latch-proven grant, else leave the queue). Read and write holds:
    /// their release in its `undo` form (only if the latch proves the acquire applied), which
    /// restores `lease_ms` after undoing a write re-entry.
    /// Sent by source ([`Request::by_source`]): an undo must land in one round trip.
    pub fn abort(&self, name: &str, request_id: &str, lease_ms: u64) -> Request {
        let request = match self {
            Holder::Lease { .. } => self.release(name, 0, request_id, 0, 0),
            Holder::Reentrant { owner } => Request {
                script: &scripts::RLOCK_ABORT,
                keys: vec![name.to_owned(), keys::acquire_latch(name, request_id)],
                args: vec![owner.clone(), PUBLISH.to_owned(), keys::lock_channel(name)],
                plain: None,
                by_source: false,
            },
            Holder::Fair { owner, wait_slot_ms } => {
                fair::abort(name, owner, *wait_slot_ms, PUBLISH, request_id)
            }
            // The undo's own release latch reuses the acquire's request id (another key).
            Holder::Read { owner } => {
                rwlock::read_release(name, owner, PUBLISH, request_id, UNDO_LATCH_MS, Some(request_id))
            }
            Holder::Write { owner } => rwlock::write_release(
                name,
                owner,
                lease_ms,
                PUBLISH,
                request_id,
                UNDO_LATCH_MS,
                Some(request_id),
            ),
        };
        Request {
            by_source: true,
            ..request
        }
    }

    /// Extend request: replace the TTL with `lease_ms` while still held. Fair holds extend as
    /// reentrant ones (the same hash), write holds on their `:write` field, read holds every
    /// timeout key of the owner (`rw_read_extend`, which never shortens the hash).
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
            Holder::Reentrant { owner } | Holder::Fair { owner, .. } => Request {
                script: &scripts::RLOCK_EXTEND,
                keys,
                args: vec![lease_ms.to_string(), owner.clone()],
                plain: None,
                by_source: false,
            },
            Holder::Read { owner } => rwlock::read_extend(name, owner, lease_ms),
            Holder::Write { owner } => rwlock::write_extend(name, owner, lease_ms),
        }
    }

    /// Decodes this kind's release reply (and its abort's, which only errors are read from).
    ///
    /// # Errors
    /// `Redis` on an unexpected reply.
    pub fn decode_release(&self, reply: &Reply) -> Result<OwnershipReply> {
        match self {
            Holder::Lease { .. } => reply::decode_lease_release(reply),
            Holder::Reentrant { .. } | Holder::Fair { .. } => reply::decode_ownership(reply),
            Holder::Read { .. } | Holder::Write { .. } => match rwlock::decode_release(reply)? {
                rwlock::ReleaseReply::Released(outcome) => Ok(outcome),
                rwlock::ReleaseReply::NothingToUndo => Err(Error::new(
                    ErrorKind::Redis,
                    "unexpected reply to a read/write release: nothing to undo",
                )),
            },
        }
    }

    /// Decodes this kind's acquire reply. A fair waiter's "not your turn" is `Busy` with the
    /// script's `pttl` (-2: free, but another waiter's turn).
    ///
    /// # Errors
    /// `Redis` on an unexpected reply; `WouldDeadlock` when a write acquire was refused
    /// because this owner holds the read lock (nothing was changed).
    pub fn decode_acquire(&self, reply: &Reply) -> Result<AcquireReply> {
        match self {
            Holder::Lease { .. } | Holder::Reentrant { .. } => reply::decode_acquire(reply),
            Holder::Fair { .. } => Ok(match fair::decode_acquire(reply)? {
                fair::AcquireReply::Acquired { fence, holds } => AcquireReply::Acquired { fence, holds },
                fair::AcquireReply::Waiting { pttl, .. } => AcquireReply::Busy { pttl },
            }),
            Holder::Read { .. } | Holder::Write { .. } => match rwlock::decode_acquire(reply)? {
                rwlock::AcquireReply::Acquired { fence, holds } => Ok(AcquireReply::Acquired { fence, holds }),
                rwlock::AcquireReply::Busy { pttl } => Ok(AcquireReply::Busy { pttl }),
                rwlock::AcquireReply::UpgradeRefused => Err(Error::new(
                    ErrorKind::WouldDeadlock,
                    "write lock refused: this owner holds the read lock, and an upgrade would wait for its own read holds forever (release them first)",
                )),
            },
        }
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

/// Inspect request for `name`, a reentrant lock or not, asking about `holder` when given. For
/// read and write holders the lock counts as existing only in that mode (Redisson's `isLocked`
/// of its read and write locks).
pub fn inspect(name: &str, reentrant: bool, holder: Option<&Holder>) -> Request {
    let spec = match holder {
        Some(h) => h.spec(),
        None if reentrant => "R".to_owned(),
        None => "L".to_owned(),
    };
    let mut args = vec![spec];
    match holder {
        Some(Holder::Read { .. }) => args.push("read".to_owned()),
        Some(Holder::Write { .. }) => args.push("write".to_owned()),
        _ => {}
    }
    Request {
        script: &scripts::INSPECT,
        keys: vec![name.to_owned()],
        args,
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
        let r = h.release("order:42", 5000, "req", 9000, 0);
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
        let r = h.release("n", 30000, "req", 9000, 0);
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
        assert_eq!(lease.abort("n", "req", 0).script.name(), "lease_release");
        assert_eq!(lease.abort("n", "req", 0).args[3], "0", "an undo writes no latch");
        assert!(lease.abort("n", "req", 0).by_source);
        assert!(!lease.release("n", 1, "req", 9, 0).by_source);
        let r = Holder::Reentrant { owner: "o:1".into() }.abort("n", "req", 0);
        assert_eq!(r.script.name(), "rlock_abort");
        assert_eq!(r.keys, ["n", "redlatch_acquire_latch:{n}:req"]);
        assert_eq!(r.args, ["o:1", "publish", "redisson_lock__channel:{n}"]);
    }

    #[test]
    fn the_publish_command_is_replaceable() {
        let lease = Holder::Lease { token: "t".into() };
        let r = lease.release("n", 1, "", 0, 0).with_publish_command("spublish");
        assert_eq!(r.args, ["t", "spublish", "redisson_lock__channel:{n}", "0"]);
        let rl = Holder::Reentrant { owner: "o:1".into() };
        assert_eq!(
            rl.release("n", 1, "r", 2, 0)
                .with_publish_command("spublish")
                .args[2],
            "spublish"
        );
        assert_eq!(
            rl.abort("n", "r", 0).with_publish_command("spublish").args[1],
            "spublish"
        );
        assert_eq!(
            force_unlock("n").with_publish_command("spublish").args,
            ["spublish", "redisson_lock__channel:{n}"]
        );
        assert_eq!(
            lease.extend("n", 5).with_publish_command("spublish").args,
            ["t", "5"]
        );
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
