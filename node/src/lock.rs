//! `NativeLock`: a lock name with its options; `acquire` resolves to a `NativeHeld`.
//!
//! The handle keeps the options, not a core `Lock`, because a core `Lock` holds the client's
//! engine alive and `close()` must be able to let go of it. Reentrant locks take the owner
//! number from the caller: the facade decides who the owner is (lib/facade/owner.mjs), so
//! holds of one owner re-enter through any `rlock` handle of the client.

use crate::client::{Shared, Stop};
use crate::error::{closed, invalid, to_napi, IntoNapi};
use crate::held::{HoldSlot, NativeHeld};
use crate::options::{self, opt_millis, LockOptions};
use futures::future::{select, Either};
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

    /// Acquires the lock, waiting up to `waitMs` (`null` = forever; 0 = one try). `owner` is
    /// the reentrant owner number (`null` for lease locks). `ticket` identifies the attempt
    /// for `client.cancel(ticket)`.
    ///
    /// Rejects with `ERR_NOT_ACQUIRED` when the wait runs out, `ERR_INVALID_ARGUMENT` for a
    /// bad wait or owner, `ERR_CONNECTION` / `ERR_QUORUM` / `ERR_REDIS` when Redis fails or
    /// the client was closed meanwhile, and `ERR_NOT_ACQUIRED` ("aborted") when cancelled.
    #[napi(ts_args_type = "waitMs: number | null, owner: number | null, ticket: number")]
    pub async fn acquire(
        &self,
        wait_ms: Option<f64>,
        owner: Option<f64>,
        ticket: u32,
    ) -> napi::Result<NativeHeld> {
        let wait = opt_millis("waitMs", wait_ms, true)?;
        let lock = self.core(owner)?;
        let stop = self.shared.start_pending(ticket)?;
        let outcome = select(Box::pin(lock.acquire_with_wait(wait)), stop).await;
        self.shared.end_pending(ticket);
        let guard = match outcome {
            Either::Left((result, _)) => result.js()?,
            // Dropping the acquire future undoes it in the core (and unsubscribes).
            Either::Right((Ok(Stop::Aborted), _)) => return Err(aborted()),
            Either::Right((Ok(Stop::Closed) | Err(_), _)) => return Err(closed()),
        };
        let slot = Arc::new(HoldSlot::new(&self.shared, guard));
        if !self.shared.track(&slot) {
            slot.release_on_close().await;
            return Err(closed());
        }
        Ok(NativeHeld::new(slot))
    }

    /// `true` when anyone holds the lock (a majority of nodes in quorum mode).
    #[napi]
    pub async fn locked(&self) -> napi::Result<bool> {
        self.core(None)?.locked().await.js()
    }

    /// Remaining lease in ms of whoever holds the lock; `null` when free.
    #[napi]
    pub async fn ttl(&self) -> napi::Result<Option<f64>> {
        let ttl = self.core(None)?.ttl().await.js()?;
        Ok(ttl.map(|d| d.as_millis() as f64))
    }

    /// Reentrant locks: how many times `owner` holds it (asks Redis). Lease locks: 0.
    #[napi]
    pub async fn hold_count(&self, owner: Option<f64>) -> napi::Result<u32> {
        let lock = self.core(owner.filter(|_| self.reentrant))?;
        Ok(lock.hold_count().await.js()?.min(u64::from(u32::MAX)) as u32)
    }
}

/// The rejection of an acquire cancelled through its ticket (the facade rejects with the
/// AbortSignal's reason instead).
fn aborted() -> napi::Error {
    to_napi(Error::new(ErrorKind::NotAcquired, "aborted"))
}
