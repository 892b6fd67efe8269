//! `WasmHeld`: one acquisition (the core's [`Guard`]).
//!
//! The guard sits behind an `Rc` so `extend`/`owned` Promises can use it while the JS object
//! lives on; `release` takes it out (a second release is `NotOwned`). A `WasmHeld` that is
//! garbage-collected without a release (wasm-bindgen frees it through a
//! `FinalizationRegistry`) drops the guard, and the core releases the hold in the background.
//!
//! `ended()` resolves `true` when the hold is lost and `false` when it is released; it does
//! not keep the guard alive, so the facade can wire it to an `AbortSignal` for every hold
//! without preventing that garbage collection.

use crate::error::{not_owned, IntoJs};
use crate::options;
use js_sys::Promise;
use redlatch::Guard;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// One held acquisition.
#[wasm_bindgen]
pub struct WasmHeld {
    guard: RefCell<Option<Rc<Guard>>>,
    name: String,
    fence: Option<u64>,
    lease_ms: f64,
    /// Whether the hold was known lost when `release` took the guard out.
    lost_at_release: Cell<bool>,
}

impl WasmHeld {
    pub(crate) fn new(guard: Guard) -> WasmHeld {
        WasmHeld {
            name: guard.name().to_owned(),
            fence: guard.fencing_token(),
            lease_ms: guard.lease().as_millis() as f64,
            guard: RefCell::new(Some(Rc::new(guard))),
            lost_at_release: Cell::new(false),
        }
    }

    fn guard(&self, what: &str) -> Result<Rc<Guard>, JsValue> {
        self.guard.borrow().clone().ok_or_else(|| {
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
        match self.guard.borrow().as_ref() {
            Some(g) => g.is_lost(),
            None => self.lost_at_release.get(),
        }
    }

    /// `true` until `release` was called through this handle.
    #[wasm_bindgen(getter)]
    pub fn active(&self) -> bool {
        self.guard.borrow().is_some()
    }

    /// Resolves `true` when the hold is lost, `false` when it is released (never both).
    pub fn ended(&self) -> Promise {
        match self.guard.borrow().as_ref() {
            Some(g) => {
                let ended = g.ended();
                future_to_promise(async move { Ok(JsValue::from_bool(ended.await)) })
            }
            None => Promise::resolve(&JsValue::from_bool(self.lost_at_release.get())),
        }
    }

    /// Releases the hold. Rejects with `LockLostError` when it had been lost, `NotOwnedError`
    /// when it expired, was taken or was already released through this handle, and
    /// `RedisConnectionError`/`QuorumError` when Redis could not confirm.
    pub fn release(&self) -> Promise {
        let taken = self.guard.borrow_mut().take();
        let Some(mut guard) = taken else {
            return Promise::reject(&not_owned(format!(
                "cannot release lock {:?}: this hold was already released",
                self.name
            )));
        };
        self.lost_at_release.set(guard.is_lost());
        future_to_promise(async move {
            // An extend or ownership check in flight still holds a reference; the release
            // goes out after it (it is bounded by the network timeout).
            let guard = loop {
                match Rc::try_unwrap(guard) {
                    Ok(g) => break g,
                    Err(shared) => {
                        guard = shared;
                        crate::runtime::sleep(Duration::from_millis(1)).await;
                    }
                }
            };
            guard.release().await.js()?;
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
        let Some(guard) = self.guard.borrow().clone() else {
            return Promise::resolve(&JsValue::FALSE);
        };
        future_to_promise(async move { Ok(JsValue::from_bool(guard.owned().await.js()?)) })
    }
}
