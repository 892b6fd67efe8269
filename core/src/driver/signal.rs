//! The state of one hold (held, being released, lost or released) and its validity deadline.
//!
//! The deadline is where the hold's local validity ends (acquire or last renewal/extend time +
//! lease - drift, on the runtime's monotonic clock). Passing it without a renewal *is* a loss:
//! [`HoldSignal::ended`] sleeps until the deadline and fires the loss itself, so fixed-lease
//! holds need no background task at all and watchdog holds are reported lost even when
//! renewals keep failing silently.
//!
//! The deadline, the loss (with its [`Reason`]) and the fencing token live in a [`Validity`]
//! that the holds of one reentrant owner on one lock share: they are counts in one Redis hash
//! with one TTL, and every call that sets that TTL (a re-entry, a partial release, an extend
//! or a renewal through any of the holds) moves the validity of all of them, earlier or
//! later. Finding the hash gone through one hold is a loss for all. Released is per hold.
//! Lease-lock holds each have their own validity.
//!
//! A release moves its hold to "releasing" while it talks to Redis; an answer settles it
//! (released), an unknown outcome (a connection error) puts it back to held, so the release
//! can be sent again.

use super::transport::Runtime;
use crate::error::Reason;
use event_listener::Event;
use futures::future::{select, Either};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

const HELD: u8 = 0;
const LOST: u8 = 1;
const RELEASED: u8 = 2;
const RELEASING: u8 = 3;

/// How a hold ended, as seen by [`HoldSignal::ended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Lost(Reason),
    Released,
}

/// The validity of one Redis key as this client knows it: its deadline, whether (and why) it
/// was found lost, and the fencing token of the first hold. Shared by the holds of one
/// reentrant owner (see the module docs).
#[derive(Debug)]
pub(crate) struct Validity {
    pub(crate) name: String,
    deadline_ns: AtomicU64,
    /// 0 while not lost, else the [`Reason`] code of the loss (the first one seen wins).
    lost: AtomicU8,
    /// Fencing token of the owner's outermost hold (0 = none): a re-entry reports it too.
    fence: AtomicU64,
    event: Event,
}

impl Validity {
    pub(crate) fn new(name: &str, deadline: Duration) -> Arc<Self> {
        Arc::new(Validity {
            name: name.to_owned(),
            deadline_ns: AtomicU64::new(as_nanos(deadline)),
            lost: AtomicU8::new(0),
            fence: AtomicU64::new(0),
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
        wake_all(&self.event);
    }

    /// The token of the owner's outermost fenced hold: set by the first fenced hold, then kept,
    /// so a re-entry never reports a token lower than one already handed out to this owner.
    pub(crate) fn fence(&self, granted: u64) -> u64 {
        match self
            .fence
            .compare_exchange(0, granted, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => granted,
            Err(outer) => outer,
        }
    }

    /// `true` while neither found lost nor past its deadline at `now`: a new hold of the same
    /// owner may then join it.
    pub(crate) fn is_live_at(&self, now: Duration) -> bool {
        self.lost_reason().is_none() && now < self.deadline()
    }

    /// Marks every hold of this validity lost (the first reason is kept).
    pub(crate) fn mark_lost(&self, reason: Reason) {
        let _ = self
            .lost
            .compare_exchange(0, reason.code() as u8, Ordering::AcqRel, Ordering::Acquire);
        wake_all(&self.event);
    }

    /// Why it was lost, once it was.
    pub(crate) fn lost_reason(&self) -> Option<Reason> {
        Reason::from_code(i32::from(self.lost.load(Ordering::Acquire)))
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

    /// The lock's name.
    pub(crate) fn name(&self) -> &str {
        &self.validity.name
    }

    /// `true` when this hold shares `validity` (one of the owner's holds on the lock).
    pub(crate) fn shares(&self, validity: &Arc<Validity>) -> bool {
        Arc::ptr_eq(&self.validity, validity)
    }

    /// The validity this hold shares with the owner's other holds of the lock.
    pub(crate) fn validity(&self) -> &Arc<Validity> {
        &self.validity
    }

    /// Moves the validity deadline (renewal or extend succeeded).
    pub(crate) fn set_deadline(&self, deadline: Duration) {
        self.validity.set_deadline(deadline);
    }

    /// Marks the hold lost for `reason` (and with it the holds sharing its validity). Returns
    /// `true` the first time for this hold (and only while held).
    pub(crate) fn fire(&self, reason: Reason, why: &str) -> bool {
        let first = self.to_lost();
        if first {
            tracing::warn!(lock = %self.validity.name, reason = reason.as_str(), "lock lost: {why}");
            self.validity.mark_lost(reason);
        }
        first
    }

    fn to_lost(&self) -> bool {
        self.state
            .compare_exchange(HELD, LOST, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Starts a release: held -> releasing. Otherwise says how the hold already ended.
    pub(crate) fn begin_release(&self) -> Result<(), End> {
        if let Some(end) = self.current() {
            return Err(end);
        }
        match self
            .state
            .compare_exchange(HELD, RELEASING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Ok(()),
            // Releases are serialized by the hold, so only a loss can come in between.
            Err(_) => Err(self.current().unwrap_or(End::Released)),
        }
    }

    /// Ends a release begun with [`begin_release`](Self::begin_release): `settled` = Redis
    /// answered (the hold is over), else the outcome is unknown and the hold is held again,
    /// so the release can be retried.
    pub(crate) fn finish_release(&self, settled: bool) {
        let to = if settled { RELEASED } else { HELD };
        let _ = self
            .state
            .compare_exchange(RELEASING, to, Ordering::AcqRel, Ordering::Acquire);
        wake_all(&self.validity.event);
    }

    /// `true` while held (not being released, lost or released).
    pub(crate) fn is_held(&self) -> bool {
        self.current().is_none() && self.state.load(Ordering::Acquire) == HELD
    }

    /// `true` once released or lost: nothing more will be sent for this hold.
    pub(crate) fn is_settled(&self) -> bool {
        self.current().is_some()
    }

    /// `true` once lost; a held hold whose deadline `now` has passed is marked lost here.
    pub(crate) fn is_lost_at(&self, now: Duration) -> bool {
        if self.is_held() && now >= self.deadline() {
            self.fire(Reason::Expired, "its validity ran out without a renewal");
        }
        matches!(self.current(), Some(End::Lost(_)))
    }

    /// Why the hold was lost, once it was.
    pub(crate) fn lost_reason(&self) -> Option<Reason> {
        match self.current() {
            Some(End::Lost(reason)) => Some(reason),
            _ => None,
        }
    }

    fn current(&self) -> Option<End> {
        let lost = || End::Lost(self.validity.lost_reason().unwrap_or(Reason::Expired));
        match self.state.load(Ordering::Acquire) {
            LOST => Some(lost()),
            RELEASED => Some(End::Released),
            // Another hold of this owner found the key gone.
            HELD if self.validity.lost_reason().is_some() => {
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
            if self.state.load(Ordering::Acquire) == RELEASING {
                // The release in progress settles it (or puts it back to held): no deadline
                // applies meanwhile.
                listener.await;
                continue;
            }
            let left = self.deadline().saturating_sub(runtime.now());
            if let Either::Right(_) = select(listener, runtime.sleep(left)).await {
                self.is_lost_at(runtime.now());
            }
        }
    }
}

/// Wakes every listener of `event`, if it has any. `Event::notify` sets up the event's shared
/// state on first use (an allocation), which every release paid for although most holds are
/// never listened to. A listener registers under the lock `total_listeners` reads, after
/// which it checks the state again, so one that registers after this check sees the change.
pub(crate) fn wake_all(event: &Event) {
    if event.total_listeners() > 0 {
        event.notify(usize::MAX);
    }
}

fn as_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(s: &HoldSignal) -> bool {
        let ok = s.begin_release().is_ok();
        if ok {
            s.finish_release(true);
        }
        ok
    }

    #[test]
    fn fires_once_and_not_after_release() {
        let s = HoldSignal::new("a", Duration::from_secs(10));
        assert!(s.fire(Reason::Deleted, "test"));
        assert!(!s.fire(Reason::Taken, "test"));
        assert!(!close(&s));
        assert!(s.is_lost_at(Duration::ZERO));
        assert_eq!(s.lost_reason(), Some(Reason::Deleted), "the first reason is kept");

        let r = HoldSignal::new("b", Duration::from_secs(10));
        assert!(close(&r));
        assert!(!r.fire(Reason::Deleted, "test"));
        assert!(
            !r.is_lost_at(Duration::from_secs(20)),
            "a released hold is never lost"
        );
    }

    #[test]
    fn a_release_with_an_unknown_outcome_leaves_the_hold_held() {
        let s = HoldSignal::new("r", Duration::from_secs(10));
        s.begin_release().unwrap();
        assert!(!s.is_held() && !s.is_settled());
        assert!(
            !s.is_lost_at(Duration::from_secs(20)),
            "no deadline while releasing"
        );
        s.finish_release(false);
        assert!(s.is_held(), "retryable");
        s.begin_release().unwrap();
        s.finish_release(true);
        assert!(s.is_settled());
        assert_eq!(s.begin_release(), Err(End::Released));
        let late = HoldSignal::new("t", Duration::from_secs(1));
        assert!(late.is_lost_at(Duration::from_secs(2)));
        assert_eq!(late.begin_release(), Err(End::Lost(Reason::Expired)));
    }

    #[test]
    fn holds_sharing_a_validity_move_and_fail_together() {
        let v = Validity::new("d", Duration::from_secs(10));
        let outer = HoldSignal::sharing(v.clone());
        let inner = HoldSignal::sharing(v.clone());
        // A re-entry through `inner` reset the key's TTL: the outer hold lives on with it.
        inner.set_deadline(Duration::from_secs(15));
        assert!(!outer.is_lost_at(Duration::from_secs(12)));
        assert!(close(&inner));
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
        let b = HoldSignal::sharing(v.clone());
        assert!(a.fire(Reason::Taken, "test"));
        assert!(
            !b.is_held() && b.is_lost_at(Duration::ZERO),
            "a sibling's loss is this hold's loss"
        );
        assert_eq!(b.lost_reason(), Some(Reason::Taken));
        assert!(!close(&b));
        assert_eq!(
            (v.fence(7), v.fence(9)),
            (7, 7),
            "a re-entry keeps the outer token"
        );
    }

    #[test]
    fn passing_the_deadline_is_a_loss() {
        let s = HoldSignal::new("c", Duration::from_secs(10));
        assert!(!s.is_lost_at(Duration::from_secs(9)));
        s.set_deadline(Duration::from_secs(20));
        assert!(!s.is_lost_at(Duration::from_secs(15)));
        assert!(s.is_lost_at(Duration::from_secs(20)));
        assert!(!s.is_held());
        assert_eq!(s.lost_reason(), Some(Reason::Expired));
    }
}
