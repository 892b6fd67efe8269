//! The counting kinds of the family over the core: [`WasmSemaphore`] (Redisson RSemaphore),
//! [`WasmPermitSemaphore`] and [`WasmPermit`] (RPermitExpirableSemaphore), [`WasmLatch`]
//! (RCountDownLatch). Each method is the core call as a Promise; waits take the cancel
//! Promise of [`crate::lock`] (the core's wait is dropped when it settles first, which gives
//! back anything taken in flight).

use crate::error::{invalid, IntoJs};
use crate::options;
use futures::future::{select, Either};
use js_sys::Promise;
use redlatch::{CountDownLatch, Permit, PermitSemaphore, Semaphore};
use std::future::Future;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

/// A count from JavaScript: an integer in 1 ..= 2^31 - 1 (the core checks the range again).
fn count(what: &str, n: f64) -> Result<u64, JsValue> {
    if n.fract() != 0.0 || !(1.0..=f64::from(i32::MAX)).contains(&n) {
        return Err(invalid(format!(
            "{what} must be an integer from 1 to {} (got {n})",
            i32::MAX
        )));
    }
    Ok(n as u64)
}

/// Runs `wait` unless `cancel` settles first (then rejects with what it settled with).
pub(crate) async fn cancellable<T>(
    wait: impl Future<Output = redlatch::Result<T>>,
    cancel: Option<Promise>,
) -> Result<T, JsValue> {
    let wait = Box::pin(wait);
    match cancel {
        None => wait.await.js(),
        Some(cancel) => match select(wait, JsFuture::from(cancel)).await {
            Either::Left((result, _)) => result.js(),
            Either::Right((Ok(reason) | Err(reason), _)) => Err(reason),
        },
    }
}

/// A semaphore handle; it counts the permits it acquired (`held`).
#[wasm_bindgen]
pub struct WasmSemaphore {
    sem: Semaphore,
}

impl WasmSemaphore {
    pub(crate) fn new(sem: Semaphore) -> WasmSemaphore {
        WasmSemaphore { sem }
    }
}

#[wasm_bindgen]
impl WasmSemaphore {
    /// Permits this handle acquired and did not release.
    #[wasm_bindgen(getter)]
    pub fn held(&self) -> f64 {
        self.sem.held() as f64
    }

    /// Sets the permits if none are set; resolves `true` when it did.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad count (nothing sent).
    #[wasm_bindgen(js_name = trySetPermits)]
    pub fn try_set_permits(&self, permits: f64) -> Result<Promise, JsValue> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        Ok(future_to_promise(async move {
            Ok(JsValue::from_bool(sem.try_set_permits(n).await.js()?))
        }))
    }

    /// Acquires `permits`, waiting `waitMs` (`Infinity` = forever, 0 = one try); `cancel` as
    /// for locks.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad count or wait (nothing sent).
    pub fn acquire(
        &self,
        permits: f64,
        #[wasm_bindgen(js_name = waitMs)] wait_ms: f64,
        cancel: Option<Promise>,
    ) -> Result<Promise, JsValue> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        let wait = options::wait(Some(wait_ms))?;
        Ok(future_to_promise(async move {
            cancellable(sem.acquire_with_wait(n, wait), cancel).await?;
            Ok(JsValue::UNDEFINED)
        }))
    }

    /// One try: resolves `true` when `permits` were acquired.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad count.
    #[wasm_bindgen(js_name = tryAcquire)]
    pub fn try_acquire(&self, permits: f64) -> Result<Promise, JsValue> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        Ok(future_to_promise(async move {
            Ok(JsValue::from_bool(sem.try_acquire(n).await.js()?))
        }))
    }

    /// Gives back `permits` of those this handle holds (`NotOwnedError` beyond that).
    /// `scopeEnd` (the end of `using(fn)`): an outcome that stays unknown is settled in the
    /// background and the permits leave the handle's count (the core's
    /// `Semaphore::release_final`).
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad count.
    pub fn release(
        &self,
        permits: f64,
        #[wasm_bindgen(js_name = scopeEnd)] scope_end: Option<bool>,
    ) -> Result<Promise, JsValue> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        Ok(future_to_promise(async move {
            if scope_end == Some(true) {
                sem.release_final(n).await.js()?;
            } else {
                sem.release(n).await.js()?;
            }
            Ok(JsValue::UNDEFINED)
        }))
    }

    /// Resolves to the permits available.
    pub fn available(&self) -> Promise {
        let sem = self.sem.clone();
        future_to_promise(async move { Ok(JsValue::from_f64(sem.available().await.js()? as f64)) })
    }
}

/// A permit-expirable semaphore handle.
#[wasm_bindgen]
pub struct WasmPermitSemaphore {
    sem: PermitSemaphore,
}

impl WasmPermitSemaphore {
    pub(crate) fn new(sem: PermitSemaphore) -> WasmPermitSemaphore {
        WasmPermitSemaphore { sem }
    }
}

fn lease(lease_ms: Option<f64>) -> Result<Option<std::time::Duration>, JsValue> {
    lease_ms.map(options::lease).transpose()
}

#[wasm_bindgen]
impl WasmPermitSemaphore {
    /// Sets the permits if none are set; resolves `true` when it did.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad count.
    #[wasm_bindgen(js_name = trySetPermits)]
    pub fn try_set_permits(&self, permits: f64) -> Result<Promise, JsValue> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        Ok(future_to_promise(async move {
            Ok(JsValue::from_bool(sem.try_set_permits(n).await.js()?))
        }))
    }

    /// Acquires one permit with `leaseMs` (absent: watchdog renewal while the permit is not
    /// released), waiting `waitMs`; resolves to a [`WasmPermit`].
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad lease or wait.
    pub fn acquire(
        &self,
        #[wasm_bindgen(js_name = leaseMs)] lease_ms: Option<f64>,
        #[wasm_bindgen(js_name = waitMs)] wait_ms: f64,
        cancel: Option<Promise>,
    ) -> Result<Promise, JsValue> {
        let sem = self.sem.clone();
        let (lease, wait) = (lease(lease_ms)?, options::wait(Some(wait_ms))?);
        Ok(future_to_promise(async move {
            let permit = cancellable(sem.acquire_with_wait(lease, wait), cancel).await?;
            Ok(WasmPermit::new(permit).into())
        }))
    }

    /// One try: resolves to a [`WasmPermit`] or `null`.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad lease.
    #[wasm_bindgen(js_name = tryAcquire)]
    pub fn try_acquire(
        &self,
        #[wasm_bindgen(js_name = leaseMs)] lease_ms: Option<f64>,
    ) -> Result<Promise, JsValue> {
        let (sem, lease) = (self.sem.clone(), lease(lease_ms)?);
        Ok(future_to_promise(async move {
            Ok(match sem.try_acquire(lease).await.js()? {
                Some(p) => WasmPermit::new(p).into(),
                None => JsValue::NULL,
            })
        }))
    }

    /// Releases the permit with id `id` (`NotOwnedError` for an unknown or expired id).
    pub fn release(&self, id: String) -> Promise {
        let sem = self.sem.clone();
        future_to_promise(async move {
            sem.release(&id).await.js()?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resolves to the permits available.
    pub fn available(&self) -> Promise {
        let sem = self.sem.clone();
        future_to_promise(async move { Ok(JsValue::from_f64(sem.available().await.js()? as f64)) })
    }
}

/// One permit held; garbage-collected without a release, it is released in the background.
#[wasm_bindgen]
pub struct WasmPermit {
    permit: Rc<Permit>,
    ended: Rc<std::cell::Cell<bool>>,
}

impl WasmPermit {
    fn new(permit: Permit) -> WasmPermit {
        WasmPermit {
            permit: Rc::new(permit),
            ended: Rc::default(),
        }
    }
}

#[wasm_bindgen]
impl WasmPermit {
    /// The permit id (32 lower-case hex digits).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.permit.id().to_owned()
    }

    /// The lease in ms (the watchdog timeout when renewed).
    #[wasm_bindgen(getter, js_name = leaseMs)]
    pub fn lease_ms(&self) -> f64 {
        self.permit.lease().as_millis() as f64
    }

    /// `true` when the watchdog renews it.
    #[wasm_bindgen(getter)]
    pub fn renewed(&self) -> bool {
        self.permit.is_renewed()
    }

    /// `true` once it is known no longer held (the core's `Permit::is_lost`).
    #[wasm_bindgen(getter)]
    pub fn lost(&self) -> bool {
        self.permit.is_lost()
    }

    /// `true` when `client.close()` released it while held (`Permit::released_by_close`).
    #[wasm_bindgen(getter, js_name = closedByClient)]
    pub fn closed_by_client(&self) -> bool {
        self.permit.released_by_close()
    }

    /// `true` once a release settled it (released, or found no longer held).
    #[wasm_bindgen(getter)]
    pub fn ended(&self) -> bool {
        self.ended.get()
    }

    /// Gives the permit back, at most once. `scopeEnd` (the end of `await using` or
    /// `using(fn)`: nobody can call again): an outcome that stays unknown goes on in the
    /// background (the core's `Permit::release_final`).
    pub fn release(&self, #[wasm_bindgen(js_name = scopeEnd)] scope_end: Option<bool>) -> Promise {
        let (permit, ended) = (self.permit.clone(), self.ended.clone());
        let scope_end = scope_end == Some(true);
        future_to_promise(async move {
            let result = if scope_end {
                permit.release_final().await
            } else {
                permit.release().await
            };
            // Settled (released, or found not held); after a failure of Redis it stays
            // releasable, unless the scope ended (then the core goes on in the background).
            if scope_end || !matches!(&result, Err(e) if !e.kind().is_not_owned()) {
                ended.set(true);
            }
            result.js()?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

/// A count-down latch handle.
#[wasm_bindgen]
pub struct WasmLatch {
    latch: CountDownLatch,
}

impl WasmLatch {
    pub(crate) fn new(latch: CountDownLatch) -> WasmLatch {
        WasmLatch { latch }
    }
}

#[wasm_bindgen]
impl WasmLatch {
    /// Sets the count if no latch is set; resolves `true` when it did.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad count.
    #[wasm_bindgen(js_name = trySetCount)]
    pub fn try_set_count(&self, n: f64) -> Result<Promise, JsValue> {
        let (latch, n) = (self.latch.clone(), count("count", n)?);
        Ok(future_to_promise(async move {
            Ok(JsValue::from_bool(latch.try_set_count(n).await.js()?))
        }))
    }

    /// Decrements the count (opens the latch at zero).
    #[wasm_bindgen(js_name = countDown)]
    pub fn count_down(&self) -> Promise {
        let latch = self.latch.clone();
        future_to_promise(async move {
            latch.count_down().await.js()?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Resolves to the count.
    pub fn count(&self) -> Promise {
        let latch = self.latch.clone();
        future_to_promise(async move { Ok(JsValue::from_f64(latch.count().await.js()? as f64)) })
    }

    /// Waits until the count is zero (`true`) or `timeoutMs` ran out (`false`; `Infinity` =
    /// no limit, 0 = one look); `cancel` as for locks.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad timeout.
    pub fn wait(
        &self,
        #[wasm_bindgen(js_name = timeoutMs)] timeout_ms: f64,
        cancel: Option<Promise>,
    ) -> Result<Promise, JsValue> {
        let latch = self.latch.clone();
        let timeout = options::wait(Some(timeout_ms))?;
        Ok(future_to_promise(async move {
            Ok(JsValue::from_bool(
                cancellable(latch.wait(timeout), cancel).await?,
            ))
        }))
    }
}
