//! `NativeLock`: a lock name with its options; `acquire` resolves to a `NativeHeld`.
//!
//! The handle keeps the options, not a core `Lock`, because a core `Lock` holds the client's
//! engine alive and `close()` must be able to let go of it. Reentrant locks take the owner
//! number from the caller: the facade decides who the owner is (lib/facade/owner.mjs), so
//! holds of one owner re-enter through any `rlock` handle of the client.

use crate::calls::Value;
use crate::client::{Shared, Stop};
use crate::error::invalid;
use crate::held::{HoldSlot, NativeHeld};
use crate::local::Outs;
use crate::options::{self, opt_millis, LockOptions};
use futures::future::{select, Either};
use napi::Env;
use napi_derive::napi;
use redlatch::{Error, ErrorKind};
use std::sync::Arc;
use std::time::Duration;

/// A named lock handle (lease or reentrant); see `client.lock(name, options)`.
#[napi]
pub struct NativeLock {
    shared: Arc<Shared>,
    name: String,
    reentrant: bool,
    lease: Option<Duration>,
    fenced: bool,
}

impl NativeLock {
    pub(crate) fn new(shared: Arc<Shared>, name: String, options: LockOptions) -> napi::Result<Self> {
        let lease = opt_millis("leaseMs", options.lease_ms, false)?;
        // Checked now so that `client.lock()` throws; the facade passes the effective wait
        // to each `acquire`.
        opt_millis("waitMs", options.wait_ms, true)?;
        let fenced = options.fenced.unwrap_or(false);
        if fenced && shared.is_quorum() {
            return Err(invalid("fencing tokens are not offered in quorum mode"));
        }
        Ok(NativeLock {
            shared,
            name,
            reentrant: options.reentrant,
            lease,
            fenced,
        })
    }

    /// The core lock for `owner` (reentrant locks only).
    fn core(&self, owner: Option<f64>) -> napi::Result<redlatch::Lock> {
        let client = self.shared.client()?;
        let mut lock = if self.reentrant {
            let mut lock = client.rlock(self.name.as_str());
            if let Some(n) = owner {
                lock = lock.owner(options::owner(n)?);
            }
            lock
        } else {
            if owner.is_some() {
                return Err(invalid("owner applies to reentrant locks (rlock) only"));
            }
            client.lock(self.name.as_str())
        };
        if let Some(lease) = self.lease {
            lock = lock.lease(lease);
        }
        if self.fenced {
            lock = lock.fenced();
        }
        Ok(lock)
    }
}

#[napi]
impl NativeLock {
    /// The lock's name (its Redis key).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// `true` for reentrant locks.
    #[napi(getter)]
    pub fn reentrant(&self) -> bool {
        self.reentrant
    }

    /// Acquires the lock, waiting up to `waitMs` (`null` = forever; 0 = one try), and
    /// settles call `id` with the `NativeHeld`. `owner` is the reentrant owner number (`null`
    /// for lease locks). `ticket` identifies the attempt for `client.cancel(ticket)`.
    ///
    /// Rejects with `ERR_NOT_ACQUIRED` when the wait runs out, `ERR_INVALID_ARGUMENT` for a
    /// bad wait or owner, `ERR_CONNECTION` / `ERR_QUORUM` / `ERR_REDIS` when Redis fails or
    /// the client was closed meanwhile, and `ERR_NOT_ACQUIRED` ("aborted") when cancelled.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        owner: Option<f64>,
        ticket: u32,
        id: u32,
    ) -> napi::Result<Outs<'env>> {
        let wait = opt_millis("waitMs", wait_ms, true)?;
        let lock = self.core(owner)?;
        let stop = self.shared.start_pending(ticket)?;
        let shared = self.shared.clone();
        let driver = shared.driver.clone();
        driver.call(env, id, async move {
            let outcome = select(Box::pin(lock.acquire_with_wait(wait)), stop).await;
            shared.end_pending(ticket);
            let guard = match outcome {
                Either::Left((result, _)) => result?,
                // Dropping the acquire future undoes it in the core (and unsubscribes).
                Either::Right((Ok(Stop::Aborted), _)) => return Err(aborted()),
                Either::Right((Ok(Stop::Closed) | Err(_), _)) => return Err(closed_error()),
            };
            let slot = Arc::new(HoldSlot::new(&shared, guard));
            if !shared.track(&slot) {
                slot.release_on_close().await;
                return Err(closed_error());
            }
            Ok(Value::Held(NativeHeld::new(slot)))
        })
    }

    /// Settles call `id` with `true` when anyone holds the lock (a majority of nodes in
    /// quorum mode).
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn locked<'env>(&self, env: &'env Env, id: u32) -> napi::Result<Outs<'env>> {
        let lock = self.core(None)?;
        self.shared
            .driver
            .call(env, id, async move { lock.locked().await.map(Value::Bool) })
    }

    /// Settles call `id` with the remaining lease in ms of whoever holds the lock; `null`
    /// when free.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn ttl<'env>(&self, env: &'env Env, id: u32) -> napi::Result<Outs<'env>> {
        let lock = self.core(None)?;
        self.shared.driver.call(env, id, async move {
            let ttl = lock.ttl().await?;
            Ok(Value::MaybeNumber(ttl.map(|d| d.as_millis() as f64)))
        })
    }

    /// Reentrant locks: settles call `id` with how many times `owner` holds it (asks
    /// Redis). Lease locks: 0.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn hold_count<'env>(&self, env: &'env Env, owner: Option<f64>, id: u32) -> napi::Result<Outs<'env>> {
        let lock = self.core(owner.filter(|_| self.reentrant))?;
        self.shared.driver.call(env, id, async move {
            let n = lock.hold_count().await?;
            Ok(Value::Number(n.min(u64::from(u32::MAX)) as f64))
        })
    }
}

/// The rejection of an acquire cancelled through its ticket (the facade rejects with the
/// AbortSignal's reason instead).
fn aborted() -> Error {
    Error::new(ErrorKind::NotAcquired, "aborted")
}

/// The rejection of a call on a closed client.
pub(crate) fn closed_error() -> Error {
    Error::new(ErrorKind::Connection, "the client is closed")
}
