//! The reentrant owner's decisions, pure: owner numbers, whether a new hold joins the owner's
//! validity, and whether a grant may remove hold counts beyond its own.
//!
//! Why this is delicate: the holds of one owner on one lock are counts in one Redis hash with
//! one TTL (Redisson's RLock layout). A hold is reported lost when its *local* validity ends,
//! which is a drift allowance (1% + 2 ms) before Redis expires the key. If the owner
//! re-acquires inside that window, Redis increments the old count, but the lost hold's release
//! sends nothing, so the hash would outlive every hold and block other owners for a lease.
//! The grant therefore removes the counts beyond its own, but only when it can tell that
//! every one of them belongs to a hold already declared lost: no other acquire, release or
//! rollback of the owner may have run at *any* point during the acquire (a release finishing
//! between the reply and its processing, or a cancelled acquire's background rollback, changes
//! the count without the grant seeing it). [`Calls`] tells that with a sequence [`Ticket`].
//! The driver (`driver/owner.rs`) keeps one [`Calls`] per (lock, owner) and acts on these
//! answers.
//!
//! The lock kinds that follow (fair lock waiters, read holds with their own timeout keys,
//! permits) are owners of the same shape: they reuse [`Calls`] and [`join`] per key they count.

/// The largest owner number: 2^53 - 1, the largest integer exact in every binding's language
/// (a JS number). Owner ids in Redis are `<client id>:<owner number>` (Redisson's layout).
pub const MAX_OWNER: u64 = (1 << 53) - 1;

/// The acquires, releases and rollbacks of one owner on one lock: how many run now and how
/// many ever started.
#[derive(Debug, Default, Clone)]
pub struct Calls {
    running: usize,
    started: u64,
}

/// When a call began: its sequence number, and whether nothing else of the owner ran then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    seq: u64,
    alone: bool,
}

impl Calls {
    /// A call of the owner begins; it runs until [`end`](Self::end).
    pub fn begin(&mut self) -> Ticket {
        let alone = self.running == 0;
        self.running += 1;
        self.started += 1;
        Ticket {
            seq: self.started,
            alone,
        }
    }

    /// A call begun with [`begin`](Self::begin) finished (or was dropped: cancellation).
    pub fn end(&mut self) {
        self.running = self.running.saturating_sub(1);
    }

    /// Calls running now.
    pub fn running(&self) -> usize {
        self.running
    }

    /// `true` when, for the call holding `ticket` (still running), another call of the owner
    /// ran at some point since it began: one was running when it began, one began since, or
    /// one runs now. The hold count Redis reported may then include that call's effect or not.
    pub fn overlapped(&self, ticket: Ticket) -> bool {
        !(ticket.alone && self.started == ticket.seq && self.running == 1)
    }
}

/// What a new hold of an owner does with the owner's current validity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// A hold of the owner is live: the new hold shares its validity (moved to the grant's).
    Live,
    /// No live hold: the new hold starts a validity. `retire_previous`: the owner's previous
    /// validity (ran out, not yet seen lost) is to be marked lost for good, so that its holds'
    /// releases send nothing from now on (a stale hold released after the re-acquire must not
    /// take the new hold's count).
    Fresh {
        /// The previous validity is to be marked lost.
        retire_previous: bool,
    },
}

/// Decides [`Join`] from the owner's previous validity: `None` when there is none, else
/// whether it is still live at the grant.
pub fn join(previous: Option<bool>) -> Join {
    match previous {
        Some(true) => Join::Live,
        Some(false) => Join::Fresh {
            retire_previous: true,
        },
        None => Join::Fresh {
            retire_previous: false,
        },
    }
}

/// A granted reentrant acquire, as the orphan rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The grant started a new validity ([`Join::Fresh`]).
    pub fresh: bool,
    /// Another call of the owner ran during the acquire ([`Calls::overlapped`]).
    pub overlapped: bool,
    /// Quorum mode: counts may differ per node.
    pub quorum: bool,
    /// The owner's hold count Redis reported after the grant.
    pub holds: u64,
}

/// How many hold counts beyond its own the grant may remove (one reentrant release each):
/// all of them when it started a new validity with no other call of the owner overlapping it,
/// on a single node; else none (they then expire with the key, as before).
pub fn orphaned_counts(grant: Grant) -> u64 {
    if grant.fresh && !grant.overlapped && !grant.quorum {
        grant.holds.saturating_sub(1)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(calls: &Calls, ticket: Ticket, holds: u64) -> u64 {
        orphaned_counts(Grant {
            fresh: true,
            overlapped: calls.overlapped(ticket),
            quorum: false,
            holds,
        })
    }

    #[test]
    fn a_lone_re_acquire_removes_the_counts_of_lost_holds() {
        let mut calls = Calls::default();
        let acquire = calls.begin();
        assert_eq!(grant(&calls, acquire, 3), 2, "its own count stays");
        assert_eq!(grant(&calls, acquire, 1), 0);
        assert_eq!(grant(&calls, acquire, 0), 0);
    }

    #[test]
    fn a_release_finishing_between_the_reply_and_its_processing_blocks_removal() {
        let mut calls = Calls::default();
        let acquire = calls.begin();
        calls.begin(); // a stale hold's release goes out...
        calls.end(); // ...and is answered before the grant is processed
        assert!(calls.overlapped(acquire));
        assert_eq!(grant(&calls, acquire, 2), 0);
    }

    #[test]
    fn a_release_running_at_the_grant_or_before_the_acquire_blocks_removal() {
        let mut calls = Calls::default();
        let release = calls.begin();
        let acquire = calls.begin();
        assert_eq!(grant(&calls, acquire, 2), 0, "running when the acquire began");
        calls.end();
        assert_eq!(grant(&calls, acquire, 2), 0, "...and finished since");
        let _ = release;
        let mut calls = Calls::default();
        let acquire = calls.begin();
        calls.begin();
        assert_eq!(grant(&calls, acquire, 2), 0, "still running at the grant");
    }

    #[test]
    fn a_cancelled_acquires_rollback_blocks_removal() {
        // The cancelled acquire's call is carried by its background rollback until it is done.
        let mut calls = Calls::default();
        let _cancelled = calls.begin();
        let acquire = calls.begin();
        assert_eq!(grant(&calls, acquire, 2), 0);
        // A rollback that began and ended inside the acquire counts too.
        let mut calls = Calls::default();
        let acquire = calls.begin();
        calls.begin();
        calls.end();
        assert_eq!(grant(&calls, acquire, 2), 0);
    }

    #[test]
    fn a_stale_hold_is_retired_by_a_fresh_grant() {
        assert_eq!(join(Some(true)), Join::Live);
        assert_eq!(
            join(Some(false)),
            Join::Fresh {
                retire_previous: true
            },
            "its holds' releases must send nothing after the re-acquire"
        );
        assert_eq!(
            join(None),
            Join::Fresh {
                retire_previous: false
            }
        );
    }

    #[test]
    fn a_stale_hold_released_after_the_re_acquire_cannot_take_the_new_count() {
        // The owner's previous validity ran out unnoticed: the re-acquire starts a new one
        // and retires the old, so the stale hold's release sends nothing from now on...
        let decision = join(Some(false));
        assert_eq!(
            decision,
            Join::Fresh {
                retire_previous: true
            }
        );
        // ...and its count, which no release will ever take, is an orphan the lone grant removes.
        let mut calls = Calls::default();
        let acquire = calls.begin();
        let at_grant = |calls: &Calls| Grant {
            fresh: decision != Join::Live,
            overlapped: calls.overlapped(acquire),
            quorum: false,
            holds: 2,
        };
        assert_eq!(orphaned_counts(at_grant(&calls)), 1);
        // Had the stale hold's release gone out before the grant was processed (it may have
        // taken a count already), the grant removes nothing.
        calls.begin();
        calls.end();
        assert_eq!(orphaned_counts(at_grant(&calls)), 0);
    }

    #[test]
    fn re_entries_and_quorum_grants_remove_nothing() {
        let base = Grant {
            fresh: true,
            overlapped: false,
            quorum: false,
            holds: 3,
        };
        assert_eq!(orphaned_counts(base), 2);
        assert_eq!(orphaned_counts(Grant { fresh: false, ..base }), 0);
        assert_eq!(orphaned_counts(Grant { quorum: true, ..base }), 0);
        assert_eq!(
            orphaned_counts(Grant {
                overlapped: true,
                ..base
            }),
            0
        );
    }

    #[test]
    fn calls_end_saturates_and_tickets_count_up() {
        let mut calls = Calls::default();
        calls.end();
        assert_eq!(calls.running(), 0);
        let a = calls.begin();
        calls.end();
        let b = calls.begin();
        assert_ne!(a, b);
        assert!(
            !calls.overlapped(b),
            "a call that ended before b began is no overlap"
        );
    }
}
