//! What `Client::close()` does for a [`Semaphore`](super::Semaphore)'s handles: gives back the
//! permits they still count (as a C handle's `redlatch_semaphore_free` does), those of handles
//! dropped meanwhile included, so closing a client never leaves its permits taken for good (a
//! semaphore's count has no TTL).

use super::release::{latch_may_tell, send_release, UnsettledRelease};
use crate::driver::{BoxFut, Engine, OnClose};
use crate::protocol::token;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// What a handle and its clones count: the permits they hold, some of them maybe in releases
/// of unknown outcome.
#[derive(Clone, Default)]
pub(super) struct Counted {
    pub(super) held: Arc<AtomicU64>,
    pub(super) unsettled: Arc<Mutex<Vec<UnsettledRelease>>>,
}

impl Counted {
    /// Takes everything counted: the permits in no release, and the unsettled releases.
    pub(super) fn take(&self) -> (u64, Vec<UnsettledRelease>) {
        let held = self.held.swap(0, Ordering::AcqRel);
        let unsettled = std::mem::take(&mut *self.unsettled.lock().unwrap_or_else(|p| p.into_inner()));
        let in_releases: u64 = unsettled.iter().map(|u| u.permits).sum();
        (held.saturating_sub(in_releases), unsettled)
    }
}

/// One handle and its clones (they share `held`), known to the client's registry while any
/// of them lives.
pub(super) struct GiveBackAtClose {
    engine: Arc<Engine>,
    name: String,
    counted: Counted,
    registry_id: u64,
}

impl GiveBackAtClose {
    /// Registers the handle whose count is `held`.
    pub(super) fn register(engine: &Arc<Engine>, name: &str, counted: Counted) -> Arc<GiveBackAtClose> {
        let this = Arc::new(GiveBackAtClose {
            engine: engine.clone(),
            name: name.to_owned(),
            counted,
            registry_id: engine.registry.next_id(),
        });
        let weak: Weak<dyn OnClose> = Arc::downgrade(&this) as Weak<dyn OnClose>;
        // Already closed: every call of the handle is refused, nothing to give back.
        let _ = engine.registry.track_other(this.registry_id, weak);
        this
    }
}

impl OnClose for GiveBackAtClose {
    fn close(self: Arc<Self>) -> BoxFut<'static, ()> {
        Box::pin(async move {
            let (permits, unsettled) = self.counted.take();
            give_back(&self.engine, &self.name, permits, unsettled).await;
        })
    }
}

impl Drop for GiveBackAtClose {
    fn drop(&mut self) {
        self.engine.registry.untrack_other(self.registry_id);
        // The last clone of a handle went while it counted permits (a Node or Python handle
        // collected, a Rust one dropped): they stay taken while the client lives (nothing can
        // release them: another handle holds none), and `close()` gives them back.
        let (permits, unsettled) = self.counted.take();
        if permits > 0 || !unsettled.is_empty() {
            let left = Arc::new(LeftByADroppedHandle {
                engine: Arc::downgrade(&self.engine),
                name: std::mem::take(&mut self.name),
                permits,
                unsettled: Mutex::new(unsettled),
            });
            let _ = self.engine.registry.keep_until_close(left);
        }
    }
}

/// Permits a dropped handle still counted, given back at `close()`. Kept by the registry, so it
/// reaches the engine weakly (the engine owns the registry).
struct LeftByADroppedHandle {
    engine: Weak<Engine>,
    name: String,
    permits: u64,
    unsettled: Mutex<Vec<UnsettledRelease>>,
}

impl OnClose for LeftByADroppedHandle {
    fn close(self: Arc<Self>) -> BoxFut<'static, ()> {
        Box::pin(async move {
            if let Some(engine) = self.engine.upgrade() {
                let unsettled =
                    std::mem::take(&mut *self.unsettled.lock().unwrap_or_else(|p| p.into_inner()));
                give_back(&engine, &self.name, self.permits, unsettled).await;
            }
        })
    }
}

/// Releases `permits` of semaphore `name` at close, and settles the `unsettled` releases (each
/// sent again with its request id, so that its latch decides: a release that applied is not
/// given back twice, a re-trial of stop 45 saw a semaphore of 3 at 5 after close); a failure
/// is logged (the client is going).
pub(super) async fn give_back(engine: &Engine, name: &str, permits: u64, unsettled: Vec<UnsettledRelease>) {
    for u in unsettled {
        if !latch_may_tell(engine, &u) {
            tracing::warn!(semaphore = %name, permits = u.permits, "a release whose outcome is unknown could not be confirmed at close: its latch has expired");
            continue;
        }
        if let Err(e) = send_release(engine, name, u.permits, &u.request_id, true).await {
            tracing::warn!(semaphore = %name, permits = u.permits, error = %e, "settling a release whose outcome is unknown failed at close");
        }
    }
    if permits == 0 {
        return;
    }
    let given_back = async {
        let id = token::new_token()?;
        send_release(engine, name, permits, &id, false).await
    };
    match given_back.await {
        Ok(()) => tracing::debug!(semaphore = %name, permits, "gave back the permits a handle held at close"),
        Err(e) => {
            tracing::warn!(semaphore = %name, permits, error = %e, "giving back the permits a handle held at close failed")
        }
    }
}
