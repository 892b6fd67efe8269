//! Semaphore (Redisson `RedissonSemaphore` 4.7): STRING `N` = permits available (absent = not
//! set, 0 available); channel `redisson_sc:{N}`, whose message is a permit count (the new count
//! after a release, or the count just set). Permits are not owned in Redis: any client may
//! release any number (Redisson's `RSemaphore`); "release only what this handle took" is the
//! caller's bookkeeping, and the permit-expirable semaphore ([`super::permits`]) is the owned
//! variant, whose permits come back by themselves.

use super::{int, ints, keys as family_keys, request, scripts, unexpected, validate_count};
use crate::error::Result;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;

/// Acquire `permits` (checked by [`validate_count`]).
///
/// # Errors
/// `InvalidArgument` for 0 or more than `i32::MAX` permits.
pub fn acquire(name: &str, permits: u64) -> Result<Request> {
    validate_count("permits", permits)?;
    Ok(request(
        &scripts::SEMAPHORE_ACQUIRE,
        vec![name.to_owned()],
        vec![permits.to_string()],
    ))
}

/// Acquire `permits` as request `request_id` (random, one per `acquire()` call, reused by its
/// retries), whose latch `redlatch_acquire_latch:{N}:<id>` lives `latch_ttl_ms`: a retry whose
/// first reply was lost gets that grant back instead of taking the permits twice, and
/// [`undo`] gives back the permits of a grant its caller never saw.
///
/// # Errors
/// `InvalidArgument` for 0 or more than `i32::MAX` permits.
pub fn acquire_once(name: &str, permits: u64, request_id: &str, latch_ttl_ms: u64) -> Result<Request> {
    let mut r = acquire(name, permits)?;
    r.keys
        .push(crate::protocol::keys::acquire_latch(name, request_id));
    r.args.push(latch_ttl_ms.to_string());
    Ok(r)
}

/// Gives back the permits that acquire request `request_id` ([`acquire_once`]) took, if it
/// applied (its latch proves it); publishes the new count. Reply: [`decode_undo`]. Sent by
/// source, so transports recognize it as the undo of that acquire (`Request::is_undo`) and
/// send it behind the acquire on its connection. Either way the latch is left at 0 for
/// `latch_ttl_ms` (the acquire's own latch life): a copy of the acquire that reaches Redis
/// after the undo (queued behind a stall on another connection) takes nothing.
pub fn undo(name: &str, request_id: &str, publish: &str, latch_ttl_ms: u64) -> Request {
    let mut undo = request(
        &scripts::SEMAPHORE_UNDO,
        vec![
            name.to_owned(),
            crate::protocol::keys::acquire_latch(name, request_id),
        ],
        vec![
            publish.to_owned(),
            family_keys::semaphore_channel(name),
            latch_ttl_ms.to_string(),
        ],
    );
    undo.by_source = true;
    undo
}

/// Decodes the reply of [`undo`]: the permits given back (0 = nothing to undo).
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_undo(reply: &Reply) -> Result<u64> {
    match int(&scripts::SEMAPHORE_UNDO, reply)? {
        n if n >= 0 => Ok(n as u64),
        _ => Err(unexpected(&scripts::SEMAPHORE_UNDO, reply)),
    }
}

/// Outcome of one acquire attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireReply {
    /// Taken; `left` permits remain available.
    Acquired {
        /// Permits still available after this acquire.
        left: i64,
    },
    /// Not enough permits: wait for a message on the channel, then try again.
    NotEnough {
        /// Permits available now; `None` when the semaphore was never set.
        available: Option<i64>,
    },
}

/// Decodes the reply of [`acquire`].
///
/// # Errors
/// `Redis` when the reply has an unexpected shape.
pub fn decode_acquire(reply: &Reply) -> Result<AcquireReply> {
    let script = &scripts::SEMAPHORE_ACQUIRE;
    match ints(script, reply)?.as_slice() {
        [1, left] => Ok(AcquireReply::Acquired { left: *left }),
        [0, -1] => Ok(AcquireReply::NotEnough { available: None }),
        [0, n] => Ok(AcquireReply::NotEnough { available: Some(*n) }),
        _ => Err(unexpected(script, reply)),
    }
}

/// Release `permits`, publishing the new count with `publish` (`publish` | `spublish`).
///
/// # Errors
/// `InvalidArgument` for 0 or more than `i32::MAX` permits.
pub fn release(name: &str, permits: u64, publish: &str) -> Result<Request> {
    validate_count("permits", permits)?;
    Ok(request(
        &scripts::SEMAPHORE_RELEASE,
        vec![name.to_owned()],
        vec![
            permits.to_string(),
            publish.to_owned(),
            family_keys::semaphore_channel(name),
        ],
    ))
}

/// Release `permits` as request `request_id` (random, one per `release()` call, reused by its
/// retries), whose latch `redisson_unlock_latch:{N}:<id>` lives `latch_ttl_ms`: a retry whose
/// first reply was lost adds nothing again (reply `(count, 0)`).
///
/// # Errors
/// `InvalidArgument` for 0 or more than `i32::MAX` permits.
pub fn release_once(
    name: &str,
    permits: u64,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Result<Request> {
    let mut r = release(name, permits, publish)?;
    r.keys.push(crate::protocol::keys::unlock_latch(name, request_id));
    r.args.push(latch_ttl_ms.to_string());
    Ok(r)
}

/// A retry of release `request_id` ([`release_once`]) that replays its outcome if its latch
/// is still in Redis and changes nothing otherwise: for a retry made when the latch may have
/// expired, where applying again could give the permits back twice. The reply decodes with
/// [`decode_replay`].
///
/// # Errors
/// As [`release_once`].
pub fn replay_release(name: &str, permits: u64, publish: &str, request_id: &str) -> Result<Request> {
    // The latch TTL goes unused: a replay writes nothing.
    let mut r = release_once(name, permits, publish, request_id, 1)?;
    r.args.push("1".to_owned());
    Ok(r)
}

/// Decodes the reply of [`replay_release`]: `true` when the earlier release applied (its
/// latch was there), `false` when the latch is gone (nothing changed: that cannot be told).
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_replay(reply: &Reply) -> Result<bool> {
    match ints(&scripts::SEMAPHORE_RELEASE, reply)?.as_slice() {
        [0, -1] => Ok(false),
        _ => decode_release(reply).map(|_| true),
    }
}

/// Whether the reply of [`release_once`] says the semaphore has no count (deleted, expired,
/// or lost in a restart without persistence): nothing was changed, not even created.
pub fn released_into_no_count(reply: &Reply) -> bool {
    matches!(reply, Reply::Array(v) if v.len() == 2 && v[0].as_int() == Some(-1) && v[1].as_int() == Some(-2))
}

/// Decodes the reply of [`release`]: `(available after the release, clients the message
/// reached)`.
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_release(reply: &Reply) -> Result<(i64, u64)> {
    let script = &scripts::SEMAPHORE_RELEASE;
    match ints(script, reply)?.as_slice() {
        [value, receivers] if *receivers >= 0 => Ok((*value, *receivers as u64)),
        _ => Err(unexpected(script, reply)),
    }
}

/// Set `permits` if the semaphore does not exist yet (Redisson `trySetPermits`), with an
/// optional TTL in ms for the key; publishes the count. Also sets a permit-expirable
/// semaphore's count (same key and channel). Zero permits are allowed here (a semaphore that
/// exists with nothing available), as in Redisson.
///
/// # Errors
/// `InvalidArgument` for more than `i32::MAX` permits or a zero TTL.
pub fn try_set_permits(name: &str, permits: u64, ttl_ms: Option<u64>, publish: &str) -> Result<Request> {
    if permits > 0 {
        validate_count("permits", permits)?;
    }
    if ttl_ms == Some(0) {
        return Err(crate::error::Error::invalid("semaphore TTL must be above 0 ms"));
    }
    Ok(request(
        &scripts::SEMAPHORE_SET,
        vec![name.to_owned()],
        vec![
            permits.to_string(),
            publish.to_owned(),
            family_keys::semaphore_channel(name),
            ttl_ms.unwrap_or(0).to_string(),
        ],
    ))
}

/// [`try_set_permits`] as request `request_id` (random, one per call, reused by the
/// transport's retry), whose latch `redlatch_acquire_latch:{N}:<id>` lives `latch_ttl_ms`: a
/// retry whose first reply was lost answers `1` (set) again, not "it already existed".
///
/// # Errors
/// As [`try_set_permits`].
pub fn try_set_permits_once(
    name: &str,
    permits: u64,
    ttl_ms: Option<u64>,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Result<Request> {
    let mut r = try_set_permits(name, permits, ttl_ms, publish)?;
    r.keys
        .push(crate::protocol::keys::acquire_latch(name, request_id));
    r.args.push(latch_ttl_ms.to_string());
    Ok(r)
}

/// Decodes the reply of [`try_set_permits`]: `true` when it was set.
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_try_set(reply: &Reply) -> Result<bool> {
    match reply.as_int() {
        Some(1) => Ok(true),
        Some(0) => Ok(false),
        _ => Err(unexpected(&scripts::SEMAPHORE_SET, reply)),
    }
}

/// Permits available now.
pub fn available(name: &str) -> Request {
    request(&scripts::SEMAPHORE_AVAILABLE, vec![name.to_owned()], vec![])
}

/// Decodes the reply of [`available`].
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_available(reply: &Reply) -> Result<i64> {
    int(&scripts::SEMAPHORE_AVAILABLE, reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The undo of an acquire goes behind that acquire on its connection: transports must
    /// recognize it and tie it to its own attempt only (before stop 35 they did not, and a
    /// timed-out acquire's permits stayed taken for good).
    #[cfg(feature = "native")]
    #[test]
    fn the_undo_is_recognized_as_the_undo_of_its_own_acquire() {
        use crate::protocol::family::PUBLISH;
        let attempt = acquire_once("s", 2, "req", 1000).unwrap();
        let undo = undo("s", "req", PUBLISH, 1000);
        assert!(undo.is_undo());
        assert!(undo.undoes(attempt.attempt_mark().as_ref()));
        let another = acquire_once("s", 2, "req2", 1000).unwrap();
        assert!(!undo.undoes(another.attempt_mark().as_ref()));
        assert!(!acquire_once("s", 2, "req", 1000).unwrap().is_undo());
        let mut release = release_once("s", 2, PUBLISH, "req", 1000).unwrap();
        release.by_source = true;
        assert!(!release.is_undo(), "a release names its own release latch");
    }

    #[test]
    fn requests_and_bad_counts() {
        let r = acquire("s", 2).unwrap();
        assert_eq!(
            (r.keys.as_slice(), r.args.as_slice()),
            (&["s".to_owned()][..], &["2".to_owned()][..])
        );
        assert!(acquire("s", 0).is_err());
        assert!(release("s", 0, "publish").is_err());
        let r = release("s", 3, "spublish").unwrap();
        assert_eq!(r.args, ["3", "spublish", "redisson_sc:{s}"]);
        let r = try_set_permits("s", 0, None, "publish").unwrap();
        assert_eq!(r.args, ["0", "publish", "redisson_sc:{s}", "0"]);
        assert_eq!(
            try_set_permits("s", 4, Some(900), "publish").unwrap().args[3],
            "900"
        );
        assert!(try_set_permits("s", 4, Some(0), "publish").is_err());
        let r = try_set_permits_once("s", 4, None, "publish", "req", 2000).unwrap();
        assert_eq!(r.keys, ["s", "redlatch_acquire_latch:{s}:req"]);
        assert_eq!(r.args[4], "2000");
        assert!(try_set_permits("s", u64::MAX, None, "publish").is_err());
        let r = acquire_once("s", 2, "id", 900).unwrap();
        assert_eq!(r.keys, ["s", "redlatch_acquire_latch:{s}:id"]);
        assert_eq!(r.args, ["2", "900"]);
        let r = undo("s", "id", "publish", 900);
        assert_eq!(r.keys, ["s", "redlatch_acquire_latch:{s}:id"]);
        assert_eq!(r.args, ["publish", "redisson_sc:{s}", "900"]);
        let r = release_once("s", 1, "publish", "rid", 700).unwrap();
        assert_eq!(r.keys, ["s", "redisson_unlock_latch:{s}:rid"]);
        assert_eq!(r.args, ["1", "publish", "redisson_sc:{s}", "700"]);
        assert!(acquire_once("s", 0, "id", 1).is_err());
    }

    fn arr(v: &[i64]) -> Reply {
        Reply::Array(v.iter().map(|i| Reply::Int(*i)).collect())
    }

    #[test]
    fn replies_decode() {
        assert_eq!(
            decode_acquire(&arr(&[1, 0])).unwrap(),
            AcquireReply::Acquired { left: 0 }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, -1])).unwrap(),
            AcquireReply::NotEnough { available: None }
        );
        assert_eq!(
            decode_acquire(&arr(&[0, 1])).unwrap(),
            AcquireReply::NotEnough { available: Some(1) }
        );
        assert_eq!(decode_release(&arr(&[5, 2])).unwrap(), (5, 2));
        assert!(decode_release(&Reply::Int(5)).is_err());
        assert!(decode_try_set(&Reply::Int(1)).unwrap());
        assert_eq!(decode_available(&Reply::Int(4)).unwrap(), 4);
        assert_eq!(decode_undo(&Reply::Int(2)).unwrap(), 2);
        assert!(decode_undo(&Reply::Int(-1)).is_err());
    }
}
