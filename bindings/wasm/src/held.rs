//! `WasmHeld`: one acquisition, the core's [`Guard`] behind an `Rc`.
//!
//! The core guard is shareable and releases at most once, so `extend`/`owned`/`release`
//! Promises each take a reference to it: a release whose outcome is unknown (a connection
//! error, a timeout) leaves it held, so `release()` may be called again (the core makes the
//! retry exact), and a scope's release (`scopeEnd`) is the core's `release_final`, which goes
//! on in the background while the hold is valid. A `WasmHeld` that is garbage-collected
//! without a release (wasm-bindgen frees it through a `FinalizationRegistry`) drops the guard:
//! a hold with a fixed lease is left to expire with it, a watchdog-renewed one is released in
//! the background (`Guard::leave_to_its_lease`).
//!
//! `loss()` resolves to the loss reason (`"expired"`, `"taken"`, `"deleted"`) when the hold
//! is lost, to `"closed"` when `client.close()` released it (`Guard::released_by_close`) and
//! to `null` when it is released; it does not keep the guard alive (it looks at it through a
//! weak reference), so the facade can wire it to an `AbortSignal` for every hold without
//! preventing that garbage collection. `client.close()` is the core's `Client::close`: it
//! releases every hold still held, and later calls reject with "the client is closed".

use crate::error::IntoJs;
use crate::options;
use js_sys::Promise;
use redlatch::Guard;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// One held acquisition.
#[wasm_bindgen]
pub struct WasmHeld {
    guard: Rc<Guard>,
}

impl WasmHeld {
    pub(crate) fn new(guard: Guard) -> WasmHeld {
        WasmHeld {
            guard: Rc::new(guard),
        }
    }
}

impl Drop for WasmHeld {
    /// Freed by its `FinalizationRegistry` (collected) or after its release: see the module docs.
    fn drop(&mut self) {
        self.guard.leave_to_its_lease();
    }
}

#[wasm_bindgen]
impl WasmHeld {
    /// The lock's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.guard.name().to_owned()
    }

    /// The fencing token (fenced locks), else `null`.
    #[wasm_bindgen(getter, js_name = fencingToken)]
    pub fn fencing_token(&self) -> Option<f64> {
        self.guard.fencing_token().map(|t| t as f64)
    }

    /// The lease in ms this hold was acquired with (the watchdog timeout in watchdog mode).
    #[wasm_bindgen(getter, js_name = leaseMs)]
    pub fn lease_ms(&self) -> f64 {
        self.guard.lease().as_millis() as f64
    }

    /// `true` once the hold is known lost.
    #[wasm_bindgen(getter)]
    pub fn lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Why the hold was lost (`"expired"`, `"taken"`, `"deleted"`) once it is known lost;
    /// `undefined` before, and after a release.
    #[wasm_bindgen(getter, js_name = lostReason)]
    pub fn lost_reason(&self) -> Option<String> {
        self.guard.lost_reason().map(|r| r.as_str().to_owned())
    }

    /// `true` when `client.close()` found the hold still held and released it.
    #[wasm_bindgen(getter, js_name = closedByClient)]
    pub fn closed_by_client(&self) -> bool {
        self.guard.released_by_close()
    }

    /// `true` while the hold is still held as far as this client knows: not released, not
    /// lost (a release whose outcome was unknown leaves it held).
    #[wasm_bindgen(getter)]
    pub fn held(&self) -> bool {
        self.guard.is_held()
    }

    /// Resolves to the loss reason (`"expired"`, `"taken"`, `"deleted"`) when the hold is
    /// lost, `"closed"` when `client.close()` released it, `null` when it is released (once).
    pub fn loss(&self) -> Promise {
        let loss = self.guard.loss();
        let guard = Rc::downgrade(&self.guard);
        future_to_promise(async move {
            Ok(match loss.await {
                Some(reason) => JsValue::from_str(reason.as_str()),
                None if guard.upgrade().is_some_and(|g| g.released_by_close()) => JsValue::from_str("closed"),
                None => JsValue::NULL,
            })
        })
    }

    /// Releases the hold (decrements the hold count of a reentrant lock), at most once.
    /// Rejects with `NotOwnedError` (reason `deleted`, `taken`, `never_held`) or
    /// `LockLostError` (the loss was known before: its reason, or `expired`); with
    /// `RedisConnectionError` / `QuorumError` / `NoPermissionError` / `OutOfMemoryError` the
    /// hold stays (`held`) and `release()` may be called again. `scopeEnd` (the end of
    /// `using`, `await using`): nobody can call again, so a hold still held after the
    /// attempt is released by the core in the background while it is valid.
    pub fn release(&self, #[wasm_bindgen(js_name = scopeEnd)] scope_end: Option<bool>) -> Promise {
        let guard = self.guard.clone();
        future_to_promise(async move {
            if scope_end == Some(true) {
                guard.release_final().await.js()?;
            } else {
                guard.release().await.js()?;
            }
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost
    /// lock. Rejects with `NotOwnedError`/`LockLostError` when the hold is gone.
    pub fn extend(&self, lease_ms: f64) -> Promise {
        let lease = match options::lease(lease_ms) {
            Ok(lease) => lease,
            Err(e) => return Promise::reject(&e),
        };
        let guard = self.guard.clone();
        future_to_promise(async move {
            guard.extend(lease).await.js()?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resolves `true` while Redis still has this hold as ours.
    pub fn owned(&self) -> Promise {
        let guard = self.guard.clone();
        future_to_promise(async move { Ok(JsValue::from_bool(guard.owned().await.js()?)) })
    }
}

/// The core's refusal of `what` (`"release"`, `"extend"`) on a hold of lock `name` released
/// through its handle, as an `Error` to reject with: the adapter frees a released hold's
/// `WasmHeld` at once (js/src/engine.mjs) and answers later calls with this.
#[wasm_bindgen(js_name = holdRefusal)]
pub fn hold_refusal(what: &str, name: &str) -> JsValue {
    crate::error::to_js(&redlatch::Error::hold_refused(
        what,
        name,
        redlatch::Reason::NeverHeld,
    ))
}
