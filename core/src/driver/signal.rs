//! The state of one hold: held, lost or released, plus its validity deadline.
//!
//! The deadline is where the hold's local validity ends (acquire or last renewal/extend time +
//! lease - drift, on the runtime's monotonic clock). Passing it without a renewal *is* a loss:
//! [`HoldSignal::ended`] sleeps until the deadline and fires the loss itself, so fixed-lease
//! holds need no background task at all and watchdog holds are reported lost even when
//! renewals keep failing silently.

use super::transport::Runtime;
use event_listener::Event;
use futures::future::{select, Either};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
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

#[derive(Debug)]
pub(crate) struct HoldSignal {
    name: String,
    state: AtomicU8,
    deadline_ns: AtomicU64,
    event: Event,
}

impl HoldSignal {
    pub(crate) fn new(name: &str, deadline: Duration) -> Self {
        HoldSignal {
            name: name.to_owned(),
            state: AtomicU8::new(HELD),
            deadline_ns: AtomicU64::new(as_nanos(deadline)),
            event: Event::new(),
        }
    }

    /// End of the local validity.
    pub(crate) fn deadline(&self) -> Duration {
        Duration::from_nanos(self.deadline_ns.load(Ordering::Acquire))
    }

    /// Moves the validity deadline (renewal or extend succeeded).
    pub(crate) fn set_deadline(&self, deadline: Duration) {
        self.deadline_ns.store(as_nanos(deadline), Ordering::Release);
        self.event.notify(usize::MAX);
    }

    /// Marks the hold lost. Returns `true` the first time (and only while held).
    pub(crate) fn fire(&self, why: &str) -> bool {
        let first = self
            .state
            .compare_exchange(HELD, LOST, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
            tracing::warn!(lock = %self.name, "lock lost: {why}");
            self.event.notify(usize::MAX);
        }
        first
    }

    /// Marks the hold released. Returns `false` when it had already been lost or released.
    pub(crate) fn close(&self) -> bool {
        let ok = self
            .state
            .compare_exchange(HELD, RELEASED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if ok {
            self.event.notify(usize::MAX);
        }
        ok
    }

    pub(crate) fn is_held(&self) -> bool {
        self.state.load(Ordering::Acquire) == HELD
    }

    /// `true` once lost; a hold whose deadline `now` has passed is marked lost here.
    pub(crate) fn is_lost_at(&self, now: Duration) -> bool {
        if self.is_held() && now >= self.deadline() {
            self.fire("its validity ran out without a renewal");
        }
        self.state.load(Ordering::Acquire) == LOST
    }

    fn current(&self) -> Option<End> {
        match self.state.load(Ordering::Acquire) {
            LOST => Some(End::Lost),
            RELEASED => Some(End::Released),
            _ => None,
        }
    }

    /// Resolves when the hold is lost (found gone, or its deadline passed) or released.
    pub(crate) async fn ended(&self, runtime: &dyn Runtime) -> End {
        loop {
            if let Some(end) = self.current() {
                return end;
            }
            let listener = self.event.listen();
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
    fn passing_the_deadline_is_a_loss() {
        let s = HoldSignal::new("c", Duration::from_secs(10));
        assert!(!s.is_lost_at(Duration::from_secs(9)));
        s.set_deadline(Duration::from_secs(20));
        assert!(!s.is_lost_at(Duration::from_secs(15)));
        assert!(s.is_lost_at(Duration::from_secs(20)));
        assert!(!s.is_held());
    }
}
