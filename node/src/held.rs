//! `NativeHeld`: one acquisition, with release, extend and the lost-lock callback.
//!
//! The core guard sits behind an async `RwLock<Option<Guard>>`: `extend` and `owned` read it
//! across their await, `release` takes it out (after in-flight extends finish), and `close()`
//! does the same for every hold still alive. When the JavaScript object is garbage-collected
//! without a release, the slot drops the guard and the core releases it in the background.
//!
//! Loss reporting, only for holds someone watches (the facade asks with `watch(onEnd)` when a
//! program first reads `held.signal`, so a plain acquire + release pays for no callback): a
//! task awaits the core's `ended()` and, if the hold was lost, calls `onEnd(false)` through a
//! *weak* threadsafe function (it never keeps Node alive). A hold that `client.close()`
//! released is gone for its holder as well: the task then calls `onEnd(true)`. The task ends
//! when the hold is released or lost, which also frees the callback.

use crate::calls::{Driver, Value};
use crate::client::Shared;
use crate::local::Outs;
use crate::lock::closed_error;
use crate::options::millis;
use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use redlatch::{Error, ErrorKind, Guard};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::RwLock;

/// The `onEnd(closedByClient)` callback: errors not passed to it (`CalleeHandled = false`),
/// weak (`Weak = true`: unreferenced, so it never keeps the event loop alive).
pub(crate) type LostCallback = ThreadsafeFunction<bool, Unknown<'static>, bool, Status, false, true>;

/// One hold, shared by its `NativeHeld` and (weakly) by the client's registry.
pub(crate) struct HoldSlot {
    pub(crate) id: u64,
    shared: Weak<Shared>,
    guard: RwLock<Option<Guard>>,
    name: String,
    fencing_token: Option<u64>,
    lease_ms: f64,
    /// Set by `close()` before it releases the hold.
    closed: Arc<AtomicBool>,
    driver: Arc<Driver>,
}

impl HoldSlot {
    pub(crate) fn new(shared: &Arc<Shared>, guard: Guard) -> Self {
        HoldSlot {
            closed: Arc::new(AtomicBool::new(false)),
            driver: shared.driver.clone(),
            id: shared.next_hold_id(),
            shared: Arc::downgrade(shared),
            name: guard.name().to_owned(),
            fencing_token: guard.fencing_token(),
            lease_ms: guard.lease().as_millis() as f64,
            guard: RwLock::new(Some(guard)),
        }
    }

    /// Releases the hold if it is still here (used by `close()`); errors are only logged by
    /// the core, because nobody awaits them.
    pub(crate) async fn release_on_close(&self) {
        let guard = self.guard.write().await.take();
        if guard.is_some() {
            self.closed.store(true, Ordering::Release);
        }
        if let Some(guard) = guard {
            let _ = guard.release().await;
        }
    }

    fn already_released(&self) -> Error {
        if self.closed.load(Ordering::Acquire) {
            return closed_error();
        }
        Error::new(
            ErrorKind::NotOwned,
            format!("lock {:?} was already released through this handle", self.name),
        )
    }
}

impl Drop for HoldSlot {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.untrack(self.id);
        }
        // The guard (if still held) drops here and releases in the background.
    }
}

/// One held acquisition (returned by `NativeLock.acquire`).
#[napi]
pub struct NativeHeld {
    slot: Arc<HoldSlot>,
}

impl NativeHeld {
    pub(crate) fn new(slot: Arc<HoldSlot>) -> Self {
        NativeHeld { slot }
    }
}

#[napi]
impl NativeHeld {
    /// The lock's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.slot.name.clone()
    }

    /// The fencing token of this acquisition (fenced locks), else `null`.
    #[napi(getter)]
    pub fn fencing_token(&self) -> Option<f64> {
        self.slot.fencing_token.map(|t| t as f64)
    }

    /// The lease in ms this hold was acquired with (the watchdog timeout in watchdog mode).
    #[napi(getter)]
    pub fn lease_ms(&self) -> f64 {
        self.slot.lease_ms
    }

    /// `true` once the hold is known lost, or was released by `client.close()` (read
    /// locally, never blocks).
    #[napi(getter)]
    pub fn lost(&self) -> bool {
        if self.closed_by_client() {
            return true;
        }
        match self.slot.guard.try_read() {
            Ok(g) => g.as_ref().is_some_and(Guard::is_lost),
            Err(_) => false,
        }
    }

    /// `true` once `client.close()` released this hold.
    #[napi(getter)]
    pub fn closed_by_client(&self) -> bool {
        self.slot.closed.load(Ordering::Acquire)
    }

    /// Calls `onEnd(false)` once if the hold is lost, `onEnd(true)` if `client.close()`
    /// releases it; never after a release through this handle. A no-op for a hold already
    /// released (the facade reads `lost` first).
    #[napi(ts_args_type = "onEnd: (closedByClient: boolean) => void")]
    pub fn watch(&self, on_end: LostCallback) {
        let ended = match self.slot.guard.try_read() {
            Ok(g) => g.as_ref().map(Guard::ended),
            // A release or close() is taking the guard out right now.
            Err(_) => None,
        };
        let Some(ended) = ended else { return };
        let closed = self.slot.closed.clone();
        self.slot.driver.spawn(async move {
            let lost = ended.await;
            let closed = closed.load(Ordering::Acquire);
            if lost || closed {
                on_end.call(closed && !lost, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
    }

    /// Releases the hold (decrements the hold count of a reentrant lock) and settles call
    /// `id`. Rejects with `ERR_NOT_OWNED` when it expired, was taken or was already
    /// released, `ERR_LOCK_LOST` when the loss had already been seen,
    /// `ERR_CONNECTION`/`ERR_QUORUM` when Redis failed.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn release<'env>(&self, env: &'env Env, id: u32) -> napi::Result<Outs<'env>> {
        let slot = self.slot.clone();
        let driver = slot.driver.clone();
        driver.call(env, id, async move {
            let guard = slot.guard.write().await.take();
            let Some(guard) = guard else {
                return Err(slot.already_released());
            };
            if let Some(shared) = slot.shared.upgrade() {
                shared.untrack(slot.id);
            }
            guard.release().await.map(|()| Value::Unit)
        })
    }

    /// Resets the remaining lease to `leaseMs` (replace, never add) and settles call `id`;
    /// never re-creates a lost lock. Rejects as `release`, plus `ERR_INVALID_ARGUMENT` for a
    /// bad lease.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn extend<'env>(&self, env: &'env Env, lease_ms: f64, id: u32) -> napi::Result<Outs<'env>> {
        let lease = millis("leaseMs", lease_ms, false)?;
        let slot = self.slot.clone();
        let driver = slot.driver.clone();
        driver.call(env, id, async move {
            let guard = slot.guard.read().await;
            match guard.as_ref() {
                Some(guard) => guard.extend(lease).await.map(|()| Value::Unit),
                None => Err(slot.already_released()),
            }
        })
    }

    /// Settles call `id` with whether Redis still has this hold as this owner's.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn owned<'env>(&self, env: &'env Env, id: u32) -> napi::Result<Outs<'env>> {
        let slot = self.slot.clone();
        let driver = slot.driver.clone();
        driver.call(env, id, async move {
            let guard = slot.guard.read().await;
            match guard.as_ref() {
                Some(guard) => guard.owned().await.map(Value::Bool),
                None => Ok(Value::Bool(false)),
            }
        })
    }
}
