//! Key and channel names of the rest of the lock family, as Redisson 4.7 builds them.
//!
//! Two Redisson helpers cover almost everything (`RedissonObject.prefixName` and
//! `suffixName`): [`keys::prefixed`](crate::protocol::keys::prefixed) is `prefix:T(N)`, and
//! [`suffixed`] is `T(N):suffix`. Both keep companion keys in the Cluster slot of `N`. The one
//! exception is the count-down latch channel, which Redisson builds by plain concatenation
//! (`redisson_countdownlatch__channel__{` + N + `}`), braces or not.

use crate::protocol::keys::{prefixed, tag};

/// Prefix of the fair lock's waiter queue (LIST of owner ids).
pub const FAIR_QUEUE_PREFIX: &str = "redisson_lock_queue";
/// Prefix of the fair lock's waiter deadlines (ZSET owner id -> absolute wall-clock ms).
pub const FAIR_TIMEOUT_PREFIX: &str = "redisson_lock_timeout";
/// Prefix of the read/write lock's channel.
pub const RW_CHANNEL_PREFIX: &str = "redisson_rwlock";
/// Prefix of the semaphore channel (both semaphore kinds).
pub const SEMAPHORE_CHANNEL_PREFIX: &str = "redisson_sc";
/// Start of the count-down latch channel (`+ "{" + N + "}"`, no brace check).
pub const LATCH_CHANNEL_START: &str = "redisson_countdownlatch__channel__";
/// Suffix of a read hold's timeout key (`T(N):<owner>:rwlock_timeout:<k>`).
pub const RW_TIMEOUT_SUFFIX: &str = "rwlock_timeout";
/// Suffix of the write owner's hash field (`<owner>:write`).
pub const WRITE_SUFFIX: &str = ":write";

/// Redisson `suffixName(N, suffix)`: `T(N) + ":" + suffix`.
pub fn suffixed(name: &str, suffix: &str) -> String {
    format!("{}:{suffix}", tag(name))
}

/// The fair lock's waiter queue, `redisson_lock_queue:{N}`.
pub fn fair_queue(name: &str) -> String {
    prefixed(FAIR_QUEUE_PREFIX, name)
}

/// The fair lock's waiter deadlines, `redisson_lock_timeout:{N}`.
pub fn fair_timeouts(name: &str) -> String {
    prefixed(FAIR_TIMEOUT_PREFIX, name)
}

/// The base of the fair lock's per-waiter channels, `redisson_lock__channel:{N}` (the plain
/// lock channel); waiter `O` listens on `base + ":" + O`.
pub fn fair_channel_base(name: &str) -> String {
    crate::protocol::keys::lock_channel(name)
}

/// The channel fair-lock waiter `owner` listens on, `redisson_lock__channel:{N}:<owner>`.
pub fn fair_waiter_channel(name: &str, owner: &str) -> String {
    format!("{}:{owner}", fair_channel_base(name))
}

/// The read/write lock's channel, `redisson_rwlock:{N}`.
pub fn rw_channel(name: &str) -> String {
    prefixed(RW_CHANNEL_PREFIX, name)
}

/// The write owner's field in the read/write hash: `<owner>:write`.
pub fn write_owner(owner: &str) -> String {
    format!("{owner}{WRITE_SUFFIX}")
}

/// The prefix of `owner`'s read-hold timeout keys, `T(N):<owner>:rwlock_timeout` (hold `k`
/// is `prefix + ":" + k`).
pub fn rw_timeout_prefix(name: &str, owner: &str) -> String {
    format!("{}:{RW_TIMEOUT_SUFFIX}", suffixed(name, owner))
}

/// Timeout key of `owner`'s `k`-th read hold.
pub fn rw_timeout_key(name: &str, owner: &str, k: u64) -> String {
    format!("{}:{k}", rw_timeout_prefix(name, owner))
}

/// The semaphore channel (both kinds), `redisson_sc:{N}`.
pub fn semaphore_channel(name: &str) -> String {
    prefixed(SEMAPHORE_CHANNEL_PREFIX, name)
}

/// The permit-expirable semaphore's permit ZSET, `T(N):timeout`.
pub fn permit_timeouts(name: &str) -> String {
    suffixed(name, "timeout")
}

/// The count-down latch channel, `redisson_countdownlatch__channel__{N}` (plain
/// concatenation, as Redisson: a braced name gets a second pair of braces).
pub fn latch_channel(name: &str) -> String {
    format!("{LATCH_CHANNEL_START}{{{name}}}")
}

/// Whether pub/sub message `payload` on `channel` wakes every waiter of a client, rather than
/// one: a lock's `0` tells of one release (one waiter may take it, as Redisson's `LockPubSub`
/// wakes one), a count-down latch's `0` is its open message, for every waiter (Redisson's
/// `CountDownLatchPubSub`), and any other message (`1`: Redisson's read/write and semaphore
/// releases) wakes all. One rule for every subscriber (the native one and the Node local
/// engine's): user trials of stops 44 and 46 saw one latch waiter per client woken, the
/// others by their poll, first on the native subscriber, then on the Node local engine.
pub fn wakes_every_waiter(channel: &str, payload: &[u8]) -> bool {
    payload != b"0" || channel.starts_with(LATCH_CHANNEL_START)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_redisson() {
        assert_eq!(fair_queue("a"), "redisson_lock_queue:{a}");
        assert_eq!(fair_timeouts("a"), "redisson_lock_timeout:{a}");
        assert_eq!(fair_waiter_channel("a", "u:1"), "redisson_lock__channel:{a}:u:1");
        assert_eq!(rw_channel("a"), "redisson_rwlock:{a}");
        assert_eq!(write_owner("u:1"), "u:1:write");
        assert_eq!(rw_timeout_key("a", "u:1", 2), "{a}:u:1:rwlock_timeout:2");
        assert_eq!(semaphore_channel("s"), "redisson_sc:{s}");
        assert_eq!(permit_timeouts("s"), "{s}:timeout");
        assert_eq!(latch_channel("l"), "redisson_countdownlatch__channel__{l}");
    }

    #[test]
    fn braced_names_keep_their_tag_except_the_latch_channel() {
        assert_eq!(fair_queue("x{t}"), "redisson_lock_queue:x{t}");
        assert_eq!(rw_timeout_prefix("x{t}", "o:1"), "x{t}:o:1:rwlock_timeout");
        assert_eq!(permit_timeouts("{t}s"), "{t}s:timeout");
        assert_eq!(latch_channel("{t}l"), "redisson_countdownlatch__channel__{{t}l}");
    }
}
