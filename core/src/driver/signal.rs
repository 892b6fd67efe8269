//! The "lost" signal of one hold: fired once when the hold is found gone, closed when the hold
//! is released, awaited by `Guard::lost()` and by binding callbacks.

use event_listener::Event;
use std::sync::atomic::{AtomicU8, Ordering};

const HELD: u8 = 0;
const LOST: u8 = 1;
const RELEASED: u8 = 2;

/// How a hold ended, as seen by [`LostSignal::ended`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Lost,
    Released,
}

#[derive(Debug, Default)]
pub(crate) struct LostSignal {
    state: AtomicU8,
    event: Event,
}

impl LostSignal {
    /// Marks the hold lost. Returns `true` the first time (and only while held).
    pub(crate) fn fire(&self) -> bool {
        let first = self
            .state
            .compare_exchange(HELD, LOST, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
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

    pub(crate) fn is_lost(&self) -> bool {
        self.state.load(Ordering::Acquire) == LOST
    }

    fn current(&self) -> Option<End> {
        match self.state.load(Ordering::Acquire) {
            LOST => Some(End::Lost),
            RELEASED => Some(End::Released),
            _ => None,
        }
    }

    /// Resolves when the hold is lost or released.
    pub(crate) async fn ended(&self) -> End {
        loop {
            if let Some(end) = self.current() {
                return end;
            }
            let listener = self.event.listen();
            if let Some(end) = self.current() {
                return end;
            }
            listener.await;
        }
    }

    /// Resolves when the hold is lost; never resolves after a release.
    pub(crate) async fn lost(&self) {
        if self.ended().await == End::Released {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    #[test]
    fn fires_once_and_not_after_release() {
        let s = LostSignal::default();
        assert!(s.fire());
        assert!(!s.fire());
        assert!(!s.close());
        assert!(s.is_lost());
        assert_eq!(block_on(s.ended()), End::Lost);

        let r = LostSignal::default();
        assert!(r.close());
        assert!(!r.fire());
        assert!(!r.is_lost());
        assert_eq!(block_on(r.ended()), End::Released);
    }
}
