//! The pure protocol of the rest of the lock family, on Redisson 4.7's layouts: fair lock,
//! read/write lock, semaphore, permit-expirable semaphore, count-down latch and the multi-lock
//! composition rule. Like the rest of `protocol`, no I/O: each module says which script, keys
//! and arguments an operation sends ([`Request`]) and how
//! its reply reads. The fair and read/write locks run in the driver through
//! [`Holder`](crate::protocol::request::Holder)'s `Fair`, `Read` and `Write` kinds; the
//! semaphores, the latch and the multi-lock behind [`crate::Semaphore`],
//! [`crate::PermitSemaphore`], [`crate::CountDownLatch`] and [`crate::MultiLock`] (see
//! docs/family-protocol.md for the rest, and where we differ from Redisson).
//!
//! Conventions, shared with the lease and reentrant scripts:
//! - Keys travel in `KEYS[]`; pub/sub channels are not keys and travel in `ARGV[]`, as does the
//!   publish command (`publish`, or `spublish` on Redis Cluster 7+, as Redisson chooses it).
//! - Scripts use `redis.call` only: a WRONGTYPE, NOPERM or OOM error reaches the caller as the
//!   error it is, never as "held by someone else".
//! - Wall-clock times (`now_ms`, absolute deadlines and expiries) are the caller's
//!   `Date.now()`-style milliseconds since the Unix epoch, because Redisson stores them so.
//!   Hosts that share a fair lock or a permit-expirable semaphore need synchronised clocks.

pub mod fair;
pub mod keys;
pub mod latch;
pub mod multi;
pub mod permits;
pub mod rwlock;
pub mod scripts;
pub mod semaphore;

use crate::error::{Error, ErrorKind, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use crate::protocol::scripts::Script;

/// Publish command for a single node or a quorum of independent nodes.
pub const PUBLISH: &str = crate::protocol::request::PUBLISH;
/// Sharded publish, which Redisson uses on Redis Cluster 7+ (`ShardedSubscriptionMode.AUTO`).
pub const SPUBLISH: &str = "spublish";

fn request(script: &'static Script, keys: Vec<String>, args: Vec<String>) -> Request {
    Request {
        script,
        keys,
        args,
        plain: None,
        by_source: false,
    }
}

fn unexpected(script: &Script, reply: &Reply) -> Error {
    Error::new(
        ErrorKind::Redis,
        format!("unexpected reply to {}: {reply}", script.name()),
    )
}

/// The reply as integers: an integer, or an array of integers (numeric strings accepted).
fn ints(script: &Script, reply: &Reply) -> Result<Vec<i64>> {
    match reply {
        Reply::Array(items) => items
            .iter()
            .map(Reply::as_int)
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| unexpected(script, reply)),
        other => other
            .as_int()
            .map(|i| vec![i])
            .ok_or_else(|| unexpected(script, reply)),
    }
}

fn int(script: &Script, reply: &Reply) -> Result<i64> {
    match ints(script, reply)?.as_slice() {
        [i] if !matches!(reply, Reply::Array(_)) => Ok(*i),
        _ => Err(unexpected(script, reply)),
    }
}

/// Reads a pub/sub message of a Redisson channel: a decimal integer (Redisson decodes every
/// lock, semaphore and latch message with its `LongCodec`). `None` for anything else.
pub fn decode_message(payload: &[u8]) -> Option<i64> {
    std::str::from_utf8(payload).ok()?.trim().parse().ok()
}

/// Checks a count of permits or a latch count: at least 1 and at most `i32::MAX` (Redisson
/// takes `int` permits), so bad input never reaches Redis.
///
/// # Errors
/// `InvalidArgument` naming `what` when `n` is 0 or above `i32::MAX`.
pub fn validate_count(what: &str, n: u64) -> Result<()> {
    if n == 0 || n > i32::MAX as u64 {
        return Err(Error::invalid(format!(
            "{what} must be between 1 and {}, got {n}",
            i32::MAX
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_decimal_integers() {
        assert_eq!(decode_message(b"0"), Some(0));
        assert_eq!(decode_message(b"17"), Some(17));
        assert_eq!(decode_message(b"x"), None);
        assert_eq!(decode_message(&[0xff]), None);
    }

    #[test]
    fn counts_are_checked() {
        assert!(validate_count("permits", 0).is_err());
        assert!(validate_count("permits", 1).is_ok());
        assert!(validate_count("permits", i32::MAX as u64).is_ok());
        let e = validate_count("permits", i32::MAX as u64 + 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn replies_must_have_the_expected_shape() {
        let s = &scripts::LATCH_COUNT;
        assert_eq!(int(s, &Reply::Int(3)).unwrap(), 3);
        assert!(int(s, &Reply::Array(vec![Reply::Int(3)])).is_err());
        let e = ints(s, &Reply::Nil).unwrap_err();
        assert!(e.message().contains("latch_count: nil"), "{e}");
    }
}
