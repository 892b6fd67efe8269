//! [`ErrorKind`]: the category of an error, with its stable code, name and JavaScript code.

use std::fmt;

/// The category of a redlatch error. Codes are stable across releases and languages.
///
/// `0` is reserved for success (`REDLATCH_OK` in C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The wait ran out before the lock could be acquired. Code 1.
    NotAcquired,
    /// Release or extend of a hold this owner does not have (never held, expired, taken). Code 2.
    NotOwned,
    /// The hold was lost while held (watchdog or extend saw it gone). A kind of `NotOwned`. Code 3.
    LockLost,
    /// Quorum (Redlock) mode: no majority of nodes granted the request. Code 4.
    Quorum,
    /// Redis unreachable, connection dropped, a network timeout, or the server refused the
    /// URL's user name or password (`WRONGPASS`; redis-py's `AuthenticationError` is a
    /// `ConnectionError` too). Code 5.
    Connection,
    /// Bad input, refused before anything was sent to Redis. Code 6.
    InvalidArgument,
    /// Redis answered with an error reply not of a kind below (`BUSY`, `LOADING`, `ERR` ...). Code 7.
    Redis,
    /// Internal failure: a panic caught at a language boundary (C, Python, JS), or the OS
    /// random source was unavailable. Code 8.
    Panic,
    /// Redis refused a command, key or channel to this ACL user (`NOPERM`, and Redis 7.0's
    /// "The user executing the script can't ..." and Valkey's "ACL failure in script: ..." from
    /// inside a script). Nothing was changed
    /// by the refused request; grant the permission (see the ACL recipe in the docs). Code 9.
    NoPermission,
    /// Redis is out of memory (`OOM`: `maxmemory` reached under `noeviction`); writes such as
    /// an acquire are refused until memory is freed. Code 10.
    OutOfMemory,
    /// The lock's name collides with application data: the key holds a type no lock of this
    /// kind uses (Redis `WRONGTYPE`), or, for lease locks, a string without TTL that does not
    /// look like a lock token, or, for reentrant locks, a hash without TTL. Every lock format
    /// sets a TTL, so such a key would otherwise block the lock forever. Code 11.
    KeyConflict,
    /// A write acquire by an owner that holds a read hold of the same read/write lock: the
    /// upgrade would wait for the owner's own read holds forever (Redisson's
    /// `RedissonWriteLock` does wait, and deadlocks). Refused at once, nothing changed in
    /// Redis; release the read holds first. Code 12.
    WouldDeadlock,
}

impl ErrorKind {
    /// Every kind, in code order (useful for generating binding tables).
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::NotAcquired,
        ErrorKind::NotOwned,
        ErrorKind::LockLost,
        ErrorKind::Quorum,
        ErrorKind::Connection,
        ErrorKind::InvalidArgument,
        ErrorKind::Redis,
        ErrorKind::Panic,
        ErrorKind::NoPermission,
        ErrorKind::OutOfMemory,
        ErrorKind::KeyConflict,
        ErrorKind::WouldDeadlock,
    ];

    /// The stable numeric code (1..=12), equal to the C `redlatch_status` value.
    pub const fn code(self) -> i32 {
        match self {
            ErrorKind::NotAcquired => 1,
            ErrorKind::NotOwned => 2,
            ErrorKind::LockLost => 3,
            ErrorKind::Quorum => 4,
            ErrorKind::Connection => 5,
            ErrorKind::InvalidArgument => 6,
            ErrorKind::Redis => 7,
            ErrorKind::Panic => 8,
            ErrorKind::NoPermission => 9,
            ErrorKind::OutOfMemory => 10,
            ErrorKind::KeyConflict => 11,
            ErrorKind::WouldDeadlock => 12,
        }
    }

    /// The stable name, e.g. `"NotAcquired"`.
    pub const fn name(self) -> &'static str {
        match self {
            ErrorKind::NotAcquired => "NotAcquired",
            ErrorKind::NotOwned => "NotOwned",
            ErrorKind::LockLost => "LockLost",
            ErrorKind::Quorum => "Quorum",
            ErrorKind::Connection => "Connection",
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::Redis => "Redis",
            ErrorKind::Panic => "Panic",
            ErrorKind::NoPermission => "NoPermission",
            ErrorKind::OutOfMemory => "OutOfMemory",
            ErrorKind::KeyConflict => "KeyConflict",
            ErrorKind::WouldDeadlock => "WouldDeadlock",
        }
    }

    /// The stable JavaScript `code` string, e.g. `"ERR_NOT_ACQUIRED"`.
    pub const fn js_code(self) -> &'static str {
        match self {
            ErrorKind::NotAcquired => "ERR_NOT_ACQUIRED",
            ErrorKind::NotOwned => "ERR_NOT_OWNED",
            ErrorKind::LockLost => "ERR_LOCK_LOST",
            ErrorKind::Quorum => "ERR_QUORUM",
            ErrorKind::Connection => "ERR_CONNECTION",
            ErrorKind::InvalidArgument => "ERR_INVALID_ARGUMENT",
            ErrorKind::Redis => "ERR_REDIS",
            ErrorKind::Panic => "ERR_PANIC",
            ErrorKind::NoPermission => "ERR_NO_PERMISSION",
            ErrorKind::OutOfMemory => "ERR_OUT_OF_MEMORY",
            ErrorKind::KeyConflict => "ERR_KEY_CONFLICT",
            ErrorKind::WouldDeadlock => "ERR_WOULD_DEADLOCK",
        }
    }

    /// Looks a kind up by its numeric code.
    pub fn from_code(code: i32) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// `true` for `NotOwned` and its refinement `LockLost`.
    pub const fn is_not_owned(self) -> bool {
        matches!(self, ErrorKind::NotOwned | ErrorKind::LockLost)
    }

    /// `true` for conditions that retrying within the network timeout cannot cure: a missing
    /// permission, a key that holds application data, bad input, an internal failure. The
    /// acquire loop returns these at once instead of retrying them. (`OutOfMemory` is
    /// returned at once too: memory is freed by an operator or by expiries, not by retrying.)
    pub const fn is_permanent(self) -> bool {
        matches!(
            self,
            ErrorKind::NoPermission
                | ErrorKind::OutOfMemory
                | ErrorKind::KeyConflict
                | ErrorKind::WouldDeadlock
                | ErrorKind::InvalidArgument
                | ErrorKind::Panic
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_unique() {
        let codes: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, (1..=12).collect::<Vec<_>>());
        assert_eq!(ErrorKind::WouldDeadlock.name(), "WouldDeadlock");
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
            assert!(kind.js_code().starts_with("ERR_"));
        }
        assert_eq!(ErrorKind::from_code(0), None);
    }

    #[test]
    fn not_owned_covers_lock_lost_and_permanent_kinds_are_not_retried() {
        assert!(ErrorKind::NotOwned.is_not_owned() && ErrorKind::LockLost.is_not_owned());
        assert!(!ErrorKind::Quorum.is_not_owned());
        assert!(ErrorKind::KeyConflict.is_permanent() && !ErrorKind::Connection.is_permanent());
    }
}
