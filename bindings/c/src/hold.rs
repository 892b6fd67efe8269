//! The holds of one lock handle, kept per owner.
//!
//! C has no guard object, so the handle remembers what each owner acquired: the calling
//! thread by default, or the handle's explicit `owner_id`. A reentrant lock stacks one hold per
//! acquire (the core counts re-entries in Redis, and each release undoes one); a lease lock
//! keeps at most one live hold per owner, so acquiring twice from one thread is refused at once
//! instead of deadlocking on itself.
//!
//! A thread's owner number is the core's (`redlatch::thread_owner`, the process-wide owner
//! space) with the top bit set, so it never collides with explicit `owner_id`s (which must be
//! below 2^63). For reentrant locks
//! the number is also the core's owner (Redis owner id `<client-id>:<n>`), so one thread
//! re-enters through any handle of the same client, like Redisson's per-thread RLock.

use redlatch::blocking::Guard;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Explicit owner ids are below this; thread owner numbers are at or above it.
pub(crate) const THREAD_OWNER_BASE: u64 = 1 << 63;

/// The calling thread's owner number (stable for the thread's life).
pub(crate) fn thread_owner() -> u64 {
    THREAD_OWNER_BASE | redlatch::thread_owner()
}

/// One acquisition: the core guard, shared by the calls that use it (the core releases it at
/// most once and serializes release and extend).
pub(crate) type Slot = Arc<Guard>;

#[derive(Default)]
struct State {
    by_owner: HashMap<u64, Vec<Slot>>,
    /// Set once a lost-lock callback was first registered: from then on every hold is watched.
    watched: bool,
}

impl std::ops::Deref for State {
    type Target = HashMap<u64, Vec<Slot>>;
    fn deref(&self) -> &Self::Target {
        &self.by_owner
    }
}

impl std::ops::DerefMut for State {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.by_owner
    }
}

/// The holds of one lock handle.
///
/// Holds are watched for loss (one small task each, see `callback.rs`) only once the handle
/// has had a lost-lock callback: before that nobody is told, and the task would cost every
/// acquire a wake-up of a runtime thread (issue 15: about one context switch per acquire +
/// release). [`Holds::watch_all`] and [`Holds::push`] take the same mutex, so a hold made
/// while a callback is being registered is watched exactly once.
#[derive(Default)]
pub(crate) struct Holds {
    state: Mutex<State>,
}

impl Holds {
    fn map(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a new hold of `owner`; `watch` is called on it when holds are watched.
    pub(crate) fn push(&self, owner: u64, guard: Guard, watch: impl FnOnce(&Guard)) {
        let mut state = self.map();
        if state.watched {
            watch(&guard);
        }
        state.entry(owner).or_default().push(Arc::new(guard));
    }

    /// From now on every hold is watched: the first time, `watch` is called on each hold
    /// held now (later holds are watched by [`Holds::push`]).
    pub(crate) fn watch_all(&self, watch: impl Fn(&Guard)) {
        let mut state = self.map();
        if std::mem::replace(&mut state.watched, true) {
            return;
        }
        for slot in state.values().flatten() {
            watch(slot);
        }
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
        stack.retain(|slot| slot.is_held());
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
