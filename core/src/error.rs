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
    /// Redis answered with an error reply (OOM, NOPERM, BUSY, WRONGTYPE, ...). Code 7.
    Redis,
    /// Internal failure: a panic caught at a language boundary (C, Python, JS), or the OS
    /// random source was unavailable. Code 8.
    Panic,
}

impl ErrorKind {
    /// Every kind, in code order (useful for generating binding tables).
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::NotAcquired,
        ErrorKind::NotOwned,
        ErrorKind::LockLost,
        ErrorKind::Quorum,
        ErrorKind::Connection,
        ErrorKind::InvalidArgument,
        ErrorKind::Redis,
        ErrorKind::Panic,
    ];

    /// The stable numeric code (1..=8), equal to the C `redlatch_status` value.
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
}

impl Error {
    /// Builds an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            nodes: Vec::new(),
        }
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
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_unique() {
        let codes: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, (1..=8).collect::<Vec<_>>());
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
}
