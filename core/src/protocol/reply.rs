//! Transport-neutral Redis replies and their decoding into lock outcomes.
//!
//! Transports convert their client library's reply type into [`Reply`]; everything after that
//! is decided here, so every transport (redis-rs, a JS `eval` function) reads replies the same way.

use crate::error::{Error, ErrorKind, Reason, Result};

/// A Redis reply as far as redlatch's scripts need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Nil / null.
    Nil,
    /// Integer.
    Int(i64),
    /// Bulk or simple string.
    Bytes(Vec<u8>),
    /// Array.
    Array(Vec<Reply>),
}

impl Reply {
    /// The reply as an integer; numeric strings are accepted (some transports stringify).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Reply::Int(i) => Some(*i),
            Reply::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
            _ => None,
        }
    }

    fn ints(&self) -> Option<Vec<i64>> {
        match self {
            Reply::Array(items) => items.iter().map(Reply::as_int).collect(),
            _ => None,
        }
    }
}

/// A short, readable rendering for error messages: text as (lossy UTF-8) text, long values
/// cut, so a garbage reply of megabytes cannot make a message of megabytes.
impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const TEXT: usize = 64;
        const ITEMS: usize = 8;
        match self {
            Reply::Nil => f.write_str("nil"),
            Reply::Int(i) => write!(f, "{i}"),
            Reply::Bytes(b) => {
                let text = String::from_utf8_lossy(&b[..b.len().min(TEXT)]);
                if b.len() > TEXT {
                    write!(f, "{text:?}... ({} bytes)", b.len())
                } else {
                    write!(f, "{text:?}")
                }
            }
            Reply::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().take(ITEMS).enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                if items.len() > ITEMS {
                    write!(f, ", ... ({} items)", items.len())?;
                }
                f.write_str("]")
            }
        }
    }
}

fn unexpected(script: &str, reply: &Reply) -> Error {
    Error::new(ErrorKind::Redis, format!("unexpected reply to {script}: {reply}"))
}

/// Outcome of one acquire attempt on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// Granted. `fence` is the fencing token (0 when not fenced); `holds` the reentrant hold
    /// count after this acquire (1 for lease locks).
    Acquired {
        /// Fencing token, 0 when the lock is not fenced.
        fence: u64,
        /// Hold count after this acquire.
        holds: u64,
    },
    /// Held by someone else; `pttl` is its remaining lease in ms (-1 when it has none).
    Busy {
        /// Remaining lease of the current holder, ms (-1: no TTL).
        pttl: i64,
    },
}

/// Decodes the reply of `lease_acquire` or `rlock_acquire`.
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_acquire(reply: &Reply) -> Result<AcquireReply> {
    // The plain `SET NX PX` form: OK = granted, nil = held by someone else (TTL unknown).
    match reply {
        Reply::Bytes(b) if b == b"OK" => return Ok(AcquireReply::Acquired { fence: 0, holds: 1 }),
        Reply::Nil => return Ok(AcquireReply::Busy { pttl: -1 }),
        _ => {}
    }
    let ints = reply.ints().ok_or_else(|| unexpected("acquire", reply))?;
    match ints.as_slice() {
        [1, fence] => Ok(AcquireReply::Acquired {
            fence: *fence as u64,
            holds: 1,
        }),
        [1, fence, holds] => Ok(AcquireReply::Acquired {
            fence: *fence as u64,
            holds: *holds as u64,
        }),
        [0, pttl] => Ok(AcquireReply::Busy { pttl: *pttl }),
        _ => Err(unexpected("acquire", reply)),
    }
}

/// Outcome of a release, extend or renewal on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnershipReply {
    /// The operation applied: released, extended or renewed.
    Done,
    /// Released, and the unlock message reached at least one waiting client (hand-off).
    HandedOff,
    /// Reentrant release only: hold count decremented, the lock is still held by this owner.
    StillHeld,
    /// The key is gone (expired or deleted).
    Absent,
    /// Another owner holds the key; it was left untouched.
    Taken,
}

impl OwnershipReply {
    /// One node's outcome for a quorum error's per-node list (`Error::nodes`): `Ok` when
    /// this owner held the lock there, else why not.
    pub fn node_outcome(self) -> std::result::Result<(), String> {
        match self {
            OwnershipReply::Absent => Err("the key is gone".to_owned()),
            OwnershipReply::Taken => Err("held by another owner".to_owned()),
            _ => Ok(()),
        }
    }

    /// `true` when this owner held the lock at the time of the call.
    pub fn was_owned(self) -> bool {
        matches!(
            self,
            OwnershipReply::Done | OwnershipReply::HandedOff | OwnershipReply::StillHeld
        )
    }

    /// Why a hold this reply refused is not ours (within its validity; past it the reason is
    /// [`Reason::Expired`], decided by the caller): `Deleted` for a key that is gone, `Taken`
    /// for a key another owner holds. `None` when the hold was ours.
    pub fn refusal(self) -> Option<Reason> {
        match self {
            OwnershipReply::Absent => Some(Reason::Deleted),
            OwnershipReply::Taken => Some(Reason::Taken),
            _ => None,
        }
    }
}

/// Decodes the reply of the release and extend scripts (both kinds).
///
/// # Errors
/// `Redis` when the reply is not one of the documented codes.
pub fn decode_ownership(reply: &Reply) -> Result<OwnershipReply> {
    match reply.as_int() {
        Some(1) => Ok(OwnershipReply::Done),
        Some(2) => Ok(OwnershipReply::HandedOff),
        Some(0) => Ok(OwnershipReply::StillHeld),
        Some(-1) => Ok(OwnershipReply::Taken),
        Some(-2) => Ok(OwnershipReply::Absent),
        _ => Err(unexpected("release", reply)),
    }
}

/// Decodes the reply of both extend scripts, where `0` means absent.
///
/// # Errors
/// `Redis` when the reply is not 2, 1, 0 or -1.
pub fn decode_extend(reply: &Reply) -> Result<OwnershipReply> {
    decode_replaced(reply, "extend")
}

/// Decodes the reply of the lease-lock release script (the codes of [`decode_extend`]).
///
/// # Errors
/// `Redis` when the reply is not 2, 1, 0 or -1.
pub fn decode_lease_release(reply: &Reply) -> Result<OwnershipReply> {
    decode_replaced(reply, "release")
}

fn decode_replaced(reply: &Reply, script: &str) -> Result<OwnershipReply> {
    match reply.as_int() {
        Some(1) => Ok(OwnershipReply::Done),
        Some(2) => Ok(OwnershipReply::HandedOff),
        Some(0) => Ok(OwnershipReply::Absent),
        Some(-1) => Ok(OwnershipReply::Taken),
        _ => Err(unexpected(script, reply)),
    }
}

/// Decodes the reply of `force_unlock`: `true` when a lock was deleted.
///
/// # Errors
/// `Redis` when the reply is not 1 or 0.
pub fn decode_force_unlock(reply: &Reply) -> Result<bool> {
    match reply.as_int() {
        Some(1) => Ok(true),
        Some(0) => Ok(false),
        _ => Err(unexpected("force_unlock", reply)),
    }
}

/// Decodes the reply of `renew_batch`: one outcome per hold, `Done` (renewed), `Absent` or
/// `Taken`.
///
/// # Errors
/// `Redis` when the reply is not an array of `expected` integers among 1, 0 and -1.
pub fn decode_renew_batch(reply: &Reply, expected: usize) -> Result<Vec<OwnershipReply>> {
    let ints = reply.ints().ok_or_else(|| unexpected("renew_batch", reply))?;
    if ints.len() != expected {
        return Err(unexpected("renew_batch", reply));
    }
    ints.into_iter()
        .map(|i| match i {
            1 => Ok(OwnershipReply::Done),
            0 => Ok(OwnershipReply::Absent),
            -1 => Ok(OwnershipReply::Taken),
            _ => Err(unexpected("renew_batch", reply)),
        })
        .collect()
}

/// State of a lock as `inspect` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inspection {
    /// The key exists (held by anyone).
    pub exists: bool,
    /// Remaining TTL in ms, `None` when the key is absent or has no TTL.
    pub pttl: Option<u64>,
    /// Held by the owner or token asked about.
    pub owned: bool,
    /// Reentrant hold count of that owner (1 for an owned lease lock, 0 when not owned).
    pub holds: u64,
}

/// Decodes the reply of `inspect`.
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_inspect(reply: &Reply) -> Result<Inspection> {
    let ints = reply.ints().ok_or_else(|| unexpected("inspect", reply))?;
    match ints.as_slice() {
        [exists, pttl, owned, holds] => Ok(Inspection {
            exists: *exists == 1,
            pttl: u64::try_from(*pttl).ok(),
            owned: *owned == 1,
            holds: (*holds).max(0) as u64,
        }),
        _ => Err(unexpected("inspect", reply)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unexpected_replies_are_named_and_shown_short() {
        let garbage = Reply::Bytes(vec![b'x'; 1_000_000]);
        let e = decode_lease_release(&garbage).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Redis);
        assert!(
            e.message().starts_with("unexpected reply to release: \"xxx"),
            "{e}"
        );
        assert!(e.message().len() < 200, "{} chars", e.message().len());
        assert!(e.message().ends_with("(1000000 bytes)"), "{e}");
        let e = decode_force_unlock(&Reply::Array(vec![Reply::Int(1); 20])).unwrap_err();
        assert!(
            e.message().ends_with("[1, 1, 1, 1, 1, 1, 1, 1, ... (20 items)]"),
            "{e}"
        );
        assert!(decode_force_unlock(&Reply::Int(1)).unwrap());
        assert!(decode_extend(&Reply::Nil)
            .unwrap_err()
            .message()
            .contains("extend: nil"));
    }

    fn arr(v: &[i64]) -> Reply {
        Reply::Array(v.iter().map(|i| Reply::Int(*i)).collect())
    }

    #[test]
    fn acquire_replies() {
        assert_eq!(
            decode_acquire(&arr(&[1, 0])).unwrap(),
            AcquireReply::Acquired { fence: 0, holds: 1 }
        );
        assert_eq!(
            decode_acquire(&arr(&[1, 7, 3])).unwrap(),
            AcquireReply::Acquired { fence: 7, holds: 3 }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, 1234])).unwrap(),
            AcquireReply::Busy { pttl: 1234 }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, -1])).unwrap(),
            AcquireReply::Busy { pttl: -1 }
        );
        assert_eq!(
            decode_acquire(&Reply::Nil).unwrap(),
            AcquireReply::Busy { pttl: -1 }
        );
        assert_eq!(
            decode_acquire(&Reply::Bytes(b"OK".to_vec())).unwrap(),
            AcquireReply::Acquired { fence: 0, holds: 1 }
        );
        assert!(decode_acquire(&Reply::Int(3)).is_err());
        assert!(decode_acquire(&arr(&[2, 1])).is_err());
        let stringly = Reply::Array(vec![Reply::Bytes(b"1".to_vec()), Reply::Bytes(b"9".to_vec())]);
        assert_eq!(
            decode_acquire(&stringly).unwrap(),
            AcquireReply::Acquired { fence: 9, holds: 1 }
        );
    }

    #[test]
    fn ownership_replies() {
        assert_eq!(decode_ownership(&Reply::Int(1)).unwrap(), OwnershipReply::Done);
        assert_eq!(
            decode_ownership(&Reply::Int(0)).unwrap(),
            OwnershipReply::StillHeld
        );
        assert_eq!(decode_ownership(&Reply::Int(-1)).unwrap(), OwnershipReply::Taken);
        assert_eq!(decode_ownership(&Reply::Int(-2)).unwrap(), OwnershipReply::Absent);
        assert!(decode_ownership(&Reply::Nil).is_err());
        assert_eq!(decode_extend(&Reply::Int(0)).unwrap(), OwnershipReply::Absent);
        assert!(OwnershipReply::StillHeld.was_owned());
        assert_eq!(
            decode_ownership(&Reply::Int(2)).unwrap(),
            OwnershipReply::HandedOff
        );
        assert_eq!(decode_extend(&Reply::Int(2)).unwrap(), OwnershipReply::HandedOff);
        assert!(OwnershipReply::HandedOff.was_owned());
        assert!(!OwnershipReply::Taken.was_owned());
    }

    #[test]
    fn batch_and_inspect_replies() {
        use OwnershipReply::{Absent, Done, Taken};
        assert_eq!(
            decode_renew_batch(&arr(&[1, 0, -1]), 3).unwrap(),
            vec![Done, Absent, Taken]
        );
        assert!(decode_renew_batch(&arr(&[1]), 2).is_err());
        assert!(decode_renew_batch(&arr(&[2]), 1).is_err());
        assert_eq!(Absent.refusal(), Some(Reason::Deleted));
        assert_eq!(Taken.refusal(), Some(Reason::Taken));
        assert_eq!(Done.refusal(), None);
        let i = decode_inspect(&arr(&[1, 900, 1, 2])).unwrap();
        assert_eq!(
            i,
            Inspection {
                exists: true,
                pttl: Some(900),
                owned: true,
                holds: 2
            }
        );
        let free = decode_inspect(&arr(&[0, -2, 0, 0])).unwrap();
        assert_eq!(free.pttl, None);
        assert!(!free.exists);
    }
}
