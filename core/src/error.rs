//! One error taxonomy for every language.
//!
//! Each [`ErrorKind`] has a stable numeric code and a stable name. The C status values, the
//! Python `.code` attribute and the JavaScript `code` property are all derived from this table,
//! so a log line from any binding can be matched to the same condition.

mod kind;
mod reason;
mod redis_reply;

pub use kind::ErrorKind;
pub use reason::Reason;
pub use redis_reply::redis_error_kind;

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
    /// Retrying cannot cure it although its kind could be transient (a refused password).
    permanent: bool,
}

/// How Redis words a command run on a key of another type.
const REDIS_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// What redlatch says instead (as `conflict.lua` does for its own refusals).
const KEY_OF_ANOTHER_TYPE: &str =
    "WRONGTYPE the key holds a type this kind of lock, semaphore or latch does not use: another kind under the same name (a lease lock is a string; a reentrant, fair or read/write lock a hash, as Redisson's), or application data";
/// The message of a connection that gave no password to a server that requires one.
/// What Redis and Valkey answer the `SELECT` of a database number the server does not have.
const NO_SUCH_DATABASE: &str = "DB index is out of range";
const NO_SUCH_DATABASE_MESSAGE: &str =
    "the server has no database of the URL's number (ERR DB index is out of range: it has as many as its `databases` setting, 16 by default, numbered from 0)";
const AUTH_REQUIRED: &str =
    "the server requires a password (NOAUTH): connect with a user name and password (in the URL: redis://user:password@host:port)";
/// What Redis answers an `AUTH` with a password when the default user has none.
const NO_PASSWORD_SET: &str = "called without any password configured";
/// The message of a connection that gave a password to a server that has none set.
const NO_PASSWORD_SET_MESSAGE: &str =
    "the server has no password set for the default user, but one was given (ERR AUTH called without any password configured): remove it from the URL, or set one on the server";
/// The message of a connection whose user name or password the server refused.
const AUTH_REFUSED: &str =
    "the server refused the URL's user name or password (WRONGPASS: wrong password, unknown or disabled user; or a password given to a server whose default user has none)";

impl Error {
    /// Builds an error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            nodes: Vec::new(),
            reason: None,
            permanent: false,
        }
    }

    /// `true` when retrying cannot cure it: a kind that never passes
    /// ([`ErrorKind::is_permanent`]) or a refused password (a Connection error, as redis-py's
    /// `AuthenticationError` is a `ConnectionError`, but the same credentials will be refused
    /// again). Waits end at once on such an error.
    pub fn is_permanent(&self) -> bool {
        self.permanent || self.kind.is_permanent()
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

    /// The refusal of `what` (`"release"`, `"extend"`) on a hold of lock `name` that its owner
    /// does not have any more, for `reason`: [`ErrorKind::LockLost`] when its lease ran out,
    /// else [`ErrorKind::NotOwned`]. Bindings that retire a released hold's handle early
    /// answer later calls on it with this (`Reason::NeverHeld`), as the core would.
    pub fn hold_refused(what: &str, name: &str, reason: Reason) -> Self {
        let why = match reason {
            Reason::Deleted => "the key is gone",
            Reason::Taken => "another owner holds it",
            Reason::Expired => "its lease ran out",
            Reason::NeverHeld => "this hold was already released",
        };
        Self::not_owned(
            reason == Reason::Expired,
            reason,
            format!("cannot {what} lock {name:?}: not held by this owner ({why})"),
        )
    }

    /// The error for an error reply of Redis with text `reply` (e.g. `"NOPERM ..."`), its
    /// kind decided by [`redis_error_kind`]. Redis' own `WRONGTYPE` text (a command in a
    /// script meeting a key of another type, followed by the script's SHA and line) is
    /// replaced by the words redlatch's scripts use for application data under a lock name;
    /// a `WRONGPASS` reply is an [`ErrorKind::Connection`] error saying that the server refused
    /// the URL's user name or password (one message whatever the protocol), and a `NOAUTH`
    /// reply (or Redis' `Protocol error: unauthenticated ...`) one saying that the server
    /// requires them; an `AUTH` with a password to a server without one set is a `Connection`
    /// error saying so; retrying cures none of them ([`Error::is_permanent`]). `ERR DB index is
    /// out of range` (the URL's database is not one the server has) is `InvalidArgument`.
    pub fn from_redis_reply(reply: impl Into<String>) -> Self {
        let reply = reply.into();
        if reply.starts_with(REDIS_WRONGTYPE) {
            return Self::new(ErrorKind::KeyConflict, KEY_OF_ANOTHER_TYPE);
        }
        if reply.trim_start().to_ascii_uppercase().starts_with("WRONGPASS") {
            return Self::auth_refused();
        }
        if reply.contains(NO_SUCH_DATABASE) {
            // Only `SELECT` (the URL's database, on connecting) answers this: the URL is wrong.
            return Self::invalid(NO_SUCH_DATABASE_MESSAGE);
        }
        if reply.contains(NO_PASSWORD_SET) {
            // Only `AUTH` answers this: the URL's credentials do not fit the server.
            return Error {
                permanent: true,
                ..Self::connection(NO_PASSWORD_SET_MESSAGE)
            };
        }
        if redis_reply::is_auth_required(&reply) {
            return Error {
                permanent: true,
                ..Self::connection(AUTH_REQUIRED)
            };
        }
        Self::new(redis_error_kind(&reply), reply)
    }

    /// Whether this is Redis refusing the `EVALSHA` command itself to the ACL user (a user
    /// granted `EVAL` only: `NoPermission` naming `'evalsha'`), not a command the script runs.
    /// The transports then send every script by source (`EVAL`); before stop 45 the first call
    /// of each script on a connection (by source) passed and the next (by digest) was
    /// `NoPermission`, so such a user passed a smoke test and failed later.
    pub fn refuses_evalsha(&self) -> bool {
        self.kind == ErrorKind::NoPermission && self.message.to_ascii_lowercase().contains("'evalsha'")
    }

    /// The server refused the URL's user name or password: `Connection`, one message whatever
    /// the protocol or transport said (as redis-py's `AuthenticationError` is a
    /// `ConnectionError`).
    pub(crate) fn auth_refused() -> Self {
        Error {
            permanent: true,
            ..Self::connection(AUTH_REFUSED)
        }
    }

    /// The client's runtime was shut down (a tokio runtime dropped while the client lives
    /// on): a permanent `Connection` error, since nothing of the client can run any more.
    pub(crate) fn runtime_gone() -> Self {
        Error {
            permanent: true,
            ..Self::connection(
                "the tokio runtime this client was connected on has shut down: a client lives on its runtime (its connections and background tasks run there); make one per runtime (e.g. per #[tokio::test]) or connect it on a runtime that outlives its uses",
            )
        }
    }

    /// A `Connection` error that retrying cannot cure ([`Error::is_permanent`]): credentials
    /// refused where the message must say which ones (Sentinel's own, or the data nodes').
    #[cfg(feature = "native")]
    pub(crate) fn refused_credentials(message: impl Into<String>) -> Self {
        Error {
            permanent: true,
            ..Self::connection(message)
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

    /// The same error, one that retrying cannot cure although its kind could be transient (a
    /// quorum most of whose nodes refuse this client's credentials).
    pub(crate) fn permanently(mut self) -> Self {
        self.permanent = true;
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

    /// The same error (kind, permanence, reason) with its message prefixed, e.g. by the node
    /// it came from (`"127.0.0.1:6379: ..."`); a prefix already there is not repeated.
    pub fn prefixed(mut self, prefix: &str) -> Self {
        // Once: a transport may have named its node already (the Node addon's local one does
        // in the errors of its reconnects).
        let named = self
            .message
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(": "));
        if !named {
            self.message = format!("{prefix}: {}", self.message);
        }
        self
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_prefix_is_added_once() {
        let e = Error::connection("127.0.0.1:7000: connect ECONNREFUSED 127.0.0.1:7000");
        assert_eq!(
            e.prefixed("127.0.0.1:7000").message(),
            "127.0.0.1:7000: connect ECONNREFUSED 127.0.0.1:7000"
        );
        let e = Error::connection("Connection refused (os error 111)").prefixed("127.0.0.1:7000");
        assert_eq!(e.message(), "127.0.0.1:7000: Connection refused (os error 111)");
        // Another node's name is not this one's.
        let e = Error::connection("127.0.0.1:70001: x").prefixed("127.0.0.1:7000");
        assert_eq!(e.message(), "127.0.0.1:7000: 127.0.0.1:70001: x");
    }

    #[test]
    fn a_password_given_to_a_server_without_one_is_a_permanent_connection_error() {
        // A user trial (Node local engine): it was a plain `Redis` error (LockError).
        let e = Error::from_redis_reply(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        );
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        assert!(e.is_permanent());
        assert!(e.message().contains("no password set"), "{e}");
    }

    #[test]
    fn display_names_the_kind() {
        let e = Error::new(ErrorKind::NotOwned, "lock x is not held");
        assert_eq!(e.to_string(), "NotOwned: lock x is not held");
        assert!(e.kind().is_not_owned());
    }

    #[test]
    fn not_owned_errors_carry_their_reason() {
        let e = Error::not_owned(true, Reason::Expired, "gone");
        assert_eq!(
            (e.kind(), e.reason()),
            (ErrorKind::LockLost, Some(Reason::Expired))
        );
        let e = Error::not_owned(false, Reason::Taken, "theirs");
        assert_eq!(e.kind(), ErrorKind::NotOwned);
        assert_eq!(Error::connection("x").reason(), None);
    }
}
