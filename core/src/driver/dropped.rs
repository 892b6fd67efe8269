//! Background releases of dropped guards still in flight, per lock name.
//!
//! A guard dropped without `release()` is released in the background (`guard.rs`), so code
//! that drops one and acquires the same lock at once (`{ let _r = rw.read().acquire()...; }`
//! then `rw.write().acquire()`, the ordinary scoped read-then-write) raced that release: the
//! write acquire found this owner's read hold still in Redis and was refused with
//! `WouldDeadlock` at once (a user trial of stop 37: 36 of 60 runs), a `try_acquire` through
//! another handle found the lock still held. An acquire through the same client therefore
//! waits for the background releases of its lock to finish first, at most one network
//! timeout (a release retried longer than that is an outage the acquire meets anyway).

use super::transport::Runtime;
use event_listener::Event;
use futures::future::select;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// See the module docs.
#[derive(Default)]
pub(crate) struct DroppedReleases {
    /// How many are in flight, all names together (the acquire's fast path reads only this).
    total: AtomicUsize,
    by_name: Mutex<HashMap<String, usize>>,
    done: Event,
}

/// One background release in flight; dropping it (the release ended) wakes the acquires
/// waiting for it.
pub(crate) struct InFlight {
    releases: Arc<DroppedReleases>,
    name: String,
}

impl DroppedReleases {
    fn by_name(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        // A poisoned mutex only means a panic elsewhere mid-update of a plain map.
        self.by_name.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a background release of `name` until the returned value is dropped.
    pub(crate) fn begin(self: &Arc<Self>, name: &str) -> InFlight {
        *self.by_name().entry(name.to_owned()).or_default() += 1;
        self.total.fetch_add(1, Ordering::AcqRel);
        InFlight {
            releases: self.clone(),
            name: name.to_owned(),
        }
    }

    fn in_flight(&self, name: &str) -> bool {
        self.total.load(Ordering::Acquire) > 0 && self.by_name().contains_key(name)
    }

    /// Resolves once no background release of `name` is in flight, or after `bound`.
    pub(crate) async fn settled(&self, name: &str, runtime: &dyn Runtime, bound: Duration) {
        if !self.in_flight(name) {
            return;
        }
        let deadline = runtime.now() + bound;
        loop {
            let listener = self.done.listen();
            if !self.in_flight(name) {
                return;
            }
            let left = deadline.saturating_sub(runtime.now());
            if left.is_zero() {
                return;
            }
            select(listener, runtime.sleep(left)).await;
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut by_name = self.releases.by_name();
        if let Some(n) = by_name.get_mut(&self.name) {
            *n -= 1;
            if *n == 0 {
                by_name.remove(&self.name);
            }
        }
        drop(by_name);
        self.releases.total.fetch_sub(1, Ordering::AcqRel);
        self.releases.done.notify(usize::MAX);
    }
}
