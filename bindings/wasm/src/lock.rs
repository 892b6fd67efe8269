//! `WasmLock`: a named lock handle; `acquire()` resolves to a [`WasmHeld`].
//!
//! Cancellation: `acquire(waitMs, owner, cancel)` takes an optional Promise. If it settles
//! before the lock is acquired, the core's acquire future is dropped (which undoes any grant
//! whose outcome is unknown, in the background) and the returned Promise rejects with the
//! value `cancel` settled with. The facade passes a Promise that resolves to an
//! `AbortSignal`'s reason, so an aborted acquire rejects with `signal.reason`.

use crate::error::{invalid, IntoJs};
use crate::held::WasmHeld;
use crate::options;
use futures::future::{select, Either};
use js_sys::Promise;
use redlatch::protocol::timing::MAX_DURATION_MS;
use redlatch::{Client, Lock};
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

/// The lock kinds as the facade's engine numbers them (`js/src/engine.mjs` `KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `client.lock`: lease lock.
    Lease,
    /// `client.rlock`: Redisson RLock.
    Reentrant,
    /// `client.fairLock`: Redisson RFairLock.
    Fair,
    /// `client.rwLock(name).read()`.
    Read,
    /// `client.rwLock(name).write()`.
    Write,
}

impl Kind {
    /// The kind numbered `kind`.
    ///
    /// # Errors
    /// `InvalidArgumentError` for an unknown number.
    pub fn from_js(kind: u32) -> Result<Kind, JsValue> {
        Ok(match kind {
            0 => Kind::Lease,
            1 => Kind::Reentrant,
            2 => Kind::Fair,
            3 => Kind::Read,
            4 => Kind::Write,
            _ => return Err(invalid(format!("unknown lock kind {kind}"))),
        })
    }
}

/// A lock's name, kind and options: the core lock is made per call, for the owner number
/// the facade passes (the read and write locks of one name and owner are one Redisson owner).
#[derive(Clone)]
pub(crate) struct Spec {
    pub(crate) client: Client,
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) lease: Option<Duration>,
    pub(crate) wait: Option<Duration>,
    pub(crate) fenced: bool,
    pub(crate) fence_ttl: Option<Duration>,
}

impl Spec {
    /// The core lock for owner number `owner` (reentrant kinds; `None`: a fresh owner).
    pub(crate) fn build(&self, owner: Option<u64>) -> Lock {
        let (client, name) = (&self.client, self.name.clone());
        let with_owner = |lock: Lock| match owner {
            Some(n) => lock.owner(n),
            None => lock,
        };
        let mut lock = match self.kind {
            Kind::Lease => with_owner(client.lock(name)),
            Kind::Reentrant => with_owner(client.rlock(name)),
            Kind::Fair => with_owner(client.fair_lock(name)),
            Kind::Read | Kind::Write => {
                let mut rw = client.rw_lock(name);
                if let Some(n) = owner {
                    rw = rw.owner(n);
                }
                if self.kind == Kind::Read {
                    rw.read()
                } else {
                    rw.write()
                }
            }
        };
        if let Some(lease) = self.lease {
            lock = lock.lease(lease);
        }
        if let Some(wait) = self.wait {
            lock = lock.wait(wait);
        }
        if self.fenced {
            lock = lock.fenced();
        }
        if let Some(ttl) = self.fence_ttl {
            lock = lock.fence_ttl(ttl);
        }
        lock
    }
}

/// A lock handle with its options. Each `acquire` is a separate hold.
#[wasm_bindgen]
pub struct WasmLock {
    spec: Spec,
}

impl WasmLock {
    pub(crate) fn new(spec: Spec) -> WasmLock {
        WasmLock { spec }
    }

    /// The core lock for owner number `owner` (reentrant kinds), checked.
    fn with_owner(&self, owner: Option<f64>) -> Result<Lock, JsValue> {
        match owner {
            None => Ok(self.spec.build(None)),
            Some(o) if o.fract() == 0.0 && o >= 1.0 && o <= MAX_DURATION_MS as f64 => {
                Ok(self.spec.build(Some(o as u64)))
            }
            Some(o) => Err(invalid(format!(
                "owner must be an integer from 1 to 2^53 - 1 (got {o})"
            ))),
        }
    }

    /// The lock's name, kind and options (multi-lock members).
    pub(crate) fn spec(&self) -> &Spec {
        &self.spec
    }
}

enum Wait {
    /// The lock's own wait (set by `client.lock(..., waitMs)`).
    Default,
    /// `None` = forever.
    Explicit(Option<Duration>),
}

#[wasm_bindgen]
impl WasmLock {
    /// The lock's name (its Redis key).
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.spec.name.clone()
    }

    /// A copy of this lock handle, for `WasmClient.multiLock` (which consumes its members).
    pub fn member(&self) -> WasmLock {
        WasmLock::new(self.spec.clone())
    }

    /// `true` for the reentrant kinds (all but lease locks).
    #[wasm_bindgen(getter)]
    pub fn reentrant(&self) -> bool {
        self.spec.kind != Kind::Lease
    }

    /// Acquires the lock. `waitMs`: absent = the lock's wait, `Infinity` = forever, 0 = one
    /// try. `owner`: reentrant locks only, the owner number (holds of one owner re-enter).
    /// `cancel`: see the module docs. Resolves to a `WasmHeld`; rejects with a
    /// `NotAcquiredError` when the wait runs out.
    ///
    /// # Errors
    /// Throws `InvalidArgumentError` for a bad wait or owner (before anything is sent).
    pub fn acquire(
        &self,
        wait_ms: Option<f64>,
        owner: Option<f64>,
        cancel: Option<Promise>,
    ) -> Result<Promise, JsValue> {
        let lock = self.with_owner(owner)?;
        let wait = match wait_ms {
            None => Wait::Default,
            Some(v) => Wait::Explicit(options::wait(Some(v))?),
        };
        Ok(future_to_promise(async move {
            let acquiring = Box::pin(async {
                match wait {
                    Wait::Default => lock.acquire().await,
                    Wait::Explicit(w) => lock.acquire_with_wait(w).await,
                }
            });
            let guard = match cancel {
                None => acquiring.await.js()?,
                Some(cancel) => match select(acquiring, JsFuture::from(cancel)).await {
                    Either::Left((result, _)) => result.js()?,
                    Either::Right((Ok(reason) | Err(reason), _)) => return Err(reason),
                },
            };
            Ok(WasmHeld::new(guard).into())
        }))
    }

    /// Resolves `true` when anyone holds the lock (a majority of nodes in quorum mode).
    pub fn locked(&self) -> Promise {
        let lock = self.spec.build(None);
        future_to_promise(async move { Ok(JsValue::from_bool(lock.locked().await.js()?)) })
    }

    /// Resolves to the remaining lease in ms of whoever holds the lock, or `null` when free.
    pub fn ttl(&self) -> Promise {
        let lock = self.spec.build(None);
        future_to_promise(async move {
            Ok(match lock.ttl().await.js()? {
                Some(d) => JsValue::from_f64(d.as_millis() as f64),
                None => JsValue::NULL,
            })
        })
    }

    /// Reentrant locks: resolves to how many holds owner number `owner` has (0 for lease
    /// locks).
    ///
    /// # Errors
    /// Throws `InvalidArgumentError` for a bad owner number.
    #[wasm_bindgen(js_name = holdCount)]
    pub fn hold_count(&self, owner: Option<f64>) -> Result<Promise, JsValue> {
        let lock = self.with_owner(owner)?;
        Ok(future_to_promise(async move {
            Ok(JsValue::from_f64(lock.hold_count().await.js()? as f64))
        }))
    }
}
