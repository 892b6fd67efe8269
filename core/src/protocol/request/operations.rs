//! Each lock kind's acquire, release, undo and extend requests and the decoding of their
//! replies, in the argument order of its script in `lua/`.

use super::{set_nx_px, Holder, Request, Turn, PUBLISH};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::family::{fair, rwlock};
use crate::protocol::keys;
use crate::protocol::reply::{self, AcquireReply, OwnershipReply, Reply};
use crate::protocol::scripts;

/// How long the release latch of an undo (the `undo` form of the read/write releases) lives:
/// only a retry inside the same call reads it, and a repeat without it finds nothing to undo.
const UNDO_LATCH_MS: u64 = 1_000;
impl Holder {
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
                plain: fence.is_none().then(|| vec![set_nx_px(name, token, lease_ms)]),
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
    /// timeout key of the owner (`rw_read_extend`: the hash then lives as long as its longest read
    /// hold, never shorter than another reader needs).
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
        assert_eq!(plain, [["SET", "k", "tok", "NX", "PX", "700"]]);
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
    fn every_kind_of_undo_is_recognized_and_nothing_else() {
        let owner = || "o:1".to_owned();
        let holders = [
            Holder::Lease { token: "t".into() },
            Holder::Reentrant { owner: owner() },
            Holder::Fair {
                owner: owner(),
                wait_slot_ms: 5000,
            },
            Holder::Read { owner: owner() },
            Holder::Write { owner: owner() },
        ];
        for holder in &holders {
            let undo = holder.abort("n", "req", 1000);
            assert!(undo.is_undo(), "{holder:?}'s undo ({})", undo.script.name());
            let attempt = holder.acquire("n", 1000, None, "req", 1000);
            assert!(
                undo.undoes(attempt.attempt_mark().as_ref()),
                "{holder:?}'s undo of its attempt"
            );
            // Another attempt on the same lock (another token, another request id) is not
            // this undo's: its undo must not follow that one onto its connection.
            let other = match holder {
                Holder::Lease { .. } => Holder::Lease { token: "t2".into() },
                _ => holder.clone(),
            };
            let another = other.acquire("n", 1000, None, "req2", 1000);
            assert!(
                !undo.undoes(another.attempt_mark().as_ref()),
                "{holder:?}: another attempt"
            );
            assert!(!undo.undoes(None));
            let mut retry = holder.release("n", 1000, "req", 9, 0);
            retry.by_source = true; // a release retried (sent by source, as retries are)
            assert!(
                !retry.is_undo(),
                "{holder:?}'s release retry ({})",
                retry.script.name()
            );
        }
    }
}
