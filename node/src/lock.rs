//! The lock operations of `NativeClient`: a lock is its name, kind and options, passed with
//! each call (the facade's engine keeps them), so no object is made per `client.lock(name)`.
//! The reentrant kinds (rlock, fair, read, write) take the owner number from the caller: the
//! facade decides who the owner is (lib/facade/owner.mjs), so holds of one owner re-enter
//! through any handle, and the read and write locks of one name and owner number are one
//! Redisson owner (the core appends `:write` to the writer's id).

use crate::calls::Value;
use crate::client::{NativeClient, Stop};
use crate::error::{closed, invalid, IntoNapi};
use crate::held::HoldSlot;
use crate::local::Scratch;
use crate::options::{self, opt_millis};
use futures::future::{select, Either};
use napi_derive::napi;
use redlatch::{Error, ErrorKind};
use std::sync::Arc;

/// The lock kinds as `lib/engine.mjs` numbers them (`KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Lease,
    Reentrant,
    Fair,
    Read,
    Write,
}

impl Kind {
    pub(crate) fn from_js(kind: u32) -> napi::Result<Kind> {
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

/// The core lock `name` of `kind` for `owner` (an owner number, checked; reentrant kinds
/// only): `None` keeps the core's fresh owner.
pub(crate) fn kind_lock(
    client: &redlatch::Client,
    name: &str,
    kind: Kind,
    owner: Option<f64>,
) -> napi::Result<redlatch::Lock> {
    let owner = owner.map(options::owner).transpose()?;
    let with_owner = |lock: redlatch::Lock| match owner {
        Some(n) => lock.owner(n),
        None => lock,
    };
    Ok(match kind {
        // The core refuses an owner on a lease lock (at check and acquire).
        Kind::Lease => with_owner(client.lock(name)),
        Kind::Reentrant => with_owner(client.rlock(name)),
        Kind::Fair => with_owner(client.fair_lock(name)),
        Kind::Read | Kind::Write => {
            let mut rw = client.rw_lock(name);
            if let Some(n) = owner {
                rw = rw.owner(n);
            }
            if kind == Kind::Read {
                rw.read()
            } else {
                rw.write()
            }
        }
    })
}

impl NativeClient {
    /// The core lock `name` of `kind` for `owner` (reentrant kinds only), from the facade's
    /// numbers (`fence`: `None` = not fenced, `Some(ttl)` = fenced, the counter key's TTL in
    /// ms or `None` to keep it). Converts them (integer ms); the core checks the name and
    /// options (`checkLock` when the lock is made, and again at each acquire).
    fn core(
        &self,
        name: &str,
        kind: u32,
        lease_ms: Option<f64>,
        fence: Option<Option<f64>>,
        owner: Option<f64>,
    ) -> napi::Result<redlatch::Lock> {
        let kind = Kind::from_js(kind)?;
        let lease = opt_millis("leaseMs", lease_ms, false)?;
        let fence_ttl = match fence {
            Some(ttl) => opt_millis("fenceTtlMs", ttl, false)?,
            None => None,
        };
        let client = self.shared.client()?;
        let mut lock = kind_lock(&client, name, kind, owner)?;
        if let Some(lease) = lease {
            lock = lock.lease(lease);
        }
        if fence.is_some() {
            lock = lock.fenced();
        }
        if let Some(ttl) = fence_ttl {
            lock = lock.fence_ttl(ttl);
        }
        Ok(lock)
    }
}

#[napi]
impl NativeClient {
    /// Checks a lock's name and options (`client.lock(name, options)` throws what this
    /// throws): `ERR_INVALID_ARGUMENT` for an empty or over-long name, a bad `leaseMs` /
    /// `waitMs` / `fenceTtlMs`, `fenced` on a quorum client; `ERR_CONNECTION` on a closed
    /// client. `fenceTtlMs` (fenced locks): the fencing counter key expires that many ms
    /// after the last fenced acquire (absent: it persists; see `Lock::fence_ttl` in the core
    /// for the hazard).
    #[napi]
    pub fn check_lock(
        &self,
        name: String,
        kind: u32,
        lease_ms: Option<f64>,
        wait_ms: Option<f64>,
        fenced: bool,
        fence_ttl_ms: Option<f64>,
    ) -> napi::Result<()> {
        let mut lock = self.core(&name, kind, lease_ms, fenced.then_some(fence_ttl_ms), None)?;
        if !fenced {
            // The core refuses a fence TTL without `fenced` (it would do nothing).
            if let Some(ttl) = opt_millis("fenceTtlMs", fence_ttl_ms, false)? {
                lock = lock.fence_ttl(ttl);
            }
        }
        if let Some(wait) = opt_millis("waitMs", wait_ms, true)? {
            lock = lock.wait(wait);
        }
        lock.check().js()
    }

    /// Acquires lock `name`, waiting up to `waitMs` (`null` = forever; 0 = one try), and
    /// settles call `id` with the hold. `owner` is the reentrant owner number (`null` for
    /// lease locks). `ticket` identifies the attempt for `cancel(ticket)`. `fenceTtlMs` as in
    /// `checkLock` (fenced locks only).
    ///
    /// Rejects with `ERR_NOT_ACQUIRED` when the wait runs out, `ERR_INVALID_ARGUMENT` for a
    /// bad wait or owner, `ERR_CONNECTION` / `ERR_QUORUM` / `ERR_REDIS` when Redis fails or
    /// the client was closed meanwhile, and `ERR_NOT_ACQUIRED` ("aborted") when cancelled.
    #[napi]
    #[allow(clippy::too_many_arguments)] // one call per acquire: no options object to read
    pub fn acquire(
        &self,
        name: String,
        kind: u32,
        lease_ms: Option<f64>,
        fenced: bool,
        fence_ttl_ms: Option<f64>,
        wait_ms: Option<f64>,
        owner: Option<f64>,
        ticket: u32,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let wait = opt_millis("waitMs", wait_ms, true)?;
        let fence = fenced.then_some(fence_ttl_ms);
        let lock = self.core(&name, kind, lease_ms, fence, owner)?;
        let stop = self.shared.start_pending(ticket)?;
        let shared = self.shared.clone();
        Ok(self.shared.driver.call(out, id, async move {
            let outcome = select(Box::pin(lock.acquire_with_wait(wait)), stop).await;
            shared.end_pending(ticket);
            let guard = match outcome {
                Either::Left((result, _)) => result?,
                // Dropping the acquire future undoes it in the core (and unsubscribes).
                Either::Right((Ok(Stop::Aborted), _)) => return Err(aborted()),
                Either::Right((Ok(Stop::Closed) | Err(_), _)) => return Err(closed_error()),
            };
            let slot = Arc::new(HoldSlot::new(guard));
            let (token, lease_ms) = (slot.fencing_token, slot.lease_ms);
            match shared.track(slot.clone()) {
                Some(hold) => Ok(Value::Hold {
                    id: hold as f64,
                    token,
                    lease_ms,
                }),
                None => {
                    slot.release_after_close().await;
                    Err(closed_error())
                }
            }
        }))
    }

    /// Settles call `id` with `true` when anyone holds lock `name` (a majority of nodes in
    /// quorum mode).
    #[napi]
    pub fn locked(&self, name: String, kind: u32, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let lock = self.core(&name, kind, None, None, None)?;
        Ok(self
            .shared
            .driver
            .call(out, id, async move { lock.locked().await.map(Value::Bool) }))
    }

    /// Settles call `id` with the remaining lease in ms of whoever holds lock `name`; `null`
    /// when free.
    #[napi]
    pub fn ttl(&self, name: String, kind: u32, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let lock = self.core(&name, kind, None, None, None)?;
        Ok(self.shared.driver.call(out, id, async move {
            let ttl = lock.ttl().await?;
            Ok(Value::MaybeNumber(ttl.map(|d| d.as_millis() as f64)))
        }))
    }

    /// Settles call `id` with how many times `owner` holds lock `name` of reentrant `kind`
    /// (asks Redis).
    #[napi]
    pub fn hold_count(
        &self,
        name: String,
        kind: u32,
        owner: f64,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let lock = self.core(&name, kind, None, None, Some(owner))?;
        Ok(self.shared.driver.call(out, id, async move {
            let n = lock.hold_count().await?;
            Ok(Value::Number(n.min(u64::from(u32::MAX)) as f64))
        }))
    }

    /// Admin: deletes lock `name` whatever its owner, waking its waiters; settles call `id`
    /// with `true` when a lock was deleted (on a majority of nodes). The core checks the name
    /// (`ERR_INVALID_ARGUMENT`).
    #[napi]
    pub fn force_unlock(&self, name: String, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let client = self.shared.client().map_err(|_| closed())?;
        Ok(self.shared.driver.call(out, id, async move {
            client.force_unlock(&name).await.map(Value::Bool)
        }))
    }
}

/// The rejection of an acquire cancelled through its ticket (the facade rejects with the
/// AbortSignal's reason instead).
pub(crate) fn aborted() -> Error {
    Error::new(ErrorKind::NotAcquired, "aborted")
}

/// The rejection of a call on a closed client.
pub(crate) fn closed_error() -> Error {
    Error::new(ErrorKind::Connection, "the client is closed")
}
