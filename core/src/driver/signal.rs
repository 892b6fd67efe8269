//! The state of one hold (held, lost or released) and its validity deadline.
//!
//! The deadline is where the hold's local validity ends (acquire or last renewal/extend time +
//! lease - drift, on the runtime's monotonic clock). Passing it without a renewal *is* a loss:
//! [`HoldSignal::ended`] sleeps until the deadline and fires the loss itself, so fixed-lease
//! holds need no background task at all and watchdog holds are reported lost even when
//! renewals keep failing silently.
//!
//! The deadline and the loss live in a [`Validity`] that the holds of one reentrant owner on
//! one lock share: they are counts in one Redis hash with one TTL, and every call that sets
//! that TTL (a re-entry, a partial release, an extend or a renewal through any of the holds)
//! moves the validity of all of them, earlier or later. Finding the hash gone through one hold
//! is a loss for all. Released is per hold. Lease-lock holds each have their own validity.

use super::transport::Runtime;
use event_listener::Event;
use futures::future::{select, Either};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

const HELD: u8 = 0;
const LOST: u8 = 1;
const RELEASED: u8 = 2;

/// How a hold ended, as seen by [`HoldSignal::ended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Lost,
    Released,
}

/// The validity of one Redis key as this client knows it: its deadline and whether it was
/// found lost. Shared by the holds of one reentrant owner (see the module docs).
#[derive(Debug)]
pub(crate) struct Validity {
    name: String,
    deadline_ns: AtomicU64,
    lost: AtomicBool,
    event: Event,
}

impl Validity {
    pub(crate) fn new(name: &str, deadline: Duration) -> Arc<Self> {
        Arc::new(Validity {
            name: name.to_owned(),
            deadline_ns: AtomicU64::new(as_nanos(deadline)),
            lost: AtomicBool::new(false),
            event: Event::new(),
        })
    }

    /// End of the local validity.
    pub(crate) fn deadline(&self) -> Duration {
        Duration::from_nanos(self.deadline_ns.load(Ordering::Acquire))
    }

    /// Moves the deadline (a call that set the key's TTL succeeded), earlier or later.
    pub(crate) fn set_deadline(&self, deadline: Duration) {
        self.deadline_ns.store(as_nanos(deadline), Ordering::Release);
        self.event.notify(usize::MAX);
    }

    /// `true` while neither found lost nor past its deadline at `now`: a new hold of the same
    /// owner may then join it.
    pub(crate) fn is_live_at(&self, now: Duration) -> bool {
        !self.lost.load(Ordering::Acquire) && now < self.deadline()
    }

    fn mark_lost(&self) {
        self.lost.store(true, Ordering::Release);
        self.event.notify(usize::MAX);
    }

    fn is_marked_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }
}

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
            old.mark_lost();
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

#[derive(Debug)]
pub(crate) struct HoldSignal {
    state: AtomicU8,
    validity: Arc<Validity>,
}

impl HoldSignal {
    /// A hold with a validity of its own.
    #[cfg(test)]
    pub(crate) fn new(name: &str, deadline: Duration) -> Self {
        Self::sharing(Validity::new(name, deadline))
    }

    /// A hold on `validity` (shared with the owner's other holds of the lock).
    pub(crate) fn sharing(validity: Arc<Validity>) -> Self {
        HoldSignal {
            state: AtomicU8::new(HELD),
            validity,
        }
    }

    /// End of the local validity.
    pub(crate) fn deadline(&self) -> Duration {
        self.validity.deadline()
    }

    /// Moves the validity deadline (renewal or extend succeeded).
    pub(crate) fn set_deadline(&self, deadline: Duration) {
        self.validity.set_deadline(deadline);
    }

    /// Marks the hold lost (and with it the holds sharing its validity). Returns `true` the
    /// first time for this hold (and only while held).
    pub(crate) fn fire(&self, why: &str) -> bool {
        let first = self.to_lost();
        if first {
            tracing::warn!(lock = %self.validity.name, "lock lost: {why}");
            self.validity.mark_lost();
        }
        first
    }

    fn to_lost(&self) -> bool {
        self.state
            .compare_exchange(HELD, LOST, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Marks the hold released. Returns `false` when it had already been lost or released.
    pub(crate) fn close(&self) -> bool {
        if self.validity.is_marked_lost() {
            self.to_lost();
            return false;
        }
        let ok = self
            .state
            .compare_exchange(HELD, RELEASED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if ok {
            self.validity.event.notify(usize::MAX);
        }
        ok
    }

    pub(crate) fn is_held(&self) -> bool {
        self.current().is_none()
    }

    /// `true` once lost; a hold whose deadline `now` has passed is marked lost here.
    pub(crate) fn is_lost_at(&self, now: Duration) -> bool {
        if self.is_held() && now >= self.deadline() {
            self.fire("its validity ran out without a renewal");
        }
        self.current() == Some(End::Lost)
    }

    fn current(&self) -> Option<End> {
        match self.state.load(Ordering::Acquire) {
            LOST => Some(End::Lost),
            RELEASED => Some(End::Released),
            // Another hold of this owner found the key gone.
            _ if self.validity.is_marked_lost() => {
                self.to_lost();
                self.current()
            }
            _ => None,
        }
    }

    /// Resolves when the hold is lost (found gone, or its deadline passed) or released.
    pub(crate) async fn ended(&self, runtime: &dyn Runtime) -> End {
        loop {
            if let Some(end) = self.current() {
                return end;
            }
            let listener = self.validity.event.listen();
            if self.is_lost_at(runtime.now()) {
                continue;
            }
            if let Some(end) = self.current() {
                return end;
            }
            let left = self.deadline().saturating_sub(runtime.now());
            if let Either::Right(_) = select(listener, runtime.sleep(left)).await {
                self.is_lost_at(runtime.now());
            }
        }
    }
}

fn as_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_once_and_not_after_release() {
        let s = HoldSignal::new("a", Duration::from_secs(10));
        assert!(s.fire("test"));
        assert!(!s.fire("test"));
        assert!(!s.close());
        assert!(s.is_lost_at(Duration::ZERO));

        let r = HoldSignal::new("b", Duration::from_secs(10));
        assert!(r.close());
        assert!(!r.fire("test"));
        assert!(
            !r.is_lost_at(Duration::from_secs(20)),
            "a released hold is never lost"
        );
    }

    #[test]
    fn holds_sharing_a_validity_move_and_fail_together() {
        let v = Validity::new("d", Duration::from_secs(10));
        let outer = HoldSignal::sharing(v.clone());
        let inner = HoldSignal::sharing(v.clone());
        // A re-entry through `inner` reset the key's TTL: the outer hold lives on with it.
        inner.set_deadline(Duration::from_secs(15));
        assert!(!outer.is_lost_at(Duration::from_secs(12)));
        assert!(inner.close());
        assert!(outer.is_held(), "releasing one hold leaves the other held");
        // ...and a shorter TTL set through a sibling shortens it too.
        v.set_deadline(Duration::from_secs(13));
        assert!(outer.is_lost_at(Duration::from_secs(14)));
        assert!(
            !v.is_live_at(Duration::from_secs(1)),
            "a lost validity is never joined"
        );

        let v = Validity::new("e", Duration::from_secs(10));
        let a = HoldSignal::sharing(v.clone());
        let b = HoldSignal::sharing(v);
        assert!(a.fire("test"));
        assert!(
            !b.is_held() && b.is_lost_at(Duration::ZERO),
            "a sibling's loss is this hold's loss"
        );
        assert!(!b.close());
    }

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

    #[test]
    fn passing_the_deadline_is_a_loss() {
        let s = HoldSignal::new("c", Duration::from_secs(10));
        assert!(!s.is_lost_at(Duration::from_secs(9)));
        s.set_deadline(Duration::from_secs(20));
        assert!(!s.is_lost_at(Duration::from_secs(15)));
        assert!(s.is_lost_at(Duration::from_secs(20)));
        assert!(!s.is_held());
    }
}
