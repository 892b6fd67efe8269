//! Count-down latch (Redisson `RedissonCountDownLatch` 4.7): STRING `N` = count; channel
//! `redisson_countdownlatch__channel__{N}` (plain concatenation, see [`super::keys`]). Messages
//! as Redisson sends them: `0` when the count reaches zero (waiters open), `1` when a count is
//! set (waiters re-arm). A waiter subscribes, reads the count, and waits for `0` (or polls).

use super::{int, keys as family_keys, request, scripts, unexpected, validate_count};
use crate::error::Result;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;

/// Set the count if the latch does not exist (Redisson `trySetCount`); publishes `1`.
///
/// # Errors
/// `InvalidArgument` for a count of 0 or above `i32::MAX`.
pub fn try_set_count(name: &str, count: u64, publish: &str) -> Result<Request> {
    validate_count("latch count", count)?;
    Ok(request(
        &scripts::LATCH_SET,
        vec![name.to_owned()],
        vec![
            count.to_string(),
            publish.to_owned(),
            family_keys::latch_channel(name),
        ],
    ))
}

/// [`try_set_count`] as request `request_id` (random, one per call, reused by the transport's
/// retry), whose latch `redlatch_acquire_latch:{N}:<id>` lives `latch_ttl_ms`: a retry whose
/// first reply was lost answers `1` (set) again, not "it already existed".
///
/// # Errors
/// As [`try_set_count`].
pub fn try_set_count_once(
    name: &str,
    count: u64,
    publish: &str,
    request_id: &str,
    latch_ttl_ms: u64,
) -> Result<Request> {
    let mut r = try_set_count(name, count, publish)?;
    r.keys
        .push(crate::protocol::keys::acquire_latch(name, request_id));
    r.args.push(latch_ttl_ms.to_string());
    Ok(r)
}

/// Decodes the reply of [`try_set_count`]: `true` when it was set.
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_try_set(reply: &Reply) -> Result<bool> {
    match reply.as_int() {
        Some(1) => Ok(true),
        Some(0) => Ok(false),
        _ => Err(unexpected(&scripts::LATCH_SET, reply)),
    }
}

/// Count down by one; at zero the latch key goes and `0` is published.
pub fn count_down(name: &str, publish: &str) -> Request {
    request(
        &scripts::LATCH_COUNT_DOWN,
        vec![name.to_owned()],
        vec![publish.to_owned(), family_keys::latch_channel(name)],
    )
}

/// Count down by one as request `request_id` (random, one per call, reused by its retries),
/// whose latch `redisson_unlock_latch:{N}:<id>` lives `latch_ttl_ms`: a retry whose first
/// reply was lost gets the first answer back instead of counting down twice.
pub fn count_down_once(name: &str, publish: &str, request_id: &str, latch_ttl_ms: u64) -> Request {
    let mut r = count_down(name, publish);
    r.keys.push(crate::protocol::keys::unlock_latch(name, request_id));
    r.args.push(latch_ttl_ms.to_string());
    r
}

/// What [`count_down`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountDownReply {
    /// The count after this call (0: the latch opened now).
    Left(u64),
    /// The latch was not set (or already open); nothing changed.
    NotSet,
}

/// Decodes the reply of [`count_down`].
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_count_down(reply: &Reply) -> Result<CountDownReply> {
    match int(&scripts::LATCH_COUNT_DOWN, reply)? {
        -1 => Ok(CountDownReply::NotSet),
        n if n >= 0 => Ok(CountDownReply::Left(n as u64)),
        _ => Err(unexpected(&scripts::LATCH_COUNT_DOWN, reply)),
    }
}

/// The count (0 when not set or open).
pub fn count(name: &str) -> Request {
    request(&scripts::LATCH_COUNT, vec![name.to_owned()], vec![])
}

/// Decodes the reply of [`count`].
///
/// # Errors
/// `Redis` on an unexpected reply.
pub fn decode_count(reply: &Reply) -> Result<i64> {
    int(&scripts::LATCH_COUNT, reply)
}

/// A message on the latch channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// `0`: the count reached zero; waiters stop waiting.
    Opened,
    /// `1`: a new count was set; waiters keep waiting.
    Reset,
}

/// Reads a latch channel message; `None` for anything but `0` or `1`.
pub fn decode_message(payload: &[u8]) -> Option<Message> {
    match super::decode_message(payload)? {
        0 => Some(Message::Opened),
        1 => Some(Message::Reset),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies() {
        let r = try_set_count("l", 2, "publish").unwrap();
        assert_eq!(r.args, ["2", "publish", "redisson_countdownlatch__channel__{l}"]);
        assert!(try_set_count("l", 0, "publish").is_err());
        let r = try_set_count_once("l", 2, "publish", "req", 2000).unwrap();
        assert_eq!(r.keys, ["l", "redlatch_acquire_latch:{l}:req"]);
        assert_eq!(r.args[3], "2000");
        assert_eq!(
            count_down("{t}l", "spublish").args,
            ["spublish", "redisson_countdownlatch__channel__{{t}l}"]
        );
        assert_eq!(count("l").keys, ["l"]);
        let r = count_down_once("l", "publish", "id", 50);
        assert_eq!(r.keys, ["l", "redisson_unlock_latch:{l}:id"]);
        assert_eq!(r.args[2], "50");
        assert_eq!(
            decode_count_down(&Reply::Int(0)).unwrap(),
            CountDownReply::Left(0)
        );
        assert_eq!(
            decode_count_down(&Reply::Int(-1)).unwrap(),
            CountDownReply::NotSet
        );
        assert!(decode_count_down(&Reply::Int(-5)).is_err());
        assert!(!decode_try_set(&Reply::Int(0)).unwrap());
        assert_eq!(decode_count(&Reply::Int(3)).unwrap(), 3);
        assert_eq!(decode_message(b"0"), Some(Message::Opened));
        assert_eq!(decode_message(b"1"), Some(Message::Reset));
        assert_eq!(decode_message(b"2"), None);
    }
}
