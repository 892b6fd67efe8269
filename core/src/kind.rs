//! [`LockKind`]: which of redlatch's lock kinds a [`Lock`](crate::Lock) handle is.

use std::fmt;

/// The kind of a [`Lock`](crate::Lock) handle: which Redis layout it uses and how its holds
/// behave. Bindings show it in `repr` / `toString` ([`LockKind::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LockKind {
    /// Lease lock ([`Client::lock`](crate::Client::lock)): a STRING holding a random token,
    /// the redis-py / node-redlock format. Not reentrant. `"lease"`.
    Lease,
    /// Reentrant lock ([`Client::rlock`](crate::Client::rlock)): Redisson's RLock hash of
    /// owner id -> hold count. `"reentrant"`.
    Reentrant,
    /// Fair lock ([`Client::fair_lock`](crate::Client::fair_lock)): Redisson's RFairLock, the
    /// reentrant hash plus a FIFO queue of waiters. `"fair"`.
    Fair,
    /// The read side of a read/write lock ([`RwLock::read`](crate::RwLock::read)): shared,
    /// reentrant, each hold with its own timeout key (Redisson's RReadWriteLock). `"read"`.
    Read,
    /// The write side of a read/write lock ([`RwLock::write`](crate::RwLock::write)):
    /// exclusive, reentrant. `"write"`.
    Write,
}

impl LockKind {
    /// The stable word: `"lease"`, `"reentrant"`, `"fair"`, `"read"` or `"write"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            LockKind::Lease => "lease",
            LockKind::Reentrant => "reentrant",
            LockKind::Fair => "fair",
            LockKind::Read => "read",
            LockKind::Write => "write",
        }
    }

    /// `true` for every kind but [`LockKind::Lease`]: holds are counted per owner, and an
    /// owner re-enters its own hold.
    pub const fn is_reentrant(self) -> bool {
        !matches!(self, LockKind::Lease)
    }

    /// `true` for the kinds that need one Redis node to decide (a single node, Cluster or
    /// Sentinel): fair, read and write locks, whose queues and modes a Redlock quorum of
    /// independent nodes cannot keep consistent.
    pub const fn needs_single_node(self) -> bool {
        matches!(self, LockKind::Fair | LockKind::Read | LockKind::Write)
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_stable() {
        let all = [
            LockKind::Lease,
            LockKind::Reentrant,
            LockKind::Fair,
            LockKind::Read,
            LockKind::Write,
        ];
        let words: Vec<&str> = all.iter().map(|k| k.as_str()).collect();
        assert_eq!(words, ["lease", "reentrant", "fair", "read", "write"]);
        assert!(!LockKind::Lease.is_reentrant());
        assert!(LockKind::Read.is_reentrant());
        assert!(!LockKind::Reentrant.needs_single_node());
        assert!(LockKind::Write.needs_single_node());
        assert_eq!(LockKind::Fair.to_string(), "fair");
    }
}
