//! A client's live holds and whether it was closed: what `Client::close()` needs to find.
//!
//! Why in the core: every binding offers `close()` (releases what is still held, stops
//! pending acquires, makes later calls fail), and each used to keep its own copy of this
//! bookkeeping. Holds are tracked weakly, so a hold whose guard was dropped (and is released
//! in the background) is not kept alive by the registry.

use super::hold::Hold;
use crate::error::{Error, Result};
use event_listener::Event;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// The message of every call on a closed client (a `Connection` error, in every binding).
pub(crate) const CLOSED: &str = "the client is closed";

/// Something besides a hold that `Client::close()` ends (a permit: its renewal stops and it
/// is released).
pub(crate) trait OnClose: super::MaybeSend {
    /// Ends it; resolves when Redis answered or failed.
    fn close(self: Arc<Self>) -> super::BoxFut<'static, ()>;
}

/// The closed state and the live holds of one client.
#[derive(Default)]
pub(crate) struct Registry {
    closed: AtomicBool,
    closing: Event,
    holds: Mutex<HashMap<u64, Weak<Hold>>>,
    others: Mutex<HashMap<u64, Weak<dyn OnClose>>>,
    /// Items kept for `close()` after their owner went (a semaphore handle dropped while it
    /// still counted permits): held strongly, so they must not hold the engine strongly.
    left: Mutex<Vec<Arc<dyn OnClose>>>,
    /// The holds `close()` found still held (and released): their holders are told so.
    released_by_close: Mutex<HashSet<u64>>,
    seq: AtomicU64,
}

impl Registry {
    fn holds(&self) -> MutexGuard<'_, HashMap<u64, Weak<Hold>>> {
        // A poisoned mutex only means a panic elsewhere mid-update of a plain map.
        self.holds.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `true` once `close()` began.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `Connection` ("the client is closed") once closed.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::connection(CLOSED));
        }
        Ok(())
    }

    /// A fresh hold id.
    pub(crate) fn next_id(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Tracks `hold` until [`untrack`](Self::untrack); `false` when the client was closed
    /// meanwhile (the caller then releases it). Checked under the map's lock, which `close`
    /// takes after closing, so no hold is missed.
    pub(crate) fn track(&self, hold: &Arc<Hold>) -> bool {
        let mut holds = self.holds();
        if self.is_closed() {
            return false;
        }
        holds.insert(hold.id, Arc::downgrade(hold));
        true
    }

    /// Tracks `item` until [`untrack_other`](Self::untrack_other) under `id` (from
    /// [`next_id`](Self::next_id)); `false` when the client was closed meanwhile.
    pub(crate) fn track_other(&self, id: u64, item: Weak<dyn OnClose>) -> bool {
        let mut others = self.others.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_closed() {
            return false;
        }
        others.insert(id, item);
        true
    }

    /// Stops tracking item `id`.
    pub(crate) fn untrack_other(&self, id: u64) {
        self.others.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }

    /// Keeps `item` until [`close`](Self::close) ends it; `false` when the client was closed
    /// meanwhile. For an item whose owner is gone: it must reach the engine weakly.
    pub(crate) fn keep_until_close(&self, item: Arc<dyn OnClose>) -> bool {
        let mut left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        if self.is_closed() {
            return false;
        }
        left.push(item);
        true
    }

    /// After [`close`](Self::close): the other items still alive and those kept until close,
    /// to end.
    pub(crate) fn take_others(&self) -> Vec<Arc<dyn OnClose>> {
        let mut others = self.others.lock().unwrap_or_else(|p| p.into_inner());
        let mut items: Vec<_> = others.drain().filter_map(|(_, o)| o.upgrade()).collect();
        drop(others);
        items.append(&mut self.left.lock().unwrap_or_else(|p| p.into_inner()));
        items
    }

    /// Stops tracking hold `id` (its last reference is gone).
    pub(crate) fn untrack(&self, id: u64) {
        self.holds().remove(&id);
        let mut by_close = self.by_close();
        if !by_close.is_empty() {
            by_close.remove(&id); // only after a close: no hashing on every release
        }
    }

    fn by_close(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.released_by_close.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that `close()` found hold `id` still held and released it.
    pub(crate) fn note_released_by_close(&self, id: u64) {
        self.by_close().insert(id);
    }

    /// `true` when `close()` found hold `id` still held and released it.
    pub(crate) fn was_released_by_close(&self, id: u64) -> bool {
        self.by_close().contains(&id)
    }

    /// Number of tracked holds (diagnostics, tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.holds().len()
    }

    /// Closes: later calls fail, [`until_closed`](Self::until_closed) resolves. Returns the
    /// holds still alive, or `None` when it was already closed.
    pub(crate) fn close(&self) -> Option<Vec<Arc<Hold>>> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return None;
        }
        self.closing.notify(usize::MAX);
        let live = self.holds().drain().filter_map(|(_, h)| h.upgrade()).collect();
        Some(live)
    }

    /// Resolves once the client is closed (pending acquires race it).
    pub(crate) async fn until_closed(&self) {
        loop {
            if self.is_closed() {
                return;
            }
            let listener = self.closing.listen();
            if self.is_closed() {
                return;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn closing_is_once_and_wakes_waiters() {
        let registry = Registry::default();
        assert!(registry.check_open().is_ok());
        let mut waiting = Box::pin(registry.until_closed());
        assert!((&mut waiting).now_or_never().is_none());
        assert_eq!(registry.close().map(|h| h.len()), Some(0));
        assert!(waiting.now_or_never().is_some(), "a pending wait resolves");
        assert!(registry.close().is_none(), "idempotent");
        let err = registry.check_open().unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Connection);
        assert_eq!(err.message(), CLOSED);
        assert_ne!(registry.next_id(), registry.next_id());
        assert_eq!(registry.len(), 0);
    }
}
