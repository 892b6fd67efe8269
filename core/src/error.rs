//! One error taxonomy for every language.
//!
//! Each [`ErrorKind`] has a stable numeric code and a stable name. The C status values, the
//! Python `.code` attribute and the JavaScript `code` property are all derived from this table,
//! so a log line from any binding can be matched to the same condition.

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
    /// Redis unreachable, connection dropped or a network timeout. Code 5.
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

/// Why a hold is not (or no longer) this owner's, carried by [`ErrorKind::NotOwned`] and
/// [`ErrorKind::LockLost`] errors (and reported with a lost hold). The word
/// ([`Reason::as_str`]) and the number ([`Reason::code`]) are the same in every binding.
///
/// How the core decides (bindings only map it):
/// - `Expired`: the hold's validity (its lease minus the clock-drift allowance, measured on
///   this client's monotonic clock) ran out before Redis confirmed it still ours;
/// - `Taken`: Redis holds the key for another owner (or token), within the validity;
/// - `Deleted`: the key is gone within the validity (`DEL`, force unlock, eviction, a restart
///   without persistence);
/// - `NeverHeld`: nothing to act on: never acquired through this handle, or already released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The lease ran out. Code 1, `"expired"`.
    Expired,
    /// Another owner holds the lock now. Code 2, `"taken"`.
    Taken,
    /// The key was deleted while the hold was valid. Code 3, `"deleted"`.
    Deleted,
    /// No hold to act on (never acquired, or already released). Code 4, `"never_held"`.
    NeverHeld,
}

impl Reason {
    /// Every reason, in code order.
    pub const ALL: [Reason; 4] = [Reason::Expired, Reason::Taken, Reason::Deleted, Reason::NeverHeld];

    /// The stable word: `"expired"`, `"taken"`, `"deleted"` or `"never_held"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Expired => "expired",
            Reason::Taken => "taken",
            Reason::Deleted => "deleted",
            Reason::NeverHeld => "never_held",
        }
    }

    /// The stable number (1..=4; 0 means "no reason" in C).
    pub const fn code(self) -> i32 {
        match self {
            Reason::Expired => 1,
            Reason::Taken => 2,
            Reason::Deleted => 3,
            Reason::NeverHeld => 4,
        }
    }

    /// Looks a reason up by its number.
    pub fn from_code(code: i32) -> Option<Reason> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one Redis node answered during a quorum operation, carried by [`ErrorKind::Quorum`] errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOutcome {
    /// The node's address with any password removed, e.g. `127.0.0.1:6379`.
    pub node: String,
    /// `Ok(())` when the node granted the request; otherwise why it did not.
    pub result: Result<(), String>,
}

/// A redlatch error: a [`ErrorKind`], a human-readable message and, for quorum failures, the
/// per-node outcomes.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    nodes: Vec<NodeOutcome>,
    reason: Option<Reason>,
}

impl Error {
    /// Builds an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            nodes: Vec::new(),
            reason: None,
        }
    }

    /// A [`ErrorKind::NotOwned`] (`lost == false`) or [`ErrorKind::LockLost`] error with its
    /// [`Reason`].
    pub fn not_owned(lost: bool, reason: Reason, message: impl Into<String>) -> Self {
        let kind = if lost {
            ErrorKind::LockLost
        } else {
            ErrorKind::NotOwned
        };
        Error {
            reason: Some(reason),
            ..Self::new(kind, message)
        }
    }

    /// The error for an error reply of Redis with text `reply` (e.g. `"NOPERM ..."`), its
    /// kind decided by [`redis_error_kind`].
    pub fn from_redis_reply(reply: impl Into<String>) -> Self {
        let reply = reply.into();
        Self::new(redis_error_kind(&reply), reply)
    }

    /// Builds an [`ErrorKind::InvalidArgument`] error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    /// Builds an [`ErrorKind::Connection`] error.
    pub fn connection(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Connection, message)
    }

    /// The same error with per-node outcomes (quorum mode), for bindings that check nodes
    /// themselves (the Node addon's connections on the JavaScript thread).
    pub fn with_nodes(mut self, nodes: Vec<NodeOutcome>) -> Self {
        self.nodes = nodes;
        self
    }

    /// The error's category.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stable numeric code of [`Self::kind`].
    pub fn code(&self) -> i32 {
        self.kind.code()
    }

    /// The message without the kind prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Per-node outcomes (quorum errors only; empty otherwise).
    pub fn nodes(&self) -> &[NodeOutcome] {
        &self.nodes
    }

    /// Why the hold is not this owner's: `Some` for `NotOwned` and `LockLost` errors.
    pub fn reason(&self) -> Option<Reason> {
        self.reason
    }

    /// The same error with its message prefixed (e.g. by the node it came from).
    pub(crate) fn prefixed(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

/// The kind of a Redis error reply, from its text (the same rule for every transport):
/// `NOPERM ...`, Redis 7.0's script form `ERR The user executing the script can't ...` and
/// Valkey's `ERR ACL failure in script: ...` are [`ErrorKind::NoPermission`]; `OOM ...` is [`ErrorKind::OutOfMemory`]; `WRONGTYPE ...`
/// (also what redlatch's scripts answer for a key that holds application data) is
/// [`ErrorKind::KeyConflict`]; anything else is [`ErrorKind::Redis`]. Client libraries may put
/// their own prefix first (redis-rs writes `NoPerm: ...`), so the code is matched
/// case-insensitively on the first word.
pub fn redis_error_kind(reply: &str) -> ErrorKind {
    let text = reply.trim_start();
    let first: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<String>()
        .to_ascii_uppercase();
    match first.as_str() {
        "NOPERM" => ErrorKind::NoPermission,
        "OOM" => ErrorKind::OutOfMemory,
        "WRONGTYPE" => ErrorKind::KeyConflict,
        _ if text.contains("The user executing the script can't")
            || text.contains("ACL failure in script") =>
        {
            ErrorKind::NoPermission
        }
        _ => ErrorKind::Redis,
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
    fn display_names_the_kind() {
        let e = Error::new(ErrorKind::NotOwned, "lock x is not held");
        assert_eq!(e.to_string(), "NotOwned: lock x is not held");
        assert!(e.kind().is_not_owned());
        assert!(ErrorKind::LockLost.is_not_owned());
        assert!(!ErrorKind::Quorum.is_not_owned());
    }

    #[test]
    fn reasons_are_stable_words_and_codes() {
        let words: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(words, ["expired", "taken", "deleted", "never_held"]);
        for r in Reason::ALL {
            assert_eq!(Reason::from_code(r.code()), Some(r));
        }
        assert_eq!(Reason::from_code(0), None);
        let e = Error::not_owned(true, Reason::Expired, "gone");
        assert_eq!(
            (e.kind(), e.reason()),
            (ErrorKind::LockLost, Some(Reason::Expired))
        );
        let e = Error::not_owned(false, Reason::Taken, "theirs");
        assert_eq!(e.kind(), ErrorKind::NotOwned);
        assert_eq!(Error::connection("x").reason(), None);
    }

    #[test]
    fn redis_error_replies_are_classified_by_code() {
        let cases = [
            ("NOPERM this user has no permissions to access one of the keys", ErrorKind::NoPermission),
            ("NoPerm: this user has no permissions", ErrorKind::NoPermission),
            (
                "ERR ACL failure in script: User noget has no permissions to run the 'get' command script: 1f, on @user_script:17.",
                ErrorKind::NoPermission,
            ),
            (
                "ERR The user executing the script can't publish to the channel mentioned in the command script: 1f, on @user_script:1.",
                ErrorKind::NoPermission,
            ),
            ("OOM command not allowed when used memory > 'maxmemory'.", ErrorKind::OutOfMemory),
            ("WRONGTYPE Operation against a key holding the wrong kind of value", ErrorKind::KeyConflict),
            ("ERR unknown command 'EVALSHA'", ErrorKind::Redis),
            ("BUSY Redis is busy running a script", ErrorKind::Redis),
            ("", ErrorKind::Redis),
        ];
        for (reply, kind) in cases {
            assert_eq!(redis_error_kind(reply), kind, "{reply}");
        }
        assert!(ErrorKind::KeyConflict.is_permanent() && !ErrorKind::Connection.is_permanent());
    }
}
