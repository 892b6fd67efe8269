//! What `Client::close()` does for a [`Semaphore`](super::Semaphore)'s handles: gives back the
//! permits they still count (as a C handle's `redlatch_semaphore_free` does), those of handles
//! dropped meanwhile included, so closing a client never leaves its permits taken for good (a
//! semaphore's count has no TTL).

use crate::driver::{BoxFut, Engine, OnClose};
use crate::protocol::token;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// One handle and its clones (they share `held`), known to the client's registry while any
/// of them lives.
pub(super) struct GiveBackAtClose {
    engine: Arc<Engine>,
    name: String,
    held: Arc<AtomicU64>,
    registry_id: u64,
}

impl GiveBackAtClose {
    /// Registers the handle whose count is `held`.
    pub(super) fn register(engine: &Arc<Engine>, name: &str, held: &Arc<AtomicU64>) -> Arc<GiveBackAtClose> {
        let this = Arc::new(GiveBackAtClose {
            engine: engine.clone(),
            name: name.to_owned(),
            held: held.clone(),
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
            let permits = self.held.swap(0, Ordering::AcqRel);
            give_back(&self.engine, &self.name, permits).await;
        })
    }
}

impl Drop for GiveBackAtClose {
    fn drop(&mut self) {
        self.engine.registry.untrack_other(self.registry_id);
        // The last clone of a handle went while it counted permits (a Node or Python handle
        // collected, a Rust one dropped): they stay taken while the client lives (nothing can
        // release them: another handle holds none), and `close()` gives them back.
        let permits = self.held.swap(0, Ordering::AcqRel);
        if permits > 0 {
            let left = Arc::new(LeftByADroppedHandle {
                engine: Arc::downgrade(&self.engine),
                name: std::mem::take(&mut self.name),
                permits,
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
}

impl OnClose for LeftByADroppedHandle {
    fn close(self: Arc<Self>) -> BoxFut<'static, ()> {
        Box::pin(async move {
            if let Some(engine) = self.engine.upgrade() {
                give_back(&engine, &self.name, self.permits).await;
            }
        })
    }
}

/// Releases `permits` of semaphore `name` at close; a failure is logged (the client is going).
async fn give_back(engine: &Engine, name: &str, permits: u64) {
    if permits == 0 {
        return;
    }
    let given_back = async {
        let id = token::new_token()?;
        super::send_release(engine, name, permits, &id, false).await
    };
    match given_back.await {
        Ok(()) => tracing::debug!(semaphore = %name, permits, "gave back the permits a handle held at close"),
        Err(e) => {
            tracing::warn!(semaphore = %name, permits, error = %e, "giving back the permits a handle held at close failed")
        }
    }
}
