//! Permit-expirable semaphore (Redisson `RedissonPermitExpirableSemaphore` 4.7): STRING `N` =
//! permits available; ZSET `T(N):timeout` of the permits held, member = the permit id as 16
//! raw bytes, score = its expiry (absolute wall-clock ms, or [`NO_EXPIRY`]); channel
//! `redisson_sc:{N}` (message = the count). Every operation first gives expired permits back,
//! so a dead holder's permits return by themselves.
//!
//! Permit ids are Redisson's: 16 CSPRNG bytes, shown as 32 lower-case hex digits (what
//! `RPermitExpirableSemaphore.acquire` returns). Requests carry them in hex and the scripts
//! store the bytes, so a Java client releases a redlatch permit by its id and the reverse.
//! The count is set with [`super::semaphore::try_set_permits`] (same key and channel).

use super::{ints, keys as family_keys, request, scripts, unexpected, validate_count};
use crate::error::{Error, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use crate::protocol::token;

/// The score Redisson gives a permit without lease ("no expiry").
pub const NO_EXPIRY: u64 = 922_337_203_685_477;

/// `count` fresh permit ids (32 lower-case hex digits each, from the OS CSPRNG).
///
/// # Errors
/// `InvalidArgument` for a bad count; `Panic` when the OS random source fails.
pub fn new_permit_ids(count: u64) -> Result<Vec<String>> {
    validate_count("permits", count)?;
    (0..count).map(|_| token::new_token()).collect()
}

/// Checks a permit id given by a caller: 32 hex digits (either case, as Redisson's hex decoder).
///
/// # Errors
/// `InvalidArgument` otherwise (the id is not echoed: it works like a credential).
pub fn validate_permit_id(id: &str) -> Result<()> {
    if id.len() == 2 * token::TOKEN_BYTES && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(Error::invalid("a permit id is 32 hexadecimal digits"))
    }
}

/// The expiry score of a permit taken at `now_ms` with `lease_ms` (or without lease).
pub fn expiry(now_ms: u64, lease_ms: Option<u64>) -> u64 {
    lease_ms.map_or(NO_EXPIRY, |lease| now_ms.saturating_add(lease))
}

/// Where an [`acquire`] request's ids begin in its arguments (the first names the attempt:
/// `Request::attempt_mark`).
pub(crate) const FIRST_ID_ARG: usize = 6;

/// Acquire one permit per id in `ids` (from [`new_permit_ids`]), each expiring at `expiry_ms`.
///
/// # Errors
/// `InvalidArgument` for no ids, too many, or an id that is not 32 hex digits.
pub fn acquire(name: &str, ids: &[String], expiry_ms: u64, now_ms: u64, publish: &str) -> Result<Request> {
    validate_count("permits", ids.len() as u64)?;
    for id in ids {
        validate_permit_id(id)?;
    }
    let mut args = vec![
        ids.len().to_string(),
        expiry_ms.to_string(),
        now_ms.to_string(),
        NO_EXPIRY.to_string(),
        publish.to_owned(),
        family_keys::semaphore_channel(name),
    ];
    debug_assert_eq!(args.len(), FIRST_ID_ARG);
    args.extend(ids.iter().cloned());
    Ok(request(
        &scripts::PERMIT_ACQUIRE,
        vec![name.to_owned(), family_keys::permit_timeouts(name)],
        args,
    ))
}

/// Outcome of one acquire attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// Taken: the request's ids are held; `left` permits remain available.
    Acquired {
        /// Permits still available.
        left: i64,
    },
    /// Not enough permits. Wait for a message on the channel, or until `earliest_expiry`
    /// (wall-clock ms) when a held permit will come back by itself, then try again.
    NotEnough {
        /// The earliest expiry among held permits; `None` when none of them expires.
        earliest_expiry: Option<u64>,
    },
}

/// Decodes the reply of [`acquire`].
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_acquire(reply: &Reply) -> Result<AcquireReply> {
    let script = &scripts::PERMIT_ACQUIRE;
    match ints(script, reply)?.as_slice() {
        [1, left] => Ok(AcquireReply::Acquired { left: *left }),
        [0, -1] => Ok(AcquireReply::NotEnough {
            earliest_expiry: None,
        }),
        [0, at] if *at >= 0 => Ok(AcquireReply::NotEnough {
            earliest_expiry: Some(*at as u64),
        }),
        _ => Err(unexpected(script, reply)),
    }
}

/// Release the permit `id` (taken by any client, Java included).
///
/// # Errors
/// `InvalidArgument` when `id` is not 32 hex digits.
pub fn release(name: &str, id: &str, now_ms: u64, publish: &str) -> Result<Request> {
    validate_permit_id(id)?;
    Ok(request(
        &scripts::PERMIT_RELEASE,
        vec![name.to_owned(), family_keys::permit_timeouts(name)],
        vec![
            id.to_owned(),
            now_ms.to_string(),
            publish.to_owned(),
            family_keys::semaphore_channel(name),
        ],
    ))
}

/// [`release`] as request `request_id` (random, one per release call, reused by its retries),
/// whose idempotency latch (`redisson_unlock_latch:{N}:<request id>`) is kept `latch_ttl_ms`:
/// a retry whose first reply was lost gets the first answer back (the permit released, or
/// released late) instead of "unknown id", which a permit deleted meanwhile also answers.
///
/// # Errors
/// As [`release`].
pub fn release_once(
    name: &str,
    id: &str,
    now_ms: u64,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Result<Request> {
    let mut request = release(name, id, now_ms, publish)?;
    request
        .keys
        .push(crate::protocol::keys::unlock_latch(name, request_id));
    request.args.push(latch_ttl_ms.to_string());
    Ok(request)
}

/// Gives back permit `id` if the acquire that asked for it applied: [`release`] sent by
/// source, which transports recognize as the undo of that acquire (`Request::is_undo`) and
/// send behind it on its connection. Reply: [`decode_release`].
///
/// # Errors
/// As [`release`].
pub fn undo(name: &str, id: &str, now_ms: u64, publish: &str) -> Result<Request> {
    let mut request = release(name, id, now_ms, publish)?;
    request.by_source = true;
    Ok(request)
}

/// What a release by id found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseReply {
    /// Released.
    Released,
    /// Given back, but its lease had already ended (Redisson's `tryRelease` says `false`).
    Expired,
    /// No such permit held: never issued, released before, or reclaimed after expiry.
    Unknown,
}

/// Decodes the reply of [`release`].
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_release(reply: &Reply) -> Result<ReleaseReply> {
    match reply.as_int() {
        Some(1) => Ok(ReleaseReply::Released),
        Some(-1) => Ok(ReleaseReply::Expired),
        Some(0) => Ok(ReleaseReply::Unknown),
        _ => Err(unexpected(&scripts::PERMIT_RELEASE, reply)),
    }
}

/// Give the held permit `id` a new expiry (Redisson `updateLeaseTime`); reply 1 / 0 with
/// [`decode_extend`].
///
/// # Errors
/// `InvalidArgument` when `id` is not 32 hex digits.
pub fn extend(name: &str, id: &str, expiry_ms: u64, now_ms: u64, publish: &str) -> Result<Request> {
    validate_permit_id(id)?;
    Ok(request(
        &scripts::PERMIT_EXTEND,
        vec![name.to_owned(), family_keys::permit_timeouts(name)],
        vec![
            id.to_owned(),
            expiry_ms.to_string(),
            now_ms.to_string(),
            publish.to_owned(),
            family_keys::semaphore_channel(name),
        ],
    ))
}

/// Decodes the reply of [`extend`]: `true` when the permit was still held.
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_extend(reply: &Reply) -> Result<bool> {
    match reply.as_int() {
        Some(1) => Ok(true),
        Some(0) => Ok(false),
        _ => Err(unexpected(&scripts::PERMIT_EXTEND, reply)),
    }
}

/// Permits available and held, after giving expired ones back.
pub fn available(name: &str, now_ms: u64, publish: &str) -> Request {
    request(
        &scripts::PERMIT_AVAILABLE,
        vec![name.to_owned(), family_keys::permit_timeouts(name)],
        vec![
            now_ms.to_string(),
            publish.to_owned(),
            family_keys::semaphore_channel(name),
        ],
    )
}

/// Decodes the reply of [`available`]: `(available, held)`.
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_available(reply: &Reply) -> Result<(i64, u64)> {
    let script = &scripts::PERMIT_AVAILABLE;
    match ints(script, reply)?.as_slice() {
        [available, held] if *held >= 0 => Ok((*available, *held as u64)),
        _ => Err(unexpected(script, reply)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A permit's undo (its release by id, sent by source) goes behind its acquire on that
    /// acquire's connection: transports must recognize it and tie it to its own attempt only
    /// (before stop 35 they did not, and a timed-out acquire's permit stayed for its lease).
    #[cfg(feature = "native")]
    #[test]
    fn the_undo_is_recognized_as_the_undo_of_its_own_acquire() {
        use crate::protocol::family::PUBLISH;
        let ids = new_permit_ids(2).unwrap();
        let attempt = acquire("s", &ids[..1], 5000, 1000, PUBLISH).unwrap();
        let undo = undo("s", &ids[0], 1000, PUBLISH).unwrap();
        assert!(undo.is_undo());
        assert!(undo.undoes(attempt.attempt_mark().as_ref()));
        let another = acquire("s", &ids[1..], 5000, 1000, PUBLISH).unwrap();
        assert!(!undo.undoes(another.attempt_mark().as_ref()));
        assert!(!attempt.is_undo());
        assert!(
            !release("s", &ids[0], 1000, PUBLISH).unwrap().is_undo(),
            "a caller's release"
        );
    }

    #[test]
    fn permit_ids_are_redisson_shaped() {
        let ids = new_permit_ids(3).unwrap();
        assert_eq!(ids.len(), 3);
        for id in &ids {
            assert_eq!(id.len(), 32);
            validate_permit_id(id).unwrap();
        }
        assert!(new_permit_ids(0).is_err());
        assert!(validate_permit_id("ABCDEF0123456789abcdef0123456789").is_ok());
        let e = validate_permit_id("zz").unwrap_err();
        assert!(!e.message().contains("zz"), "{e}");
        assert!(validate_permit_id(&"a".repeat(31)).is_err());
    }

    #[test]
    fn requests_carry_ids_in_argv_after_the_fixed_arguments() {
        let ids = vec!["0".repeat(32), "f".repeat(32)];
        let r = acquire("p", &ids, expiry(1000, Some(500)), 1000, "publish").unwrap();
        assert_eq!(r.keys, ["p", "{p}:timeout"]);
        assert_eq!(
            &r.args[..6],
            [
                "2",
                "1500",
                "1000",
                "922337203685477",
                "publish",
                "redisson_sc:{p}"
            ]
        );
        assert_eq!(&r.args[6..], ids.as_slice());
        assert_eq!(expiry(1, None), NO_EXPIRY);
        assert!(acquire("p", &[], 1, 1, "publish").is_err());
        assert!(acquire("p", &["x".into()], 1, 1, "publish").is_err());
        let r = release("p", &ids[0], 9, "spublish").unwrap();
        assert_eq!(r.args, [ids[0].as_str(), "9", "spublish", "redisson_sc:{p}"]);
        assert!(release("p", "", 9, "publish").is_err());
        assert_eq!(extend("p", &ids[1], 5, 4, "publish").unwrap().args[1], "5");
        assert_eq!(
            available("p", 3, "publish").args,
            ["3", "publish", "redisson_sc:{p}"]
        );
    }

    fn arr(v: &[i64]) -> Reply {
        Reply::Array(v.iter().map(|i| Reply::Int(*i)).collect())
    }

    #[test]
    fn replies_decode() {
        assert_eq!(
            decode_acquire(&arr(&[1, 2])).unwrap(),
            AcquireReply::Acquired { left: 2 }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, 1234])).unwrap(),
            AcquireReply::NotEnough {
                earliest_expiry: Some(1234)
            }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, -1])).unwrap(),
            AcquireReply::NotEnough {
                earliest_expiry: None
            }
        );
        assert_eq!(decode_release(&Reply::Int(-1)).unwrap(), ReleaseReply::Expired);
        assert_eq!(decode_release(&Reply::Int(0)).unwrap(), ReleaseReply::Unknown);
        assert!(decode_extend(&Reply::Int(1)).unwrap());
        assert_eq!(decode_available(&arr(&[3, 1])).unwrap(), (3, 1));
    }
}
