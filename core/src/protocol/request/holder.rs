//! The lock kinds and how a holder is identified in Redis: its spec, shared field, channel and
//! request ids (the requests each kind sends are in `operations.rs`).

use crate::protocol::family::keys as family_keys;
use crate::protocol::keys;

/// The lock kinds and how a holder is identified in Redis.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Holder {
    /// Lease lock: the key holds this random token.
    Lease {
        /// The hold's token.
        token: String,
    },
    /// Reentrant lock: the key is a hash with this owner id as a field.
    Reentrant {
        /// The owner id `<client-uuid>:<n>`.
        owner: String,
    },
    /// Fair lock (Redisson `RFairLock`): the reentrant hash, plus the queue this owner waits
    /// in ([`crate::protocol::family::fair`]).
    Fair {
        /// The owner id `<client-uuid>:<n>`.
        owner: String,
        /// The wait slot this acquire queues with, ms
        /// ([`crate::protocol::family::fair::wait_slot_ms`]); its give-up must send the same.
        wait_slot_ms: u64,
    },
    /// Read side of a read/write lock: field `owner`, one timeout key per hold
    /// ([`crate::protocol::family::rwlock`]).
    Read {
        /// The owner id `<client-uuid>:<n>`.
        owner: String,
    },
    /// Write side of a read/write lock: field `<owner>:write`.
    Write {
        /// The owner id `<client-uuid>:<n>` (the one its read side uses).
        owner: String,
    },
}

/// What an acquire attempt of a fair lock needs beyond the other kinds' arguments (the other
/// kinds ignore it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Turn {
    /// The caller's wall clock, ms since the Unix epoch (fair-lock deadlines are absolute).
    pub now_ms: u64,
    /// Join the fair lock's queue when it is busy (a waiting attempt); `false` for one try.
    pub queue: bool,
}

impl Holder {
    /// The `'L' .. token` / `'R' .. owner` spec used by `renew_batch` and `inspect`.
    /// A read hold's spec is its owner's field: right for `inspect`, but its renewal is
    /// [`Holder::extend`] (the timeout keys), never `renew_batch` ([`Self::renews_in_batch`]).
    pub fn spec(&self) -> String {
        let tagged = |tag: char, id: &str| {
            let mut spec = String::with_capacity(id.len() + 1);
            spec.push(tag);
            spec.push_str(id);
            spec
        };
        match self {
            Holder::Lease { token } => tagged('L', token),
            Holder::Reentrant { owner } | Holder::Fair { owner, .. } | Holder::Read { owner } => {
                tagged('R', owner)
            }
            Holder::Write { owner } => tagged('R', &family_keys::write_owner(owner)),
        }
    }

    /// `false` for read holds, whose renewal must reach their timeout keys (one
    /// `rw_read_extend` per name and owner); every other kind renews in `renew_batch`.
    pub fn renews_in_batch(&self) -> bool {
        !matches!(self, Holder::Read { .. })
    }

    /// The hash field whose holds share one TTL, and so one validity, per lock: the owner
    /// id of reentrant and fair holds, `<owner>:write` of write holds. `None` for lease holds
    /// (one key each) and read holds (one timeout key each).
    pub fn shared_field(&self) -> Option<String> {
        match self {
            Holder::Reentrant { owner } | Holder::Fair { owner, .. } => Some(owner.clone()),
            Holder::Write { owner } => Some(family_keys::write_owner(owner)),
            Holder::Lease { .. } | Holder::Read { .. } => None,
        }
    }

    /// The channel this holder's waiters listen on: the unlock channel of lease and
    /// reentrant locks, the waiter's own channel of a fair lock (a release tells the queue
    /// head only), `redisson_rwlock:{N}` of both sides of a read/write lock.
    pub fn channel(&self, name: &str) -> String {
        match self {
            Holder::Lease { .. } | Holder::Reentrant { .. } => keys::lock_channel(name),
            Holder::Fair { owner, .. } => family_keys::fair_waiter_channel(name, owner),
            Holder::Read { .. } | Holder::Write { .. } => family_keys::rw_channel(name),
        }
    }

    /// A fresh request id for an acquire: random for reentrant locks (it names their
    /// idempotency latches), empty for lease locks (their token already makes a retried
    /// acquire idempotent, so no random bytes are spent).
    ///
    /// # Errors
    /// `Panic` (internal) when the OS random source fails.
    pub fn request_id(&self) -> crate::error::Result<String> {
        match self {
            Holder::Lease { .. } => Ok(String::new()),
            _ => crate::protocol::token::new_token(),
        }
    }

    /// A fresh request id for a release, random for both kinds: it names the release's
    /// idempotency latch, which tells a retry whose first attempt applied from one that finds
    /// the hold lost (a lease lock's token alone cannot: both find the key gone or taken).
    ///
    /// # Errors
    /// `Panic` (internal) when the OS random source fails.
    pub fn release_id(&self) -> crate::error::Result<String> {
        crate::protocol::token::new_token()
    }
}
