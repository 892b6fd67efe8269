//! The reentrant owners of a client: the validity their holds share on each lock, their calls
//! in flight, the orphan rule applied at each grant, and owner numbers.
//!
//! A re-entry joins the validity of the owner's holds already alive (see `signal.rs`). A grant
//! that starts a new validity may remove hold counts left by holds this client already
//! declared lost, only when no other acquire, release or rollback of the owner ran at any
//! point during the acquire: the decision is [`protocol::owner`](crate::protocol::owner)'s,
//! this module keeps the state it is made from.
//!
//! Owner numbers: one process-wide space, 1 ..= 2^53 - 1 ([`MAX_OWNER`]), handed out by
//! [`new_owner`] to every `rlock` handle and to the bindings' threads, tasks and async chains
//! ([`thread_owner`] for the calling thread), so automatically chosen owners never collide,
//! whatever client or binding asked. Explicit numbers (`Lock::owner`) share that space.

use super::signal::Validity;
use crate::error::Reason;
use crate::protocol::owner::{self as rule, Calls, Grant, Join, Ticket, MAX_OWNER};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static THREAD_OWNER: u64 = new_owner();
}

/// A fresh owner number, distinct from every other one handed out in this process (wraps
/// within 1 ..= [`MAX_OWNER`] after 2^53 - 1 of them, which no process reaches).
pub fn new_owner() -> u64 {
    (NEXT_OWNER.fetch_add(1, Ordering::Relaxed) - 1) % MAX_OWNER + 1
}

/// The calling thread's owner number: drawn from [`new_owner`] on first use, stable for the
/// thread's life, never another thread's.
pub fn thread_owner() -> u64 {
    THREAD_OWNER.with(|n| *n)
}

/// The validities of a client's live reentrant holds, by (lock name, owner id), and the
/// owner's calls in flight on each lock.
#[derive(Debug, Default)]
pub(crate) struct Validities {
    map: Mutex<HashMap<(String, String), Slot>>,
    /// Map size at which dead entries are swept next (amortized: doubles with the live count).
    sweep_at: AtomicUsize,
}

#[derive(Debug, Default)]
struct Slot {
    validity: Weak<Validity>,
    /// Acquires, releases and rollbacks of the owner on the lock.
    calls: Calls,
}

/// What a grant joined: see [`Validities::join`].
pub(crate) struct Joined {
    pub(crate) validity: Arc<Validity>,
    /// Hold counts beyond the grant's own that it is to remove (the orphan rule).
    pub(crate) orphaned: u64,
    /// The grant joined the live validity of the owner's other holds (a re-entry).
    pub(crate) reentered: bool,
}

/// A grant as the acquire saw it: see [`Validities::join`].
pub(crate) struct Seen {
    /// End of the grant's local validity.
    pub(crate) deadline: Duration,
    /// When the grant is processed.
    pub(crate) now: Duration,
    /// The owner's hold count Redis reported.
    pub(crate) holds: u64,
    /// Quorum mode.
    pub(crate) quorum: bool,
}

/// One acquire, release or rollback of an owner in flight, counted until dropped
/// (cancellation included). Owned, so a background rollback can carry it.
pub(crate) struct InFlight {
    all: Arc<Validities>,
    key: (String, String),
    ticket: Ticket,
}

impl InFlight {
    pub(crate) fn ticket(&self) -> Ticket {
        self.ticket
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(slot) = self.all.slots().get_mut(&self.key) {
            slot.calls.end();
        }
    }
}

impl Validities {
    /// Entries kept before the first sweep of dead ones.
    const FIRST_SWEEP: usize = 64;

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Slot>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts an acquire, release or rollback of `owner` on `name` as in flight until the
    /// returned value drops.
    pub(crate) fn begin(self: &Arc<Self>, name: &str, owner: &str) -> InFlight {
        let key = (name.to_owned(), owner.to_owned());
        let mut map = self.slots();
        if map.len() >= self.sweep_at.load(Ordering::Relaxed).max(Self::FIRST_SWEEP) {
            map.retain(|_, s| s.calls.running() > 0 || s.validity.strong_count() > 0);
            self.sweep_at.store(map.len() * 2, Ordering::Relaxed);
        }
        let ticket = map.entry(key.clone()).or_default().calls.begin();
        InFlight {
            all: self.clone(),
            key,
            ticket,
        }
    }

    /// The validity of a new hold of `owner` on `name` (an acquire counted by
    /// [`begin`](Self::begin)), granted until `deadline` with `holds` counts reported by Redis:
    /// the live one of the owner's other holds (moved to `deadline`: the grant reset the key's
    /// TTL), else a new one; and the counts of lost holds the grant is to remove.
    pub(crate) fn join(&self, name: &str, owner: &str, ticket: Ticket, seen: Seen) -> Joined {
        let Seen {
            deadline,
            now,
            holds,
            quorum,
        } = seen;
        let mut map = self.slots();
        let slot = map.entry((name.to_owned(), owner.to_owned())).or_default();
        let overlapped = slot.calls.overlapped(ticket);
        let previous = slot.validity.upgrade();
        let decision = rule::join(previous.as_ref().map(|v| v.is_live_at(now)));
        let validity = match (decision, previous) {
            (Join::Live, Some(live)) => {
                live.set_deadline(deadline);
                live
            }
            (_, previous) => {
                // The owner's previous validity ran out (or was lost): marked lost for good, so
                // that its holds' releases send nothing from now on.
                if let Some(old) = previous {
                    old.mark_lost(Reason::Expired);
                }
                let validity = Validity::new(name, deadline);
                slot.validity = Arc::downgrade(&validity);
                validity
            }
        };
        let orphaned = rule::orphaned_counts(Grant {
            fresh: decision != Join::Live,
            overlapped,
            quorum,
            holds,
        });
        Joined {
            validity,
            orphaned,
            reentered: decision == Join::Live,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One acquire of `owner` on `name`, alone, granted at `now` with `holds` counts.
    fn grant(all: &Arc<Validities>, owner: &str, deadline: u64, now: u64, holds: u64) -> Joined {
        let in_flight = all.begin("f", owner);
        let secs = Duration::from_secs;
        let seen = Seen {
            deadline: secs(deadline),
            now: secs(now),
            holds,
            quorum: false,
        };
        all.join("f", owner, in_flight.ticket(), seen)
    }

    #[test]
    fn a_reentry_joins_the_live_validity_of_its_owner_only() {
        let all = Arc::new(Validities::default());
        let first = grant(&all, "c:1", 10, 0, 1);
        let again = grant(&all, "c:1", 12, 2, 2);
        assert!(Arc::ptr_eq(&first.validity, &again.validity));
        assert_eq!(again.orphaned, 0, "a re-entry's other count is a live hold's");
        assert_eq!(first.validity.deadline(), Duration::from_secs(12));
        let other = grant(&all, "c:2", 12, 2, 1);
        assert!(
            !Arc::ptr_eq(&first.validity, &other.validity),
            "another owner has its own"
        );
        let late = grant(&all, "c:1", 30, 20, 3);
        assert!(
            !Arc::ptr_eq(&first.validity, &late.validity),
            "an expired validity is not joined"
        );
        assert_eq!(late.orphaned, 2, "the counts of the expired holds are orphans");
        assert_eq!(
            first.validity.lost_reason(),
            Some(Reason::Expired),
            "the stale validity is retired: its holds' releases send nothing"
        );
        drop((first, again, other, late));
        for i in 0..200 {
            let _in_flight = all.begin("g", &format!("c:{i}"));
        }
        let size = all.slots().len();
        assert!(size < 200, "dead entries are swept ({size} left)");
    }

    #[test]
    fn any_overlap_with_another_call_of_the_owner_blocks_orphan_removal() {
        let all = Arc::new(Validities::default());
        let seen = |quorum| Seen {
            deadline: Duration::from_secs(5),
            now: Duration::ZERO,
            holds: 2,
            quorum,
        };
        let at = |t: Ticket| all.join("h", "c:1", t, seen(false)).orphaned;
        // Alone from start to grant.
        let a = all.begin("h", "c:1");
        assert_eq!(at(a.ticket()), 1);
        drop(a);
        // Another call still running at the grant.
        let a = all.begin("h", "c:1");
        let b = all.begin("h", "c:1");
        assert_eq!(at(b.ticket()), 0);
        // ...or one that was running when this began and has finished since.
        drop(a);
        assert_eq!(at(b.ticket()), 0);
        drop(b);
        // ...or one that began and finished in between (a release answered before the grant
        // was processed, a cancelled acquire's rollback).
        let a = all.begin("h", "c:1");
        drop(all.begin("h", "c:1"));
        assert_eq!(at(a.ticket()), 0);
        drop(a);
        // Other owners and names do not count; quorum mode never removes.
        let a = all.begin("i", "c:1");
        let _other = (all.begin("i", "c:2"), all.begin("j", "c:1"));
        assert_eq!(all.join("i", "c:1", a.ticket(), seen(true)).orphaned, 0);
        drop(a);
        let a = all.begin("k", "c:1");
        assert_eq!(all.join("k", "c:1", a.ticket(), seen(false)).orphaned, 1);
    }

    #[test]
    fn owner_numbers_are_distinct_and_stable_per_thread() {
        let (a, b) = (new_owner(), new_owner());
        assert!(a != b && (1..=MAX_OWNER).contains(&a) && (1..=MAX_OWNER).contains(&b));
        let mine = thread_owner();
        assert_eq!(mine, thread_owner(), "stable for the thread");
        let theirs = std::thread::spawn(thread_owner).join().unwrap();
        assert_ne!(mine, theirs, "another thread has its own");
    }
}
