//! `WasmHeld`: one acquisition (the core's [`Guard`]).
//!
//! The guard sits in a shared slot (`Rc<RefCell<Option<Rc<Guard>>>>`) so `extend`/`owned`
//! Promises can use it while the JS object lives on, and a `release` Promise can take it out
//! once the release is settled (released, or found not ours). A release whose outcome is
//! unknown (a connection error, a timeout) leaves it in the slot, held, so `release()` may be
//! called again (the core makes the retry exact). A scope's release (`scopeEnd`) takes it out
//! whatever the outcome: the dropped guard keeps trying in the background while it is valid.
//! A `WasmHeld` that is garbage-collected without a release (wasm-bindgen frees it through a
//! `FinalizationRegistry`) drops the guard, and the core releases the hold in the background.
//!
//! `loss()` resolves to the loss reason (`"expired"`, `"taken"`, `"deleted"`) when the hold
//! is lost and to `null` when it is released; it does not keep the guard alive, so the facade
//! can wire it to an `AbortSignal` for every hold without preventing that garbage collection.

use crate::error::{not_owned, IntoJs};
use crate::options;
use js_sys::Promise;
use redlatch::Guard;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

type Slot = Rc<RefCell<Option<Rc<Guard>>>>;

/// One held acquisition.
#[wasm_bindgen]
pub struct WasmHeld {
    slot: Slot,
    name: String,
    fence: Option<u64>,
    lease_ms: f64,
    /// Whether the hold was known lost when its guard left the slot.
    lost_at_release: Rc<Cell<bool>>,
}

impl WasmHeld {
    pub(crate) fn new(guard: Guard) -> WasmHeld {
        WasmHeld {
            name: guard.name().to_owned(),
            fence: guard.fencing_token(),
            lease_ms: guard.lease().as_millis() as f64,
            slot: Rc::new(RefCell::new(Some(Rc::new(guard)))),
            lost_at_release: Rc::default(),
        }
    }

    fn guard(&self, what: &str) -> Result<Rc<Guard>, JsValue> {
        self.slot.borrow().clone().ok_or_else(|| {
            not_owned(format!(
                "cannot {what} lock {:?}: this hold was already released",
                self.name
            ))
        })
    }
}

#[wasm_bindgen]
impl WasmHeld {
    /// The lock's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The fencing token (fenced locks), else `null`.
    #[wasm_bindgen(getter, js_name = fencingToken)]
    pub fn fencing_token(&self) -> Option<f64> {
        self.fence.map(|t| t as f64)
    }

    /// The lease in ms this hold was acquired with (the watchdog timeout in watchdog mode).
    #[wasm_bindgen(getter, js_name = leaseMs)]
    pub fn lease_ms(&self) -> f64 {
        self.lease_ms
    }

    /// `true` once the hold is known lost.
    #[wasm_bindgen(getter)]
    pub fn lost(&self) -> bool {
        match self.slot.borrow().as_ref() {
            Some(g) => g.is_lost(),
            None => self.lost_at_release.get(),
        }
    }

    /// Why the hold was lost (`"expired"`, `"taken"`, `"deleted"`) once it is known lost;
    /// `undefined` before, and after a release.
    #[wasm_bindgen(getter, js_name = lostReason)]
    pub fn lost_reason(&self) -> Option<String> {
        let slot = self.slot.borrow();
        slot.as_ref()
            .and_then(|g| g.lost_reason())
            .map(|r| r.as_str().to_owned())
    }

    /// `true` while the hold is still held as far as this client knows: not released, not
    /// lost (a release whose outcome was unknown leaves it held).
    #[wasm_bindgen(getter)]
    pub fn held(&self) -> bool {
        self.slot.borrow().as_ref().is_some_and(|g| g.is_held())
    }

    /// Resolves to the loss reason (`"expired"`, `"taken"`, `"deleted"`) when the hold is
    /// lost, `null` when it is released (never both).
    pub fn loss(&self) -> Promise {
        match self.slot.borrow().as_ref() {
            Some(g) => {
                let loss = g.loss();
                future_to_promise(async move {
                    Ok(match loss.await {
                        Some(reason) => JsValue::from_str(reason.as_str()),
                        None => JsValue::NULL,
                    })
                })
            }
            None => Promise::resolve(&JsValue::NULL),
        }
    }

    /// Releases the hold (decrements the hold count of a reentrant lock), at most once.
    /// Rejects with `NotOwnedError` (reason `deleted`, `taken`, `never_held`) or
    /// `LockLostError` (the loss was known before: its reason, or `expired`); with
    /// `RedisConnectionError` / `QuorumError` / `NoPermissionError` / `OutOfMemoryError` the
    /// hold stays (`held`) and `release()` may be called again. `scopeEnd` (the end of
    /// `using`, `await using`): nobody can call again, so a hold still held after the
    /// attempt is handed to the core, which retries in the background while it is valid.
    pub fn release(&self, #[wasm_bindgen(js_name = scopeEnd)] scope_end: Option<bool>) -> Promise {
        let guard = match self.guard("release") {
            Ok(g) => g,
            Err(e) => return Promise::reject(&e),
        };
        let slot = self.slot.clone();
        let lost_at_release = self.lost_at_release.clone();
        future_to_promise(async move {
            let result = guard.release().await;
            if !guard.is_held() || scope_end == Some(true) {
                lost_at_release.set(guard.is_lost());
                let mut slot = slot.borrow_mut();
                if slot.as_ref().is_some_and(|g| Rc::ptr_eq(g, &guard)) {
                    // Dropped with the last reference: a guard still held is released in the
                    // background by the core.
                    slot.take();
                }
            }
            drop(guard);
            result.js()?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost
    /// lock. Rejects with `NotOwnedError`/`LockLostError` when the hold is gone.
    pub fn extend(&self, lease_ms: f64) -> Promise {
        let checked = options::lease(lease_ms).and_then(|lease| Ok((lease, self.guard("extend")?)));
        let (lease, guard) = match checked {
            Ok(v) => v,
            Err(e) => return Promise::reject(&e),
        };
        future_to_promise(async move {
            guard.extend(lease).await.js()?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resolves `true` while Redis still has this hold as ours.
    pub fn owned(&self) -> Promise {
        let Some(guard) = self.slot.borrow().clone() else {
            return Promise::resolve(&JsValue::FALSE);
        };
        future_to_promise(async move { Ok(JsValue::from_bool(guard.owned().await.js()?)) })
    }
}
