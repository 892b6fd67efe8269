//! The reentrant owners of a client: the validity their holds share on each lock, and their
//! calls in flight.
//!
//! A re-entry joins the validity of the owner's holds already alive (see `signal.rs`), and a
//! grant can tell whether the hold count Redis reports includes counts left by holds this
//! client already declared lost (see `acquire.rs`, orphaned counts): that is only safe when
//! no other acquire, release or rollback of the owner ran at any point during the acquire,
//! which the sequence [`Ticket`] of each call tells.

use super::signal::Validity;
use crate::error::Reason;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// The validities of a client's live reentrant holds, by (lock name, owner id), so that a
/// re-entry joins the validity of the owner's holds already alive; and the owner's acquires
/// in flight, so that a grant can tell whether the hold count Redis reports includes counts
/// left by holds this client already declared lost (see `acquire.rs`, orphaned counts).
#[derive(Debug, Default)]
pub(crate) struct Validities {
    map: Mutex<HashMap<(String, String), Slot>>,
    /// Map size at which dead entries are swept next (amortized: doubles with the live count).
    sweep_at: AtomicUsize,
}

#[derive(Debug, Default)]
struct Slot {
    validity: Weak<Validity>,
    /// Acquires and releases of the owner running now.
    in_flight: usize,
    /// How many have ever started (a sequence number for [`Ticket`]).
    started: u64,
}

/// What a grant joined: see [`Validities::join`].
pub(crate) struct Joined {
    pub(crate) validity: Arc<Validity>,
    /// No live hold of the owner existed: the grant starts a new validity.
    pub(crate) fresh: bool,
    /// Another acquire or release of the owner ran at some point during this acquire, so the
    /// hold count Redis reported may or may not include its effect.
    pub(crate) overlapped: bool,
}

/// One acquire, release or rollback of an owner in flight, counted until dropped
/// (cancellation included). Owned, so a background rollback can carry it.
pub(crate) struct InFlight {
    all: Arc<Validities>,
    key: (String, String),
    ticket: Ticket,
}

/// When an [`InFlight`] started: its sequence number, and whether nothing else of the owner
/// was running then.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    seq: u64,
    alone: bool,
}

impl InFlight {
    pub(crate) fn ticket(&self) -> Ticket {
        self.ticket
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut map = self.all.slots();
        if let Some(slot) = map.get_mut(&self.key) {
            slot.in_flight = slot.in_flight.saturating_sub(1);
        }
    }
}

impl Validities {
    /// Entries kept before the first sweep of dead ones.
    const FIRST_SWEEP: usize = 64;

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Slot>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts an acquire or release of `owner` on `name` as in flight until the returned
    /// value drops.
    pub(crate) fn begin(self: &Arc<Self>, name: &str, owner: &str) -> InFlight {
        let key = (name.to_owned(), owner.to_owned());
        let mut map = self.slots();
        if map.len() >= self.sweep_at.load(Ordering::Relaxed).max(Self::FIRST_SWEEP) {
            map.retain(|_, s| s.in_flight > 0 || s.validity.strong_count() > 0);
            self.sweep_at.store(map.len() * 2, Ordering::Relaxed);
        }
        let slot = map.entry(key.clone()).or_default();
        let alone = slot.in_flight == 0;
        slot.in_flight += 1;
        slot.started += 1;
        let ticket = Ticket {
            seq: slot.started,
            alone,
        };
        InFlight {
            all: self.clone(),
            key,
            ticket,
        }
    }

    /// The validity of a new hold of `owner` on `name` (an acquire counted by [`begin`](Self::begin)),
    /// granted until `deadline`: the live one of the owner's other holds (moved to `deadline`:
    /// the grant reset the key's TTL), else a new one.
    pub(crate) fn join(
        &self,
        name: &str,
        owner: &str,
        deadline: Duration,
        now: Duration,
        ticket: Ticket,
    ) -> Joined {
        let mut map = self.slots();
        let slot = map.entry((name.to_owned(), owner.to_owned())).or_default();
        // Nothing else ran when this began, nothing began since, nothing runs now.
        let overlapped = !(ticket.alone && slot.started == ticket.seq && slot.in_flight == 1);
        if let Some(live) = slot.validity.upgrade().filter(|v| v.is_live_at(now)) {
            live.set_deadline(deadline);
            return Joined {
                validity: live,
                fresh: false,
                overlapped,
            };
        }
        // The owner's previous validity ran out (or was lost): mark it lost for good, so that
        // its holds' releases send nothing from now on. With no release in flight, any count of
        // theirs still in Redis is then an orphan the grant may remove without racing one.
        if let Some(old) = slot.validity.upgrade() {
            old.mark_lost(Reason::Expired);
        }
        let validity = Validity::new(name, deadline);
        slot.validity = Arc::downgrade(&validity);
        Joined {
            validity,
            fresh: true,
            overlapped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reentry_joins_the_live_validity_of_its_owner_only() {
        let all = Arc::new(Validities::default());
        let join = |owner: &str, deadline: u64, now: u64| {
            let in_flight = all.begin("f", owner);
            let ticket = in_flight.ticket();
            all.join(
                "f",
                owner,
                Duration::from_secs(deadline),
                Duration::from_secs(now),
                ticket,
            )
        };
        let first = join("c:1", 10, 0);
        assert!(first.fresh);
        let again = join("c:1", 12, 2);
        assert!(Arc::ptr_eq(&first.validity, &again.validity) && !again.fresh);
        assert_eq!(first.validity.deadline(), Duration::from_secs(12));
        let other = join("c:2", 12, 2);
        assert!(other.fresh, "another owner has its own validity");
        let late = join("c:1", 30, 20);
        assert!(late.fresh, "an expired validity is not joined");
        drop((first, again, other, late));
        for i in 0..200 {
            let _in_flight = all.begin("g", &format!("c:{i}"));
        }
        let size = all.slots().len();
        assert!(size < 200, "dead entries are swept ({size} left)");
    }

    #[test]
    fn any_overlap_with_another_call_of_the_owner_is_seen() {
        let all = Arc::new(Validities::default());
        let at = |t: Ticket| all.join("h", "c:1", Duration::from_secs(5), Duration::ZERO, t);
        // Alone from start to grant.
        let a = all.begin("h", "c:1");
        assert!(!at(a.ticket()).overlapped);
        drop(a);
        // Another call still running at the grant.
        let a = all.begin("h", "c:1");
        let b = all.begin("h", "c:1");
        assert!(at(b.ticket()).overlapped);
        // ...or one that was running when this began and has finished since.
        drop(a);
        assert!(at(b.ticket()).overlapped);
        drop(b);
        // ...or one that began and finished in between.
        let a = all.begin("h", "c:1");
        drop(all.begin("h", "c:1"));
        assert!(at(a.ticket()).overlapped);
        drop(a);
        // Other owners and names do not count.
        let a = all.begin("h", "c:1");
        let _other = (all.begin("h", "c:2"), all.begin("i", "c:1"));
        assert!(!at(a.ticket()).overlapped);
    }
}
