//! Key and channel naming, following shared/WIRE.md and Redisson's `prefixName`.
//!
//! Companion keys (fence counter, unlock channel) are built so they hash to the same Redis
//! Cluster slot as the lock key: Redis hashes only the text inside the first `{...}`.

use crate::error::{Error, Result};

/// Longest lock name accepted, in bytes. Longer names are refused with `InvalidArgument`
/// (keeps scripts, keys and channel names bounded; see shared/reference/faults.md S5).
pub const MAX_NAME_BYTES: usize = 4096;

/// Prefix of the unlock notification channel (Redisson: `redisson_lock__channel`).
pub const LOCK_CHANNEL_PREFIX: &str = "redisson_lock__channel";
/// Prefix of the fencing-token counter key (Redisson: `redisson_lock_token`).
pub const FENCE_PREFIX: &str = "redisson_lock_token";

/// Prefix of the per-request unlock latch (Redisson 3.24+: `redisson_unlock_latch`).
pub const UNLOCK_LATCH_PREFIX: &str = "redisson_unlock_latch";

/// Prefix of redlatch's per-request acquire latch for reentrant locks (private to redlatch;
/// Redisson ignores it).
pub const ACQUIRE_LATCH_PREFIX: &str = "redlatch_acquire_latch";

/// `T(N)`: `{N}` when `name` contains no `{`, else `name` unchanged.
pub fn tag(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_tag(&mut out, name);
    out
}

/// Appends `T(N)` to `out`.
fn push_tag(out: &mut String, name: &str) {
    if name.contains('{') {
        out.push_str(name);
    } else {
        out.push('{');
        out.push_str(name);
        out.push('}');
    }
}

/// `prefix + ":" + T(N)`, then `":" + id` when an id is given: one allocation, as these are
/// built for every acquire and release.
fn build(prefix: &str, name: &str, id: Option<&str>) -> String {
    let mut out = String::with_capacity(prefix.len() + name.len() + id.map_or(0, str::len) + 4);
    out.push_str(prefix);
    out.push(':');
    push_tag(&mut out, name);
    if let Some(id) = id {
        out.push(':');
        out.push_str(id);
    }
    out
}

/// `P(prefix)` = `prefix + ":" + T(N)`.
pub fn prefixed(prefix: &str, name: &str) -> String {
    build(prefix, name, None)
}

/// The channel on which releases of `name` are published (`redisson_lock__channel:{N}`).
pub fn lock_channel(name: &str) -> String {
    prefixed(LOCK_CHANNEL_PREFIX, name)
}

/// The fencing-token counter key of `name` (`redisson_lock_token:{N}`).
pub fn fence_key(name: &str) -> String {
    prefixed(FENCE_PREFIX, name)
}

/// The idempotency latch of one release request: `redisson_unlock_latch:{N}:<request id>`.
pub fn unlock_latch(name: &str, request_id: &str) -> String {
    build(UNLOCK_LATCH_PREFIX, name, Some(request_id))
}

/// The idempotency latch of one reentrant acquire request: `redlatch_acquire_latch:{N}:<id>`.
pub fn acquire_latch(name: &str, request_id: &str) -> String {
    build(ACQUIRE_LATCH_PREFIX, name, Some(request_id))
}

/// Whether `key` is an acquire request's latch ([`acquire_latch`]).
pub fn is_acquire_latch(key: &str) -> bool {
    key.strip_prefix(ACQUIRE_LATCH_PREFIX)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// Checks a lock name: non-empty and at most [`MAX_NAME_BYTES`] bytes.
///
/// Names are otherwise used exactly as given (never rewritten), so any UTF-8 text works,
/// including braces, spaces and newlines: names travel only as `KEYS[]`, never inside Lua.
///
/// # Errors
/// `InvalidArgument` for an empty or over-long name.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("lock name must not be empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Error::invalid(format!(
            "lock name is {} bytes; the maximum is {MAX_NAME_BYTES}",
            name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_wraps_plain_names_and_keeps_tagged_ones() {
        assert_eq!(tag("order:42"), "{order:42}");
        assert_eq!(tag("{user1}:order"), "{user1}:order");
        assert_eq!(lock_channel("a"), "redisson_lock__channel:{a}");
        assert_eq!(lock_channel("x{y}"), "redisson_lock__channel:x{y}");
        assert_eq!(fence_key("a"), "redisson_lock_token:{a}");
        assert_eq!(unlock_latch("a", "r1"), "redisson_unlock_latch:{a}:r1");
        assert_eq!(unlock_latch("{t}:a", "r1"), "redisson_unlock_latch:{t}:a:r1");
        assert_eq!(acquire_latch("a", "r2"), "redlatch_acquire_latch:{a}:r2");
        assert_eq!(acquire_latch("x{y}", "r2"), "redlatch_acquire_latch:x{y}:r2");
    }

    #[test]
    fn names_are_checked() {
        assert!(validate_name("").is_err());
        assert!(validate_name(&"x".repeat(MAX_NAME_BYTES + 1)).is_err());
        assert!(validate_name(&"x".repeat(MAX_NAME_BYTES)).is_ok());
        assert!(validate_name("quotes ' \" and \n newline {}").is_ok());
    }
}
