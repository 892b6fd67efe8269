//! The multi-lock composition rule: all or nothing over several locks, taken in one order so
//! that two callers locking overlapping sets in opposite orders never deadlock.
//!
//! [`plan`] sorts the members by name (bytewise) and decides how to take them: in one
//! `multi_acquire` script when every member is a lease or reentrant lock and one script may
//! touch all their keys (a single node, a quorum node, or one Redis Cluster slot), else one
//! member after another in the sorted order, each with its own kind's script, rolling back what
//! was taken when one fails. Redisson's `RedissonMultiLock` has no keys of its own and takes its
//! members in the order given (retrying from the first after a failure); members on shared
//! names exclude each other either way.

use super::{ints, request, scripts, unexpected};
use crate::error::{Error, Result};
use crate::protocol::keys;
use crate::protocol::reply::{self, OwnershipReply, Reply};
use crate::protocol::request::{set_nx_px, Holder, Request};

/// One member of a multi-lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The lock's name (its key).
    pub name: String,
    /// How it is held: a lease or reentrant [`Holder`] (these can share one script), or `None`
    /// for kinds taken by their own script (fair, read, write).
    pub holder: Option<Holder>,
}

/// How to take the members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// One `multi_acquire` script over every member, in this order (indices into the input).
    OneScript(Vec<usize>),
    /// One member after another in this order, rolling back on failure.
    InOrder(Vec<usize>),
}

/// Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag (the text inside the first
/// `{...}` when non-empty, else the whole key) mod 16384, as in the Redis Cluster spec.
pub fn hash_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &bytes[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tagged.unwrap_or(bytes)) % 16384
}

/// Decides the order and the way to take `members`. `cluster`: the keys live on a Redis
/// Cluster, where one script may only touch keys of one slot.
///
/// # Errors
/// `InvalidArgument` for no members, an empty or over-long name, or a name given twice (a
/// lease lock would wait for itself).
pub fn plan(members: &[Member], cluster: bool) -> Result<Plan> {
    if members.is_empty() {
        return Err(Error::invalid("a multi-lock needs at least one lock"));
    }
    for m in members {
        keys::validate_name(&m.name)?;
    }
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| members[a].name.as_bytes().cmp(members[b].name.as_bytes()));
    if order.windows(2).any(|w| members[w[0]].name == members[w[1]].name) {
        return Err(Error::invalid("a multi-lock names the same lock twice"));
    }
    let scriptable = members.iter().all(|m| m.holder.is_some());
    let one_slot = !cluster || one_slot(members.iter().map(|m| m.name.as_str()));
    Ok(if scriptable && one_slot {
        Plan::OneScript(order)
    } else {
        Plan::InOrder(order)
    })
}

/// Whether every name hashes to one Redis Cluster slot (where one script may touch them all).
pub fn one_slot<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    let Some(first) = names.next().map(hash_slot) else {
        return true;
    };
    names.all(|n| hash_slot(n) == first)
}

fn specs<'a>(members: &'a [&'a Member]) -> Result<Vec<(&'a str, &'a Holder)>> {
    members
        .iter()
        .map(|m| {
            m.holder
                .as_ref()
                .map(|h| (m.name.as_str(), h))
                .ok_or_else(|| Error::invalid("this lock kind cannot join a one-script multi-lock"))
        })
        .collect()
}

/// The `multi_acquire` request over `members` (in [`Plan::OneScript`] order). `request_id`
/// names its idempotency latch (in the first member's slot), kept `latch_ttl_ms`; a set of
/// lease members only writes none (their fresh tokens make a repeat and an undo exact), and
/// the script takes each of them with `SET NX` as a lease lock's own acquire does.
///
/// # Errors
/// `InvalidArgument` when a member has no holder or there are no members.
pub fn acquire(members: &[&Member], lease_ms: u64, request_id: &str, latch_ttl_ms: u64) -> Result<Request> {
    let specs = specs(members)?;
    let first = specs
        .first()
        .ok_or_else(|| Error::invalid("a multi-lock needs at least one lock"))?
        .0;
    let mut keys: Vec<String> = specs.iter().map(|(n, _)| (*n).to_owned()).collect();
    keys.push(keys::acquire_latch(first, request_id));
    let lease_only = specs.iter().all(|(_, h)| matches!(h, Holder::Lease { .. }));
    let latch_ttl_ms = if lease_only { 0 } else { latch_ttl_ms };
    let mut args = vec![lease_ms.to_string(), latch_ttl_ms.to_string()];
    args.extend(specs.iter().map(|(_, h)| h.spec()));
    let mut request = request(&scripts::MULTI_ACQUIRE, keys, args);
    // Lease members only: each member's own `SET NX PX`, pipelined. Redis runs them for less
    // than the script; not atomic, so a set not taken whole must be undone ([`abort`], exact
    // by the fresh tokens), and only a first attempt may use it (a retry needs the script's
    // token check, as a lease lock's does).
    if lease_only {
        request.plain = Some(
            specs
                .iter()
                .filter_map(|(name, h)| match h {
                    Holder::Lease { token } => Some(set_nx_px(name, token, lease_ms)),
                    _ => None,
                })
                .collect(),
        );
    }
    Ok(request)
}

/// Undoes the `multi_acquire` request `request_id` over `members` (the same members, in the
/// same order) if it applied (its latch proves it; a set of lease members only, which writes
/// no latch, by their tokens): lease members still holding their token are deleted,
/// reentrant members lose one count; `0` goes to the unlock channel of each member that goes. Reply: 1 undone, 0 nothing to undo ([`decode_abort`]).
///
/// # Errors
/// `InvalidArgument` when a member has no holder or there are no members.
pub fn abort(members: &[&Member], request_id: &str, publish: &str) -> Result<Request> {
    let specs = specs(members)?;
    let first = specs
        .first()
        .ok_or_else(|| Error::invalid("a multi-lock needs at least one lock"))?
        .0;
    let mut keys: Vec<String> = specs.iter().map(|(n, _)| (*n).to_owned()).collect();
    keys.push(keys::acquire_latch(first, request_id));
    let mut args = vec![publish.to_owned()];
    for (name, holder) in &specs {
        args.push(holder.spec());
        args.push(keys::lock_channel(name));
    }
    // Marked as an undo (`Request::is_undo`): a transport then sends it behind every try of its
    // attempt left on a stalled connection, so it cannot run before a grant it undoes. (Until
    // stop 42 it was not: after a paused Redis a multi-lock's late grant stayed for its whole
    // lease, found by a user trial.)
    let mut abort = request(&scripts::MULTI_ABORT, keys, args);
    abort.by_source = true;
    Ok(abort)
}

/// Decodes the reply of [`abort`]: `true` when a grant was undone.
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_abort(reply: &Reply) -> Result<bool> {
    match reply.as_int() {
        Some(1) => Ok(true),
        Some(0) => Ok(false),
        _ => Err(unexpected(&scripts::MULTI_ABORT, reply)),
    }
}

/// Outcome of a one-script multi acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// Every member taken.
    Acquired,
    /// Member `index` (0-based, in the request's order) is held by someone else; nothing was
    /// taken. `pttl` is its remaining lease in ms (-1 none).
    Busy {
        /// Index of the busy member in the request.
        index: usize,
        /// Its remaining lease, ms.
        pttl: i64,
    },
    /// The plain form's answer when not every member was taken: member `index` (the first
    /// refused) is held by someone else (its TTL unknown); when `taken`, other members were
    /// taken by this request and must be undone ([`abort`]).
    PartlyBusy {
        /// Index of the first busy member in the request.
        index: usize,
        /// Some members were taken.
        taken: bool,
    },
}

/// Decodes the reply of [`acquire`].
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_acquire(reply: &Reply) -> Result<AcquireReply> {
    let script = &scripts::MULTI_ACQUIRE;
    // The plain form: one `SET NX PX` answer per member, OK (taken) or nil (busy); a set of
    // one member is answered by that one command's reply, not an array.
    let answer = |r: &Reply| match r {
        Reply::Bytes(b) if b == b"OK" => Some(true),
        Reply::Nil => Some(false),
        _ => None,
    };
    let set_answers = match reply {
        Reply::Nil | Reply::Bytes(_) => answer(reply).map(|taken| vec![taken]),
        Reply::Array(items) => items.iter().map(answer).collect::<Option<Vec<bool>>>(),
        _ => None,
    };
    if let Some(taken) = set_answers.filter(|t| !t.is_empty()) {
        return Ok(match taken.iter().position(|t| !t) {
            None => AcquireReply::Acquired,
            Some(index) => AcquireReply::PartlyBusy {
                index,
                taken: taken.contains(&true),
            },
        });
    }
    match ints(script, reply)?.as_slice() {
        [1] => Ok(AcquireReply::Acquired),
        [0, index, pttl] if *index >= 1 => Ok(AcquireReply::Busy {
            index: (*index - 1) as usize,
            pttl: *pttl,
        }),
        _ => Err(unexpected(script, reply)),
    }
}

/// One member of a [`release`]: its lock, and the release request's id (naming its
/// idempotency latch `redisson_unlock_latch:{N}:<id>`, the one its kind's own release would
/// use) with the latch's life in ms.
#[derive(Debug, Clone, Copy)]
pub struct Releasing<'a> {
    /// The member.
    pub member: &'a Member,
    /// The release request's id (random, reused by the retries of this member's release).
    pub request_id: &'a str,
    /// How long its latch lives, ms.
    pub latch_ttl_ms: u64,
    /// This release was sent before (its outcome unknown): its latch may hold the answer.
    /// When no member's was, the script reads no latch (a new request id has none).
    pub sent_before: bool,
}

/// The `multi_release` request over `members`, in one script: each member released as its
/// own kind's release would, with its own latch, so a retry after a lost reply (this request
/// again, or the member's own release with the same id) gets the first answer back (the
/// latches are read only when some member's release was [`sent_before`](Releasing::sent_before)).
/// `lease_ms` is restored on a partial reentrant release; each member's `0` goes to its own
/// unlock channel.
///
/// # Errors
/// `InvalidArgument` when a member has no holder.
pub fn release(members: &[Releasing<'_>], lease_ms: u64, publish: &str) -> Result<Request> {
    let refs: Vec<&Member> = members.iter().map(|m| m.member).collect();
    let specs = specs(&refs)?;
    let mut keys: Vec<String> = specs.iter().map(|(n, _)| (*n).to_owned()).collect();
    keys.extend(
        specs
            .iter()
            .zip(members)
            .map(|((name, _), m)| keys::unlock_latch(name, m.request_id)),
    );
    let sent_before = members.iter().any(|m| m.sent_before);
    let mut args = vec![
        lease_ms.to_string(),
        publish.to_owned(),
        if sent_before { "1" } else { "0" }.to_owned(),
    ];
    for ((name, holder), m) in specs.iter().zip(members) {
        args.push(holder.spec());
        args.push(keys::lock_channel(name));
        args.push(m.latch_ttl_ms.to_string());
    }
    Ok(request(&scripts::MULTI_RELEASE, keys, args))
}

/// Decodes the reply of [`release`]: one outcome per member (`Done`, `HandedOff`,
/// `StillHeld`, `Taken`, `Absent`), in the request's order.
///
/// # Errors
/// `Redis` when the reply is not `expected` codes.
pub fn decode_release(reply: &Reply, expected: usize) -> Result<Vec<OwnershipReply>> {
    let script = &scripts::MULTI_RELEASE;
    let codes = ints(script, reply)?;
    if codes.len() != expected || !matches!(reply, Reply::Array(_)) {
        return Err(unexpected(script, reply));
    }
    codes
        .iter()
        .map(|c| reply::decode_ownership(&Reply::Int(*c)).map_err(|_| unexpected(script, reply)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(name: &str) -> Member {
        Member {
            name: name.into(),
            holder: Some(Holder::Lease { token: "t".into() }),
        }
    }

    #[test]
    fn slots_match_the_redis_cluster_spec() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        // CRC16/XMODEM check value of "123456789" is 0x31C3 (below 16384, so also its slot).
        assert_eq!(hash_slot("123456789"), 0x31C3);
        assert_eq!(hash_slot("foo"), 12182);
        assert_eq!(hash_slot("{user1000}.following"), hash_slot("user1000"));
        assert_eq!(hash_slot("foo{}{bar}"), hash_slot("foo{}{bar}"));
        assert_ne!(hash_slot("foo{}{bar}"), hash_slot("bar"));
        assert_eq!(hash_slot("foo{{bar}}zap"), hash_slot("{bar"));
    }

    #[cfg(feature = "native")]
    #[test]
    fn the_abort_is_the_undo_of_its_own_attempt_only() {
        let ms = [lease("{acct}:1"), lease("{acct}:2")];
        let refs: Vec<&Member> = ms.iter().collect();
        let attempt = acquire(&refs, 30_000, "r1", 6_000).unwrap();
        let abort_it = abort(&refs, "r1", "0").unwrap();
        assert!(abort_it.is_undo());
        assert!(abort_it.undoes(attempt.attempt_mark().as_ref()));
        let other = acquire(&refs, 30_000, "r2", 6_000).unwrap();
        assert!(!abort_it.undoes(other.attempt_mark().as_ref()));
    }

    #[test]
    fn members_are_sorted_and_grouped_by_slot() {
        let ms = [lease("b"), lease("a"), lease("c")];
        assert_eq!(plan(&ms, false).unwrap(), Plan::OneScript(vec![1, 0, 2]));
        assert_eq!(plan(&ms, true).unwrap(), Plan::InOrder(vec![1, 0, 2]));
        let tagged = [lease("{acct}:2"), lease("{acct}:1")];
        assert_eq!(plan(&tagged, true).unwrap(), Plan::OneScript(vec![1, 0]));
        let mixed = [
            lease("a"),
            Member {
                name: "f".into(),
                holder: None,
            },
        ];
        assert_eq!(plan(&mixed, false).unwrap(), Plan::InOrder(vec![0, 1]));
        assert!(plan(&[], false).is_err());
        assert!(plan(&[lease("a"), lease("a")], false).is_err());
        assert!(plan(&[lease("")], false).is_err());
    }

    #[test]
    fn requests_and_replies() {
        let a = lease("a");
        let b = Member {
            name: "b".into(),
            holder: Some(Holder::Reentrant { owner: "u:1".into() }),
        };
        let r = acquire(&[&a, &b], 1000, "req", 9000).unwrap();
        assert_eq!(r.keys, ["a", "b", "redlatch_acquire_latch:{a}:req"]);
        assert_eq!(r.args, ["1000", "9000", "Lt", "Ru:1"]);
        let leases = lease("c");
        let r = acquire(&[&a, &leases], 1000, "req", 9000).unwrap();
        assert_eq!(r.args, ["1000", "0", "Lt", "Lt"], "lease members only: no latch");
        assert_eq!(
            r.plain.unwrap(),
            [
                ["SET", "a", "t", "NX", "PX", "1000"],
                ["SET", "c", "t", "NX", "PX", "1000"]
            ],
            "lease members only: each member's SET NX PX"
        );
        assert_eq!(acquire(&[&a, &b], 1000, "req", 9000).unwrap().plain, None);
        let releasing = [
            Releasing {
                member: &a,
                request_id: "ra",
                latch_ttl_ms: 2000,
                sent_before: false,
            },
            Releasing {
                member: &b,
                request_id: "rb",
                latch_ttl_ms: 30000,
                sent_before: false,
            },
        ];
        let r = release(&releasing, 1000, "publish").unwrap();
        assert_eq!(
            r.keys,
            [
                "a",
                "b",
                "redisson_unlock_latch:{a}:ra",
                "redisson_unlock_latch:{b}:rb"
            ]
        );
        assert_eq!(
            r.args,
            [
                "1000",
                "publish",
                "0",
                "Lt",
                "redisson_lock__channel:{a}",
                "2000",
                "Ru:1",
                "redisson_lock__channel:{b}",
                "30000"
            ]
        );
        let r = abort(&[&a, &b], "req", "publish").unwrap();
        assert_eq!(r.keys, ["a", "b", "redlatch_acquire_latch:{a}:req"]);
        assert_eq!(
            r.args,
            [
                "publish",
                "Lt",
                "redisson_lock__channel:{a}",
                "Ru:1",
                "redisson_lock__channel:{b}"
            ]
        );
        assert!(decode_abort(&Reply::Int(1)).unwrap());
        let f = Member {
            name: "f".into(),
            holder: None,
        };
        assert!(acquire(&[&f], 1, "r", 1).is_err());
        assert!(abort(&[&f], "r", "publish").is_err());
        assert_eq!(
            decode_acquire(&Reply::Array(vec![Reply::Int(1)])).unwrap(),
            AcquireReply::Acquired
        );
        let busy = Reply::Array(vec![Reply::Int(0), Reply::Int(2), Reply::Int(50)]);
        assert_eq!(
            decode_acquire(&busy).unwrap(),
            AcquireReply::Busy { index: 1, pttl: 50 }
        );
        // The plain form's pipeline: one SET NX PX answer per member.
        let ok = || Reply::Bytes(b"OK".to_vec());
        let plain = |r: Vec<Reply>| decode_acquire(&Reply::Array(r)).unwrap();
        assert_eq!(plain(vec![ok(), ok()]), AcquireReply::Acquired);
        assert_eq!(
            plain(vec![ok(), Reply::Nil, ok()]),
            AcquireReply::PartlyBusy {
                index: 1,
                taken: true
            }
        );
        assert_eq!(
            plain(vec![Reply::Nil, Reply::Nil]),
            AcquireReply::PartlyBusy {
                index: 0,
                taken: false
            }
        );
        assert!(decode_acquire(&Reply::Array(vec![])).is_err());
        // A set of one member: its SET's own reply (found by the Python quorum suite).
        assert_eq!(decode_acquire(&ok()).unwrap(), AcquireReply::Acquired);
        assert_eq!(
            decode_acquire(&Reply::Nil).unwrap(),
            AcquireReply::PartlyBusy {
                index: 0,
                taken: false
            }
        );
        let codes = Reply::Array(vec![Reply::Int(1), Reply::Int(-2)]);
        assert_eq!(
            decode_release(&codes, 2).unwrap(),
            [OwnershipReply::Done, OwnershipReply::Absent]
        );
        assert!(decode_release(&codes, 3).is_err());
    }
}
