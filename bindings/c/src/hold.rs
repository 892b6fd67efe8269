//! The holds of one lock handle, kept per owner.
//!
//! C has no guard object, so the handle remembers what each owner acquired: the calling
//! thread by default, or the handle's explicit `owner_id`. A reentrant lock stacks one hold per
//! acquire (the core counts re-entries in Redis, and each release undoes one); a lease lock
//! keeps at most one live hold per owner, so acquiring twice from one thread is refused at once
//! instead of deadlocking on itself.
//!
//! Owner numbers for threads are drawn from a process-wide counter with the top bit set, so
//! they never collide with explicit `owner_id`s (which must be below 2^63). For reentrant locks
//! the number is also the core's owner (Redis owner id `<client-id>:<n>`), so one thread
//! re-enters through any handle of the same client, like Redisson's per-thread RLock.

use redlatch::blocking::Guard;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Explicit owner ids are below this; thread owner numbers are at or above it.
pub(crate) const THREAD_OWNER_BASE: u64 = 1 << 63;

static NEXT_THREAD_OWNER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static THREAD_OWNER: u64 = THREAD_OWNER_BASE | NEXT_THREAD_OWNER.fetch_add(1, Ordering::Relaxed);
}

/// The calling thread's owner number (stable for the thread's life).
pub(crate) fn thread_owner() -> u64 {
    THREAD_OWNER.with(|n| *n)
}

/// One acquisition. `None` once released; the mutex serialises release and extend of it.
pub(crate) type Slot = Arc<Mutex<Option<Guard>>>;

/// Locks a slot (a poisoned mutex only means a panic elsewhere; the data is still sound).
pub(crate) fn lock_slot(slot: &Slot) -> MutexGuard<'_, Option<Guard>> {
    slot.lock().unwrap_or_else(|p| p.into_inner())
}

/// The holds of one lock handle.
#[derive(Default)]
pub(crate) struct Holds {
    by_owner: Mutex<HashMap<u64, Vec<Slot>>>,
}

impl Holds {
    fn map(&self) -> MutexGuard<'_, HashMap<u64, Vec<Slot>>> {
        self.by_owner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a new hold of `owner`.
    pub(crate) fn push(&self, owner: u64, guard: Guard) {
        self.map()
            .entry(owner)
            .or_default()
            .push(Arc::new(Mutex::new(Some(guard))));
    }

    /// `owner`'s most recent hold.
    pub(crate) fn top(&self, owner: u64) -> Option<Slot> {
        self.map().get(&owner).and_then(|v| v.last().cloned())
    }

    /// Forgets `slot`, one of `owner`'s holds (it was released or found not ours).
    pub(crate) fn remove(&self, owner: u64, slot: &Slot) {
        let mut map = self.map();
        let Some(stack) = map.get_mut(&owner) else {
            return;
        };
        stack.retain(|s| !Arc::ptr_eq(s, slot));
        if stack.is_empty() {
            map.remove(&owner);
        }
    }

    /// Drops `owner`'s holds that are no longer held (lost, expired, settled), then tells
    /// whether any remain. A hold whose release had an unknown outcome is still held.
    pub(crate) fn has_live(&self, owner: u64) -> bool {
        let mut map = self.map();
        let Some(stack) = map.get_mut(&owner) else {
            return false;
        };
        stack.retain(|slot| lock_slot(slot).as_ref().is_some_and(|g| g.is_held()));
        let live = !stack.is_empty();
        if !live {
            map.remove(&owner);
        }
        live
    }

    /// Removes every hold (newest first per owner), for freeing the handle.
    pub(crate) fn drain(&self) -> Vec<Slot> {
        let mut out = Vec::new();
        for (_, stack) in self.map().drain() {
            out.extend(stack.into_iter().rev());
        }
        out
    }
}
