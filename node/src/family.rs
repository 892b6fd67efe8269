//! The counting kinds of the family: [`NativeSemaphore`] (Redisson RSemaphore; the handle
//! counts what it acquired, so it is an object of its own), [`NativePermitSemaphore`]
//! (RPermitExpirableSemaphore; its permits live in the client's permit table under numbers
//! JavaScript holds, as holds do: held.rs) and the count-down latch (RCountDownLatch, stateless:
//! `NativeClient` methods by name). Every call settles a call id as the lock calls do
//! (calls.rs); waits take a ticket for `cancel(ticket)` and stop on `close()`.

use crate::calls::Value;
use crate::client::{locked, NativeClient, Shared, Stop};
use crate::error::{invalid, IntoNapi};
use crate::local::Scratch;
use crate::lock::{aborted, closed_error};
use crate::options::opt_millis;
use futures::channel::oneshot;
use futures::future::{select, Either};
use napi_derive::napi;
use redlatch::protocol::keys;
use redlatch::{CountDownLatch, Error, Permit, PermitSemaphore, Reason, Semaphore};
use std::future::Future;
use std::sync::Arc;

/// A count from JavaScript: an integer in 1 ..= 2^31 - 1 (the core checks the range again).
fn count(what: &str, n: f64) -> napi::Result<u64> {
    if n.fract() != 0.0 || !(1.0..=f64::from(i32::MAX)).contains(&n) {
        return Err(invalid(format!(
            "{what} must be an integer from 1 to {} (got {n})",
            i32::MAX
        )));
    }
    Ok(n as u64)
}

/// Runs `wait` until it ends, or `stop` fires (cancel: `aborted`; close: `closed`). Dropping
/// the core's wait gives back what it may have taken.
pub(crate) async fn stoppable<T>(
    shared: &Shared,
    ticket: u32,
    stop: oneshot::Receiver<Stop>,
    wait: impl Future<Output = redlatch::Result<T>>,
) -> redlatch::Result<T> {
    let outcome = select(Box::pin(wait), stop).await;
    shared.end_pending(ticket);
    match outcome {
        Either::Left((result, _)) => result,
        Either::Right((Ok(Stop::Aborted), _)) => Err(aborted()),
        Either::Right((Ok(Stop::Closed) | Err(_), _)) => Err(closed_error()),
    }
}

/// A semaphore handle (`client.semaphore(name)`): counts the permits it acquired.
#[napi]
pub struct NativeSemaphore {
    shared: Arc<Shared>,
    sem: Semaphore,
}

#[napi]
impl NativeSemaphore {
    /// Permits this handle acquired and did not release.
    #[napi(getter)]
    pub fn held(&self) -> f64 {
        self.sem.held() as f64
    }

    /// Sets the permits if none are set; settles call `id` with `true` when it did.
    #[napi]
    pub fn try_set_permits(&self, permits: f64, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        self.shared.client()?;
        Ok(self.shared.driver.call(
            out,
            id,
            async move { sem.try_set_permits(n).await.map(Value::Bool) },
        ))
    }

    /// Acquires `permits`, waiting up to `waitMs` (`null` = forever, 0 = one try).
    #[napi]
    pub fn acquire(
        &self,
        permits: f64,
        wait_ms: Option<f64>,
        ticket: u32,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        let wait = opt_millis("waitMs", wait_ms, true)?;
        let stop = self.shared.start_pending(ticket)?;
        let shared = self.shared.clone();
        Ok(self.shared.driver.call(out, id, async move {
            stoppable(&shared, ticket, stop, sem.acquire_with_wait(n, wait))
                .await
                .map(|()| Value::Unit)
        }))
    }

    /// One try: settles call `id` with `true` when `permits` were acquired.
    #[napi]
    pub fn try_acquire(&self, permits: f64, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        self.shared.client()?;
        Ok(self
            .shared
            .driver
            .call(out, id, async move { sem.try_acquire(n).await.map(Value::Bool) }))
    }

    /// Gives back `permits` of those this handle holds (`ERR_NOT_OWNED` beyond that).
    /// `scope_end` (the end of `using(fn)`): an outcome that stays unknown is settled in the
    /// background and the permits leave the handle's count (the core's
    /// `Semaphore::release_final`).
    #[napi]
    pub fn release(
        &self,
        permits: f64,
        scope_end: bool,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        self.shared.client()?;
        Ok(self.shared.driver.call(out, id, async move {
            if scope_end {
                sem.release_final(n).await
            } else {
                sem.release(n).await
            }
            .map(|()| Value::Unit)
        }))
    }

    /// Settles call `id` with the permits available.
    #[napi]
    pub fn available(&self, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let sem = self.sem.clone();
        self.shared.client()?;
        Ok(self.shared.driver.call(out, id, async move {
            sem.available().await.map(|n| Value::Number(n as f64))
        }))
    }
}

/// A permit-expirable semaphore handle (`client.permitSemaphore(name)`).
#[napi]
pub struct NativePermitSemaphore {
    shared: Arc<Shared>,
    sem: PermitSemaphore,
}

/// A permit in the client's table: taken out by its release.
pub(crate) type PermitSlot = std::sync::Mutex<Option<Arc<Permit>>>;

impl NativePermitSemaphore {
    /// Puts `permit` in the table: `Value::Hold { id: table number, token: None, lease }`.
    fn park(shared: &Shared, permit: Permit) -> redlatch::Result<Value> {
        let lease_ms = permit.lease().as_millis() as f64;
        match shared.track_permit(permit) {
            Some(n) => Ok(Value::Hold {
                id: n as f64,
                token: None,
                lease_ms,
            }),
            None => Err(closed_error()),
        }
    }
}

#[napi]
impl NativePermitSemaphore {
    /// Sets the permits if none are set; settles call `id` with `true` when it did.
    #[napi]
    pub fn try_set_permits(&self, permits: f64, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let (sem, n) = (self.sem.clone(), count("permits", permits)?);
        self.shared.client()?;
        Ok(self.shared.driver.call(
            out,
            id,
            async move { sem.try_set_permits(n).await.map(Value::Bool) },
        ))
    }

    /// Acquires one permit with `leaseMs` (`null`: renewed by the watchdog), waiting up to
    /// `waitMs`; settles call `id` with the permit's number in the client's table.
    #[napi]
    pub fn acquire(
        &self,
        lease_ms: Option<f64>,
        wait_ms: Option<f64>,
        ticket: u32,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let lease = opt_millis("leaseMs", lease_ms, false)?;
        let wait = opt_millis("waitMs", wait_ms, true)?;
        let stop = self.shared.start_pending(ticket)?;
        let (sem, shared) = (self.sem.clone(), self.shared.clone());
        Ok(self.shared.driver.call(out, id, async move {
            let permit = stoppable(&shared, ticket, stop, sem.acquire_with_wait(lease, wait)).await?;
            Self::park(&shared, permit)
        }))
    }

    /// One try: settles call `id` with the permit's number, or `null` when none is available.
    #[napi]
    pub fn try_acquire(
        &self,
        lease_ms: Option<f64>,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let lease = opt_millis("leaseMs", lease_ms, false)?;
        self.shared.client()?;
        let (sem, shared) = (self.sem.clone(), self.shared.clone());
        Ok(self.shared.driver.call(out, id, async move {
            match sem.try_acquire(lease).await? {
                Some(permit) => Self::park(&shared, permit),
                None => Ok(Value::MaybeNumber(None)),
            }
        }))
    }

    /// Releases the permit with id `permitId` (from any client).
    #[napi]
    pub fn release(&self, permit_id: String, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let sem = self.sem.clone();
        self.shared.client()?;
        Ok(self.shared.driver.call(out, id, async move {
            sem.release(&permit_id).await.map(|()| Value::Unit)
        }))
    }

    /// Settles call `id` with the permits available.
    #[napi]
    pub fn available(&self, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let sem = self.sem.clone();
        self.shared.client()?;
        Ok(self.shared.driver.call(out, id, async move {
            sem.available().await.map(|n| Value::Number(n as f64))
        }))
    }
}

#[napi]
impl NativeClient {
    /// A semaphore handle on key `name`; `permits`: its `initial_permits` (set by its first
    /// acquire or `available` if the semaphore has no count yet). Throws
    /// `ERR_INVALID_ARGUMENT` for a bad name, `ERR_CONNECTION` on a closed client.
    #[napi]
    pub fn semaphore(&self, name: String, permits: Option<u32>) -> napi::Result<NativeSemaphore> {
        keys::validate_name(&name).js()?;
        let sem = self.shared.client()?.semaphore(name);
        let sem = match permits {
            Some(n) => sem.initial_permits(n.into()),
            None => sem,
        };
        Ok(NativeSemaphore {
            shared: self.shared.clone(),
            sem,
        })
    }

    /// A permit-expirable semaphore handle on key `name`; `permits` as for `semaphore`.
    #[napi]
    pub fn permit_semaphore(
        &self,
        name: String,
        permits: Option<u32>,
    ) -> napi::Result<NativePermitSemaphore> {
        keys::validate_name(&name).js()?;
        let sem = self.shared.client()?.permit_semaphore(name);
        let sem = match permits {
            Some(n) => sem.initial_permits(n.into()),
            None => sem,
        };
        Ok(NativePermitSemaphore {
            shared: self.shared.clone(),
            sem,
        })
    }

    /// The id of permit `permit` (32 lower-case hex digits), `renewed`, `ended` (the core's
    /// `Permit::is_released`), `lost` (`Permit::is_lost`) and `closed`
    /// (`Permit::released_by_close`): the string
    /// `"<id>:<renewed 0|1>:<ended 0|1>:<lost 0|1>:<closed 0|1>"`; `ended` also for a number
    /// not in the table.
    #[napi]
    pub fn permit_state(&self, permit: f64) -> String {
        match self.shared.permit(permit).and_then(|slot| locked(&slot).clone()) {
            Some(p) => format!(
                "{}:{}:{}:{}:{}",
                p.id(),
                u8::from(p.is_renewed()),
                u8::from(p.is_released()),
                u8::from(p.is_lost()),
                u8::from(p.released_by_close())
            ),
            None if locked(&self.shared.released_by_close).contains(&(permit as u64)) => {
                String::from("::1:0:1")
            }
            None => String::from("::1:0:0"),
        }
    }

    /// Releases permit `permit` at most once; settles call `id`. A failure of Redis leaves
    /// it releasable (call again). `scope_end` (the end of `await using` or `using(fn)`:
    /// nobody can call again): the table forgets the permit at once, and an outcome that
    /// stays unknown goes on in the background (the core's `Permit::release_final`).
    #[napi]
    pub fn permit_release(
        &self,
        permit: f64,
        scope_end: bool,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let slot = self.shared.permit(permit);
        let closed = self.shared.is_closed();
        if scope_end {
            let p = slot.as_ref().and_then(|s| locked(s).take());
            return Ok(self.shared.driver.call(out, id, async move {
                match p {
                    Some(p) => p.release_final().await.map(|()| Value::Unit),
                    None => Err(released_or_closed(closed)),
                }
            }));
        }
        // A permit released stays in the table (until its object is collected), so a second
        // release gets the core's answer, as in the wasm entry (the semaphore's name in it).
        Ok(self.shared.driver.call(out, id, async move {
            let Some(p) = slot.as_ref().and_then(|s| locked(s).clone()) else {
                return Err(released_or_closed(closed));
            };
            p.release().await.map(|()| Value::Unit)
        }))
    }

    /// Forgets permit `permit` (its JavaScript object was garbage-collected): a permit never
    /// released is released in the background (the core's `Permit` drop).
    #[napi]
    pub fn drop_permit(&self, permit: f64) {
        let slot = locked(&self.shared.permits).remove(&(permit as u64));
        drop(slot);
    }

    /// Sets latch `name`'s count if none is set; settles call `id` with `true` when it did.
    #[napi]
    pub fn latch_try_set_count(
        &self,
        name: String,
        n: f64,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let (latch, n) = (self.latch(name)?, count("count", n)?);
        Ok(self.shared.driver.call(
            out,
            id,
            async move { latch.try_set_count(n).await.map(Value::Bool) },
        ))
    }

    /// Counts latch `name` down (it opens at zero).
    #[napi]
    pub fn latch_count_down(&self, name: String, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let latch = self.latch(name)?;
        Ok(self.shared.driver.call(
            out,
            id,
            async move { latch.count_down().await.map(|()| Value::Unit) },
        ))
    }

    /// Settles call `id` with latch `name`'s count.
    #[napi]
    pub fn latch_count(&self, name: String, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let latch = self.latch(name)?;
        Ok(self.shared.driver.call(out, id, async move {
            latch.count().await.map(|n| Value::Number(n as f64))
        }))
    }

    /// Waits until latch `name` is open (`true`) or `timeoutMs` ran out (`false`; `null`: no
    /// limit, 0: one look).
    #[napi]
    pub fn latch_wait(
        &self,
        name: String,
        timeout_ms: Option<f64>,
        ticket: u32,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let latch = self.latch(name)?;
        let timeout = opt_millis("timeoutMs", timeout_ms, true)?;
        let stop = self.shared.start_pending(ticket)?;
        let shared = self.shared.clone();
        Ok(self.shared.driver.call(out, id, async move {
            stoppable(&shared, ticket, stop, latch.wait(timeout))
                .await
                .map(Value::Bool)
        }))
    }
}

impl NativeClient {
    fn latch(&self, name: String) -> napi::Result<CountDownLatch> {
        keys::validate_name(&name).js()?;
        Ok(self.shared.client()?.count_down_latch(name))
    }
}

/// Why a permit is not in the client's table: released before, or by `close()`.
fn released_or_closed(closed: bool) -> Error {
    if closed {
        return closed_error();
    }
    Error::not_owned(false, Reason::NeverHeld, "this permit was already released")
}
