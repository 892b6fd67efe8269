//! Read/write lock (Redisson `RedissonReadLock` / `RedissonWriteLock` 4.7): one hash `N` with
//! `mode` = `read` | `write`, reader fields `<owner>` -> hold count, the writer's field
//! `<owner>:write` -> hold count; one `T(N):<owner>:rwlock_timeout:<k>` STRING per read hold
//! (PX lease), so a dead reader's holds expire while other readers keep theirs. Channel
//! `redisson_rwlock:{N}`: `0` after a read release, `1` (wake every waiter) after a write release.
//!
//! Readers share; a writer excludes everyone but its own owner's read holds; the writer's owner
//! may also read. A read-to-write upgrade is refused at once ([`AcquireReply::UpgradeRefused`]):
//! Redisson would wait for the owner's own read holds forever. Write holds extend and renew like
//! `rlock` on the `:write` field ([`write_extend`]); read holds with [`read_extend`].

use super::{ints, keys as family_keys, request, scripts, unexpected};
use crate::error::Result;
use crate::protocol::keys;
use crate::protocol::reply::{self, OwnershipReply, Reply};
use crate::protocol::request::{Holder, Request};

/// Read acquire of `owner` with `lease_ms`; `request_id` names its idempotency latch
/// (kept `latch_ttl_ms`).
pub fn read_acquire(name: &str, owner: &str, lease_ms: u64, request_id: &str, latch_ttl_ms: u64) -> Request {
    request(
        &scripts::RW_READ_ACQUIRE,
        vec![name.to_owned(), keys::acquire_latch(name, request_id)],
        vec![
            lease_ms.to_string(),
            owner.to_owned(),
            family_keys::write_owner(owner),
            family_keys::rw_timeout_prefix(name, owner),
            latch_ttl_ms.to_string(),
        ],
    )
}

/// Write acquire of `owner` (its field is `<owner>:write`), optionally fenced
/// (`INCR redisson_lock_token:{N}` on every grant).
pub fn write_acquire(
    name: &str,
    owner: &str,
    lease_ms: u64,
    fenced: bool,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Request {
    request(
        &scripts::RW_WRITE_ACQUIRE,
        vec![
            name.to_owned(),
            keys::fence_key(name),
            keys::acquire_latch(name, request_id),
        ],
        vec![
            lease_ms.to_string(),
            family_keys::write_owner(owner),
            owner.to_owned(),
            if fenced { "1" } else { "0" }.to_owned(),
            latch_ttl_ms.to_string(),
        ],
    )
}

/// Outcome of one read or write acquire attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// Granted or re-entered.
    Acquired {
        /// Fencing token (write locks that asked for one), else 0.
        fence: u64,
        /// This owner's hold count in that mode after the grant.
        holds: u64,
    },
    /// Held in a conflicting mode; `pttl` is the hash's remaining TTL in ms (-1 none).
    Busy {
        /// Remaining TTL of the lock, ms.
        pttl: i64,
    },
    /// Write acquire by an owner that holds the read lock: refused, never waited for.
    UpgradeRefused,
}

/// Decodes the reply of [`read_acquire`] or [`write_acquire`].
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_acquire(reply: &Reply) -> Result<AcquireReply> {
    let script = &scripts::RW_WRITE_ACQUIRE;
    match ints(script, reply)?.as_slice() {
        [1, fence, holds] if *fence >= 0 && *holds > 0 => Ok(AcquireReply::Acquired {
            fence: *fence as u64,
            holds: *holds as u64,
        }),
        [0, pttl] => Ok(AcquireReply::Busy { pttl: *pttl }),
        [-1, _] => Ok(AcquireReply::UpgradeRefused),
        _ => Err(unexpected(script, reply)),
    }
}

/// Release of `owner`'s newest read hold. With `undo` = the request id of an acquire whose
/// outcome is unknown, the release happens only if that acquire applied (its latch exists).
pub fn read_release(
    name: &str,
    owner: &str,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
    undo: Option<&str>,
) -> Request {
    let mut keys = vec![name.to_owned(), keys::unlock_latch(name, request_id)];
    keys.extend(undo.map(|id| keys::acquire_latch(name, id)));
    request(
        &scripts::RW_READ_RELEASE,
        keys,
        vec![
            owner.to_owned(),
            family_keys::rw_timeout_prefix(name, owner),
            keys::tag(name),
            publish.to_owned(),
            family_keys::rw_channel(name),
            latch_ttl_ms.to_string(),
        ],
    )
}

/// The release of a read hold of `owner` known lost (its lease ran out): releases none of
/// the owner's live holds, removes its expired ones (their counts would keep the hash, and
/// an upgrade refusal, alive while other readers hold). Reply as [`read_release`] (`-2`).
pub fn read_release_lost(
    name: &str,
    owner: &str,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Request {
    let mut r = read_release(name, owner, publish, request_id, latch_ttl_ms, None);
    r.args.push("1".to_owned());
    r
}

/// Release of one write hold of `owner`; `lease_ms` is restored on a partial release. `undo`
/// as for [`read_release`].
pub fn write_release(
    name: &str,
    owner: &str,
    lease_ms: u64,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
    undo: Option<&str>,
) -> Request {
    let mut keys = vec![name.to_owned(), keys::unlock_latch(name, request_id)];
    keys.extend(undo.map(|id| keys::acquire_latch(name, id)));
    request(
        &scripts::RW_WRITE_RELEASE,
        keys,
        vec![
            lease_ms.to_string(),
            family_keys::write_owner(owner),
            publish.to_owned(),
            family_keys::rw_channel(name),
            latch_ttl_ms.to_string(),
        ],
    )
}

/// What a release (or undo) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReply {
    /// The release applied; the rlock-style outcome (`Done`, `HandedOff`, `StillHeld`, `Taken`,
    /// `Absent`). For reads `Done` means this owner's last read hold went (other readers may
    /// still hold the lock), `StillHeld` that this owner has more read holds.
    Released(OwnershipReply),
    /// Undo only: the acquire to undo had not applied; nothing changed.
    NothingToUndo,
}

/// Decodes the reply of [`read_release`] or [`write_release`].
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_release(reply: &Reply) -> Result<ReleaseReply> {
    if reply.as_int() == Some(3) {
        return Ok(ReleaseReply::NothingToUndo);
    }
    reply::decode_ownership(reply)
        .map(ReleaseReply::Released)
        .map_err(|_| unexpected(&scripts::RW_READ_RELEASE, reply))
}

/// Extend / renew every read hold of `owner` to `lease_ms` (the hash is never shortened). The
/// reply decodes with [`decode_extend`](crate::protocol::reply::decode_extend).
pub fn read_extend(name: &str, owner: &str, lease_ms: u64) -> Request {
    request(
        &scripts::RW_READ_EXTEND,
        vec![name.to_owned()],
        vec![
            lease_ms.to_string(),
            owner.to_owned(),
            family_keys::rw_timeout_prefix(name, owner),
            keys::tag(name),
        ],
    )
}

/// Extend / renew the write hold of `owner`: `rlock`'s extend on the `:write` field (Redisson's
/// write lock uses the plain lock renewal). Decodes with `reply::decode_extend`.
pub fn write_extend(name: &str, owner: &str, lease_ms: u64) -> Request {
    write_holder(owner).extend(name, lease_ms)
}

/// The holder whose `renew_batch` / `inspect` spec covers `owner`'s write hold.
pub fn write_holder(owner: &str) -> Holder {
    Holder::Reentrant {
        owner: family_keys::write_owner(owner),
    }
}

/// What a message on `redisson_rwlock:{N}` asks of waiters: `0` wakes one (read release),
/// `1` wakes all (write release). `None` for other payloads.
pub fn wakes_all(payload: &[u8]) -> Option<bool> {
    match super::decode_message(payload)? {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_follow_redisson_keys() {
        let r = read_acquire("rw", "u:1", 10000, "req", 9000);
        assert_eq!(r.keys, ["rw", "redlatch_acquire_latch:{rw}:req"]);
        assert_eq!(
            r.args,
            ["10000", "u:1", "u:1:write", "{rw}:u:1:rwlock_timeout", "9000"]
        );
        let r = write_acquire("rw", "u:1", 10000, true, "req", 9000);
        assert_eq!(r.keys[1], "redisson_lock_token:{rw}");
        assert_eq!(r.args, ["10000", "u:1:write", "u:1", "1", "9000"]);
        let r = read_release("rw", "u:1", "publish", "req", 9000, None);
        assert_eq!(r.keys, ["rw", "redisson_unlock_latch:{rw}:req"]);
        assert_eq!(
            r.args,
            [
                "u:1",
                "{rw}:u:1:rwlock_timeout",
                "{rw}",
                "publish",
                "redisson_rwlock:{rw}",
                "9000"
            ]
        );
        let r = write_release("x{t}", "u:1", 500, "spublish", "r2", 9000, Some("r1"));
        assert_eq!(
            r.keys,
            [
                "x{t}",
                "redisson_unlock_latch:x{t}:r2",
                "redlatch_acquire_latch:x{t}:r1"
            ]
        );
        assert_eq!(
            r.args,
            ["500", "u:1:write", "spublish", "redisson_rwlock:x{t}", "9000"]
        );
        assert_eq!(
            read_extend("rw", "u:1", 7).args,
            ["7", "u:1", "{rw}:u:1:rwlock_timeout", "{rw}"]
        );
        assert_eq!(write_extend("rw", "u:1", 7).args, ["7", "u:1:write"]);
        assert_eq!(write_holder("u:1").spec(), "Ru:1:write");
    }

    fn arr(v: &[i64]) -> Reply {
        Reply::Array(v.iter().map(|i| Reply::Int(*i)).collect())
    }

    #[test]
    fn replies_decode() {
        assert_eq!(
            decode_acquire(&arr(&[1, 0, 3])).unwrap(),
            AcquireReply::Acquired { fence: 0, holds: 3 }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, 900])).unwrap(),
            AcquireReply::Busy { pttl: 900 }
        );
        assert_eq!(
            decode_acquire(&arr(&[-1, 900])).unwrap(),
            AcquireReply::UpgradeRefused
        );
        assert!(decode_acquire(&arr(&[2, 0])).is_err());
        assert_eq!(
            decode_release(&Reply::Int(3)).unwrap(),
            ReleaseReply::NothingToUndo
        );
        assert_eq!(
            decode_release(&Reply::Int(0)).unwrap(),
            ReleaseReply::Released(OwnershipReply::StillHeld)
        );
        assert_eq!(
            decode_release(&Reply::Int(-1)).unwrap(),
            ReleaseReply::Released(OwnershipReply::Taken)
        );
        assert!(decode_release(&Reply::Int(9))
            .unwrap_err()
            .message()
            .contains("rw_read_release"));
        assert_eq!(wakes_all(b"1"), Some(true));
        assert_eq!(wakes_all(b"0"), Some(false));
        assert_eq!(wakes_all(b"7"), None);
    }
}
