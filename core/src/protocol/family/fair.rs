//! Fair lock (Redisson `RedissonFairLock` 4.7): the reentrant hash of `rlock`, plus a FIFO
//! queue of waiting owners (`redisson_lock_queue:{N}`) and their deadlines
//! (`redisson_lock_timeout:{N}`, absolute wall-clock ms). Each waiter listens on its own channel
//! `redisson_lock__channel:{N}:<owner>`; a release tells the queue head only.
//!
//! Deadlines work as in Redisson: a waiter joining the queue is due `wait` ms after the waiter
//! ahead of it (or after the holder's lease), where `wait` is the acquire's wait when it has
//! one, else Redisson's `fairLockWaitTimeout` ([`DEFAULT_WAIT_SLOT_MS`]). Every acquire and
//! release first drops heads whose deadline passed (dead waiters); a grant moves every queued
//! deadline one slot earlier; a waiter that gives up moves those behind it one slot earlier.
//! Holds, extend, renewal and inspection are exactly `rlock`'s: use
//! [`Holder::Reentrant`](crate::protocol::request::Holder) requests for those.

use super::{ints, keys as family_keys, request, scripts, unexpected};
use crate::error::Result;
use crate::protocol::keys;
use crate::protocol::reply::{self, OwnershipReply, Reply};
use crate::protocol::request::Request;

/// Redisson's `Config.fairLockWaitTimeout` default (5 minutes), the wait slot of a waiter
/// whose acquire has no wait of its own.
pub const DEFAULT_WAIT_SLOT_MS: u64 = 300_000;

/// The wait slot a waiter queues with: its wait in ms when it has one above 0 (as Redisson's
/// `tryLock(waitTime, ...)`), else [`DEFAULT_WAIT_SLOT_MS`].
pub fn wait_slot_ms(wait_ms: Option<u64>) -> u64 {
    match wait_ms {
        Some(w) if w > 0 => w,
        _ => DEFAULT_WAIT_SLOT_MS,
    }
}

/// One acquire attempt of a fair lock.
#[derive(Debug, Clone)]
pub struct Acquire<'a> {
    /// Lock name (its hash key).
    pub name: &'a str,
    /// Owner id `<client-uuid>:<n>`.
    pub owner: &'a str,
    /// Lease, ms.
    pub lease_ms: u64,
    /// The waiter's slot, ms ([`wait_slot_ms`]); the same value must go to [`abort`].
    pub wait_slot_ms: u64,
    /// The caller's wall clock, ms since the Unix epoch.
    pub now_ms: u64,
    /// Join the queue when the lock is busy (a waiting acquire); `false` for one try
    /// (Redisson's `tryLock()` without wait, which never queues).
    pub queue: bool,
    /// Fenced: `INCR redisson_lock_token:{N}` on every grant.
    pub fenced: bool,
    /// One per `acquire()` call, reused by its retries: names its idempotency latch.
    pub request_id: &'a str,
    /// How long the latch lives, ms.
    pub latch_ttl_ms: u64,
}

/// The `fair_acquire` request of one attempt.
pub fn acquire(a: &Acquire<'_>) -> Request {
    let flag = |b: bool| if b { "1" } else { "0" }.to_owned();
    request(
        &scripts::FAIR_ACQUIRE,
        vec![
            a.name.to_owned(),
            family_keys::fair_queue(a.name),
            family_keys::fair_timeouts(a.name),
            keys::fence_key(a.name),
            keys::acquire_latch(a.name, a.request_id),
        ],
        vec![
            a.lease_ms.to_string(),
            a.owner.to_owned(),
            a.wait_slot_ms.to_string(),
            a.now_ms.to_string(),
            flag(a.queue),
            flag(a.fenced),
            a.latch_ttl_ms.to_string(),
        ],
    )
}

/// Outcome of one fair acquire attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// Granted or re-entered.
    Acquired {
        /// Fencing token, 0 when not fenced.
        fence: u64,
        /// This owner's hold count after the grant.
        holds: u64,
    },
    /// Not this owner's turn. Wait for a message on the waiter channel (or `pttl`, when
    /// positive, as a bound), then try again.
    Waiting {
        /// The lock's remaining lease in ms (-1 no TTL, -2 free but another waiter's turn);
        /// for a waiter that just joined, Redisson's estimate of its wait instead.
        pttl: i64,
        /// 1-based place in the queue; 0 when not queued (one-try attempts).
        position: u64,
    },
}

/// Decodes the reply of [`acquire`].
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_acquire(reply: &Reply) -> Result<AcquireReply> {
    let script = &scripts::FAIR_ACQUIRE;
    match ints(script, reply)?.as_slice() {
        [1, fence, holds] if *fence >= 0 && *holds > 0 => Ok(AcquireReply::Acquired {
            fence: *fence as u64,
            holds: *holds as u64,
        }),
        [0, pttl, position] if *position >= 0 => Ok(AcquireReply::Waiting {
            pttl: *pttl,
            position: *position as u64,
        }),
        _ => Err(unexpected(script, reply)),
    }
}

/// Release request. `lease_ms` is restored on a partial release; `now_ms` is the caller's wall
/// clock (dead heads are dropped first); `publish` is `publish` or `spublish`. The reply
/// decodes with [`decode_release`].
pub fn release(
    name: &str,
    owner: &str,
    lease_ms: u64,
    now_ms: u64,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Request {
    request(
        &scripts::FAIR_RELEASE,
        vec![
            name.to_owned(),
            family_keys::fair_queue(name),
            family_keys::fair_timeouts(name),
            keys::unlock_latch(name, request_id),
        ],
        vec![
            lease_ms.to_string(),
            owner.to_owned(),
            now_ms.to_string(),
            publish.to_owned(),
            family_keys::fair_channel_base(name),
            latch_ttl_ms.to_string(),
        ],
    )
}

/// Decodes the reply of [`release`]: the codes of the `rlock` release (`Done`, `HandedOff`
/// when the head's channel had a listener, `StillHeld`, `Taken`, `Absent`).
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_release(reply: &Reply) -> Result<OwnershipReply> {
    reply::decode_ownership(reply)
}

/// The give-up request of a waiter whose acquire ended without a hold (wait over, cancelled,
/// reply lost): undoes the grant if `request_id`'s acquire applied, else leaves the queue.
/// `wait_slot_ms` must be the slot the waiter queued with.
pub fn abort(name: &str, owner: &str, wait_slot_ms: u64, publish: &str, request_id: &str) -> Request {
    request(
        &scripts::FAIR_ABORT,
        vec![
            name.to_owned(),
            family_keys::fair_queue(name),
            family_keys::fair_timeouts(name),
            keys::acquire_latch(name, request_id),
        ],
        vec![
            owner.to_owned(),
            wait_slot_ms.to_string(),
            publish.to_owned(),
            family_keys::fair_channel_base(name),
        ],
    )
}

/// What [`abort`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortReply {
    /// The acquire had applied; its hold was undone.
    Undone,
    /// The waiter left the queue.
    LeftQueue,
    /// Neither held by that acquire nor queued.
    Nothing,
}

/// Decodes the reply of [`abort`].
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_abort(reply: &Reply) -> Result<AbortReply> {
    match reply.as_int() {
        Some(1) => Ok(AbortReply::Undone),
        Some(2) => Ok(AbortReply::LeftQueue),
        Some(0) => Ok(AbortReply::Nothing),
        _ => Err(unexpected(&scripts::FAIR_ABORT, reply)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(queue: bool) -> Acquire<'static> {
        Acquire {
            name: "f",
            owner: "u:1",
            lease_ms: 30000,
            wait_slot_ms: wait_slot_ms(Some(5000)),
            now_ms: 1_700_000_000_000,
            queue,
            fenced: false,
            request_id: "req",
            latch_ttl_ms: 9000,
        }
    }

    #[test]
    fn acquire_sends_redisson_keys_and_argument_order() {
        let r = acquire(&attempt(true));
        assert_eq!(r.script.name(), "fair_acquire");
        assert_eq!(
            r.keys,
            [
                "f",
                "redisson_lock_queue:{f}",
                "redisson_lock_timeout:{f}",
                "redisson_lock_token:{f}",
                "redlatch_acquire_latch:{f}:req"
            ]
        );
        assert_eq!(
            r.args,
            ["30000", "u:1", "5000", "1700000000000", "1", "0", "9000"]
        );
        assert_eq!(acquire(&attempt(false)).args[4], "0");
        assert_eq!(r.plain, None);
    }

    #[test]
    fn wait_slots_follow_redisson() {
        assert_eq!(wait_slot_ms(Some(1)), 1);
        assert_eq!(wait_slot_ms(Some(0)), DEFAULT_WAIT_SLOT_MS);
        assert_eq!(wait_slot_ms(None), 300_000);
    }

    #[test]
    fn release_abort_and_force_carry_the_channel_base_in_argv() {
        let r = release("f", "u:1", 30000, 5, "spublish", "req", 9000);
        assert_eq!(r.keys[3], "redisson_unlock_latch:{f}:req");
        assert_eq!(
            r.args,
            [
                "30000",
                "u:1",
                "5",
                "spublish",
                "redisson_lock__channel:{f}",
                "9000"
            ]
        );
        let r = abort("f", "u:1", 5000, "publish", "req");
        assert_eq!(r.keys[3], "redlatch_acquire_latch:{f}:req");
        assert_eq!(r.args, ["u:1", "5000", "publish", "redisson_lock__channel:{f}"]);
    }

    fn arr(v: &[i64]) -> Reply {
        Reply::Array(v.iter().map(|i| Reply::Int(*i)).collect())
    }

    #[test]
    fn replies_decode() {
        assert_eq!(
            decode_acquire(&arr(&[1, 0, 2])).unwrap(),
            AcquireReply::Acquired { fence: 0, holds: 2 }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, -2, 3])).unwrap(),
            AcquireReply::Waiting {
                pttl: -2,
                position: 3
            }
        );
        assert!(decode_acquire(&arr(&[0, 10])).is_err());
        assert!(decode_acquire(&arr(&[1, 0, 0])).is_err());
        assert!(decode_acquire(&Reply::Nil).is_err());
        assert_eq!(decode_release(&Reply::Int(2)).unwrap(), OwnershipReply::HandedOff);
        assert_eq!(decode_release(&Reply::Int(-2)).unwrap(), OwnershipReply::Absent);
        assert_eq!(decode_abort(&Reply::Int(2)).unwrap(), AbortReply::LeftQueue);
        assert_eq!(decode_abort(&Reply::Int(1)).unwrap(), AbortReply::Undone);
        assert_eq!(decode_abort(&Reply::Int(0)).unwrap(), AbortReply::Nothing);
        assert!(decode_abort(&Reply::Int(5)).is_err());
    }
}
