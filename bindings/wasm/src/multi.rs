//! [`WasmMultiLock`] and [`WasmMultiHeld`]: the core's multi-lock (Redisson
//! RedissonMultiLock) over members described by [`WasmLock`]s. The core multi-lock is made
//! per acquire, for the owner numbers the facade passes (its reentrant members get an owner
//! of that acquisition's own, or their explicit one); the core decides the order (sorted by
//! name), the one-script path and the rollback.

use crate::error::{invalid, IntoJs};
use crate::family::cancellable;
use crate::lock::{Spec, WasmLock};
use crate::options;
use js_sys::{Array, Promise};
use redlatch::protocol::timing::MAX_DURATION_MS;
use redlatch::{Client, MultiGuard};
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// The members and lease of a multi-lock.
#[wasm_bindgen]
pub struct WasmMultiLock {
    client: Client,
    members: Vec<Spec>,
    lease: Option<Duration>,
}

impl WasmMultiLock {
    /// Checks the set (empty, duplicate names) with the core's rules by building it once.
    pub(crate) fn new(
        client: Client,
        members: Vec<Spec>,
        lease: Option<Duration>,
    ) -> Result<WasmMultiLock, JsValue> {
        let multi = WasmMultiLock {
            client,
            members,
            lease,
        };
        multi.build(&vec![None; multi.members.len()])?;
        Ok(multi)
    }

    fn build(&self, owners: &[Option<u64>]) -> Result<redlatch::MultiLock, JsValue> {
        let locks = self
            .members
            .iter()
            .zip(owners)
            .map(|(m, o)| m.build(*o))
            .collect();
        let mut multi = self.client.multi_lock(locks).js()?;
        if let Some(lease) = self.lease {
            multi = multi.lease(lease);
        }
        Ok(multi)
    }
}

/// The specs of `locks` (copies: the JavaScript locks stay usable).
pub(crate) fn specs(locks: &[WasmLock]) -> Vec<Spec> {
    locks.iter().map(|l| l.spec().clone()).collect()
}

fn owner_numbers(owners: &Array, n: usize) -> Result<Vec<Option<u64>>, JsValue> {
    if owners.length() as usize != n {
        return Err(invalid("one owner (or null) per multi-lock member"));
    }
    owners
        .iter()
        .map(|o| match o.as_f64() {
            None => Ok(None),
            Some(v) if v.fract() == 0.0 && v >= 1.0 && v <= MAX_DURATION_MS as f64 => Ok(Some(v as u64)),
            Some(v) => Err(invalid(format!(
                "owner must be an integer from 1 to 2^53 - 1 (got {v})"
            ))),
        })
        .collect()
}

#[wasm_bindgen]
impl WasmMultiLock {
    /// Acquires every member or none, waiting `waitMs` for the whole set (`Infinity` =
    /// forever, 0 = one try); `owners`: one owner number (or `null`) per member, in the order
    /// given; `cancel` as for locks. Resolves to a [`WasmMultiHeld`].
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad wait or owners (nothing sent).
    pub fn acquire(
        &self,
        #[wasm_bindgen(js_name = waitMs)] wait_ms: f64,
        owners: Array,
        cancel: Option<Promise>,
    ) -> Result<Promise, JsValue> {
        let wait = options::wait(Some(wait_ms))?;
        let multi = self.build(&owner_numbers(&owners, self.members.len())?)?;
        Ok(future_to_promise(async move {
            let guard = cancellable(multi.acquire_with_wait(wait), cancel).await?;
            Ok(WasmMultiHeld {
                guard: Rc::new(guard),
            }
            .into())
        }))
    }
}

/// One multi-lock acquisition; garbage-collected without a release, its members with a fixed
/// lease are left to it, watchdog-renewed ones released in the background (as a `WasmHeld`).
#[wasm_bindgen]
pub struct WasmMultiHeld {
    guard: Rc<MultiGuard>,
}

impl Drop for WasmMultiHeld {
    fn drop(&mut self) {
        self.guard.leave_to_its_lease();
    }
}

#[wasm_bindgen]
impl WasmMultiHeld {
    /// The members' names in the order taken.
    #[wasm_bindgen(getter)]
    pub fn names(&self) -> Vec<String> {
        self.guard.names().into_iter().map(str::to_owned).collect()
    }

    /// `true` once any member is known lost.
    #[wasm_bindgen(getter)]
    pub fn lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// `true` when `client.close()` released a member still held
    /// (`MultiGuard::released_by_close`).
    #[wasm_bindgen(getter, js_name = closedByClient)]
    pub fn closed_by_client(&self) -> bool {
        self.guard.released_by_close()
    }

    /// `true` once no member is held (released, or lost).
    #[wasm_bindgen(getter)]
    pub fn ended(&self) -> bool {
        !self.guard.guards().iter().any(redlatch::Guard::is_held)
    }

    /// Releases every member still held (retryable for those whose release failed).
    /// `scopeEnd` (nobody can call again): a member whose outcome stays unknown goes on being
    /// released in the background (the core's `MultiGuard::release_final`).
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
}
