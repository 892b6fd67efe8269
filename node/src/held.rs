//! `NativeHeld`: one acquisition, with release, extend and the lost-lock callback.
//!
//! The core guard sits behind an async `RwLock<Option<Guard>>`: `extend` and `owned` read it
//! across their await, `release` takes it out (after in-flight extends finish), and `close()`
//! does the same for every hold still alive. When the JavaScript object is garbage-collected
//! without a release, the slot drops the guard and the core releases it in the background.
//!
//! Loss reporting: a task per hold awaits the core's `loss()` and, if the hold was lost,
//! calls `onLost(reason)` (`"expired"`, `"taken"` or `"deleted"`) through a *weak* threadsafe
//! function (it never keeps Node alive). A hold that `client.close()` released is gone for its
//! holder as well: the task then calls `onLost("closed")`. The task ends when the hold is
//! released or lost, which also frees the callback.
//!
//! A release whose outcome is unknown (a connection error) leaves the guard in its slot, held,
//! so `release()` may be called again; once settled it is taken out. A scope's release
//! (`scopeEnd`) takes it out whatever the outcome: the dropped guard keeps trying in the
//! background.

use crate::client::Shared;
use crate::error::{closed, not_owned, IntoNapi};
use crate::options::millis;
use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use redlatch::Guard;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::RwLock;

/// The `onLost(why)` callback, `why` the loss reason or `"closed"`: errors not passed to it
/// (`CalleeHandled = false`), weak (`Weak = true`: unreferenced, so it never keeps the event
/// loop alive).
pub(crate) type LostCallback = ThreadsafeFunction<String, Unknown<'static>, String, Status, false, true>;

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
}

impl HoldSlot {
    pub(crate) fn new(shared: &Arc<Shared>, guard: Guard, on_lost: LostCallback) -> Self {
        let loss = guard.loss();
        let closed = Arc::new(AtomicBool::new(false));
        let closed_by_client = closed.clone();
        tokio::spawn(async move {
            let lost = loss.await;
            let closed = closed_by_client.load(Ordering::Acquire);
            let why = match lost {
                Some(reason) => Some(reason.as_str().to_owned()),
                None if closed => Some("closed".to_owned()),
                None => None,
            };
            if let Some(why) = why {
                on_lost.call(why, ThreadsafeFunctionCallMode::NonBlocking);
            }
        });
        HoldSlot {
            closed,
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

    fn already_released(&self) -> napi::Error {
        if self.closed.load(Ordering::Acquire) {
            return closed();
        }
        not_owned(format!(
            "lock {:?} was already released through this handle",
            self.name
        ))
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

    /// `true` once the hold is known lost (read locally, never blocks).
    #[napi(getter)]
    pub fn lost(&self) -> bool {
        match self.slot.guard.try_read() {
            Ok(g) => g.as_ref().is_some_and(Guard::is_lost),
            Err(_) => false,
        }
    }

    /// `true` until the hold is released (through this handle or by `close()`) or lost; a
    /// release whose outcome was unknown leaves it held.
    #[napi(getter)]
    pub fn held(&self) -> bool {
        match self.slot.guard.try_read() {
            Ok(g) => g.as_ref().is_some_and(Guard::is_held),
            Err(_) => true,
        }
    }

    /// Releases the hold (decrements the hold count of a reentrant lock), at most once.
    /// Rejects with `ERR_NOT_OWNED` (reason `deleted`, `taken` or `never_held`) or
    /// `ERR_LOCK_LOST` (the loss was known before: its reason, or `expired`); with
    /// `ERR_CONNECTION`/`ERR_QUORUM`/`ERR_NO_PERMISSION`/`ERR_OUT_OF_MEMORY` the hold stays
    /// (`held`) and `release()` may be called again once Redis is back. `scopeEnd` (the end
    /// of `using`, `await using`): nobody can call again, so a hold still held after the
    /// attempt is handed to the core, which retries in the background while it is valid.
    #[napi(ts_args_type = "scopeEnd?: boolean")]
    pub async fn release(&self, scope_end: Option<bool>) -> napi::Result<()> {
        let mut slot = self.slot.guard.write().await;
        let Some(guard) = slot.as_ref() else {
            return Err(self.slot.already_released());
        };
        let result = guard.release().await;
        if !guard.is_held() || scope_end == Some(true) {
            // Dropped here: a guard still held is released in the background.
            slot.take();
            if let Some(shared) = self.slot.shared.upgrade() {
                shared.untrack(self.slot.id);
            }
        }
        result.js()
    }

    /// Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost
    /// lock. Rejects as `release`, plus `ERR_INVALID_ARGUMENT` for a bad lease.
    #[napi]
    pub async fn extend(&self, lease_ms: f64) -> napi::Result<()> {
        let lease = millis("leaseMs", lease_ms, false)?;
        let slot = self.slot.guard.read().await;
        match slot.as_ref() {
            Some(guard) => guard.extend(lease).await.js(),
            None => Err(self.slot.already_released()),
        }
    }

    /// Asks Redis whether this hold is still this owner's.
    #[napi]
    pub async fn owned(&self) -> napi::Result<bool> {
        let slot = self.slot.guard.read().await;
        match slot.as_ref() {
            Some(guard) => guard.owned().await.js(),
            None => Ok(false),
        }
    }
}
