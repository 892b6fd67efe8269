//! Holds: one acquisition each, kept in its client's table under a number JavaScript holds
//! (client.rs), with release, extend, the loss watcher and the state queries as
//! `NativeClient` methods taking that number.
//!
//! The core guard sits behind an async `RwLock<Option<Guard>>`: `extend` and `owned` read it
//! across their await, `release` takes it out once settled (after in-flight extends finish), and `close()`
//! does the same for every hold still alive. The entry stays in the table after a release,
//! so a second release says "already released"; `dropHold` removes it when the JavaScript
//! object is garbage-collected, and a guard still inside is dropped, which the core releases
//! in the background.
//!
//! A release whose outcome is unknown (a connection error) leaves the guard in its slot, held,
//! so `release()` may be called again; once settled it is taken out. A scope's release
//! (`scopeEnd`) takes it out whatever the outcome: the dropped guard keeps trying in the
//! background.
//!
//! Loss reporting, only for holds someone watches (the facade asks with `watch(hold, onEnd)`
//! when a program first reads `held.signal`, so a plain acquire + release pays for no
//! callback): a task awaits the core's `loss()` and, if the hold was lost, calls
//! `onEnd(reason)` (`"expired"`, `"taken"` or `"deleted"`) through a *weak* threadsafe
//! function (it never keeps Node alive). A hold that `client.close()` released is gone for
//! its holder as well: the task then calls `onEnd("closed")`. The task ends when the hold is
//! released or lost, which also frees the callback.

use crate::calls::{Driver, Value};
use crate::client::{locked, NativeClient, Shared};
use crate::local::Scratch;
use crate::lock::closed_error;
use crate::options::millis;
use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use redlatch::{Error, Guard, Reason};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::RwLock;

/// The `onEnd(why)` callback, `why` the loss reason or `"closed"`: errors not passed to it
/// (`CalleeHandled = false`), weak (`Weak = true`: unreferenced, so it never keeps the event
/// loop alive).
pub(crate) type LostCallback = ThreadsafeFunction<String, Unknown<'static>, String, Status, false, true>;

/// One hold of the client's table.
pub(crate) struct HoldSlot {
    guard: RwLock<Option<Guard>>,
    name: String,
    pub(crate) fencing_token: Option<u64>,
    pub(crate) lease_ms: f64,
    /// Set by `close()` before it releases the hold.
    closed: Arc<AtomicBool>,
    driver: Arc<Driver>,
}

impl HoldSlot {
    pub(crate) fn new(shared: &Arc<Shared>, guard: Guard) -> Self {
        HoldSlot {
            closed: Arc::new(AtomicBool::new(false)),
            driver: shared.driver.clone(),
            name: guard.name().to_owned(),
            fencing_token: guard.fencing_token(),
            lease_ms: guard.lease().as_millis() as f64,
            guard: RwLock::new(Some(guard)),
        }
    }

    /// Releases the hold if it is still here (used by `close()`); errors are only logged by
    /// the core, because nobody awaits them.
    pub(crate) async fn release_on_close(&self) {
        let guard = self.guard.write().await.take();
        if guard.is_some() {
            self.closed.store(true, Ordering::Release);
        }
        if let Some(guard) = guard {
            let _ = guard.release().await;
        }
    }

    /// `client.close()` is about to release every hold: one still held now (after a release
    /// under way has finished) is released by it.
    pub(crate) async fn mark_closing(&self) {
        if self.guard.read().await.as_ref().is_some_and(Guard::is_held) {
            self.closed.store(true, Ordering::Release);
        }
    }

    /// After `client.close()`: drops the guard (settled by the core's close), so that no
    /// reference to the closed client's connections is left in the table.
    pub(crate) async fn forget_after_close(&self) {
        self.guard.write().await.take();
    }

    fn already_released(&self) -> Error {
        if self.closed.load(Ordering::Acquire) {
            return closed_error();
        }
        Error::not_owned(
            false,
            Reason::NeverHeld,
            format!("lock {:?} was already released through this handle", self.name),
        )
    }

    fn closed_by_client(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn lost(&self) -> bool {
        if self.closed_by_client() {
            return true;
        }
        match self.guard.try_read() {
            Ok(g) => g.as_ref().is_some_and(Guard::is_lost),
            Err(_) => false,
        }
    }

    /// The code of the loss reason (`Reason::code`: 1 expired, 2 taken, 3 deleted), 0 while
    /// not known lost.
    fn lost_reason(&self) -> u32 {
        match self.guard.try_read() {
            Ok(g) => g
                .as_ref()
                .and_then(Guard::lost_reason)
                .map_or(0, |r| r.code() as u32),
            Err(_) => 0,
        }
    }

    /// Still held as far as this client knows: not released, not lost (a release whose
    /// outcome was unknown leaves it held). A release or close() in progress counts as held.
    fn held(&self) -> bool {
        match self.guard.try_read() {
            Ok(g) => g.as_ref().is_some_and(Guard::is_held),
            Err(_) => true,
        }
    }
}

/// The error for a hold number that is not (or no longer) in the table.
fn unknown_hold() -> napi::Error {
    crate::error::to_napi(Error::not_owned(
        false,
        Reason::NeverHeld,
        "this hold is not known to the client",
    ))
}

#[napi]
impl NativeClient {
    /// Releases hold `hold` (decrements the hold count of a reentrant lock), at most once,
    /// and settles call `id`. Rejects with `ERR_NOT_OWNED` (reason `deleted`, `taken` or
    /// `never_held`) or `ERR_LOCK_LOST` (the loss was known before: its reason, or
    /// `expired`); with `ERR_CONNECTION`/`ERR_QUORUM`/`ERR_NO_PERMISSION`/`ERR_OUT_OF_MEMORY`
    /// the hold stays (`holdState` bit 4) and `release` may be called again once Redis is
    /// back; `ERR_CONNECTION` too when `close()` released it. `scopeEnd` (the end of
    /// `using`, `await using`): nobody can call again, so a hold still held after the attempt
    /// is handed to the core, which retries in the background while it is valid.
    #[napi]
    pub fn release(
        &self,
        hold: f64,
        scope_end: bool,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let slot = self.shared.hold(hold).ok_or_else(unknown_hold)?;
        Ok(self.shared.driver.call(out, id, async move {
            let mut inside = slot.guard.write().await;
            let Some(guard) = inside.as_ref() else {
                return Err(slot.already_released());
            };
            let result = guard.release().await;
            if !guard.is_held() || scope_end {
                // Dropped here: a guard still held is released in the background.
                inside.take();
            }
            result.map(|()| Value::Unit)
        }))
    }

    /// Resets the remaining lease of hold `hold` to `leaseMs` (replace, never add) and
    /// settles call `id`; never re-creates a lost lock. Rejects as `release`, plus
    /// `ERR_INVALID_ARGUMENT` for a bad lease.
    #[napi]
    pub fn extend(
        &self,
        hold: f64,
        lease_ms: f64,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let lease = millis("leaseMs", lease_ms, false)?;
        let slot = self.shared.hold(hold).ok_or_else(unknown_hold)?;
        Ok(self.shared.driver.call(out, id, async move {
            let guard = slot.guard.read().await;
            match guard.as_ref() {
                Some(guard) => guard.extend(lease).await.map(|()| Value::Unit),
                None => Err(slot.already_released()),
            }
        }))
    }

    /// Settles call `id` with whether Redis still has hold `hold` as this owner's.
    #[napi]
    pub fn owned(&self, hold: f64, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let slot = self.shared.hold(hold).ok_or_else(unknown_hold)?;
        Ok(self.shared.driver.call(out, id, async move {
            let guard = slot.guard.read().await;
            match guard.as_ref() {
                Some(guard) => guard.owned().await.map(Value::Bool),
                None => Ok(Value::Bool(false)),
            }
        }))
    }

    /// Hold `hold`'s state, read locally (never blocks): bit 1 = known lost (or released by
    /// `client.close()`), bit 2 = released by `client.close()`, bit 4 = still held (not
    /// released, not lost; a release whose outcome was unknown leaves it held), bits 8 and up
    /// = the loss reason's code (1 expired, 2 taken, 3 deleted; 0 while not known lost).
    #[napi]
    pub fn hold_state(&self, hold: f64) -> u32 {
        match self.shared.hold(hold) {
            Some(slot) => {
                u32::from(slot.lost())
                    | (u32::from(slot.closed_by_client()) << 1)
                    | (u32::from(slot.held()) << 2)
                    | (slot.lost_reason() << 8)
            }
            None => 0,
        }
    }

    /// Calls `onEnd(reason)` once if hold `hold` is lost (`"expired"`, `"taken"`,
    /// `"deleted"`), `onEnd("closed")` if `client.close()` releases it; never after a
    /// release. A no-op for a hold already released (the facade reads the state first).
    #[napi(ts_args_type = "hold: number, onEnd: (why: string) => void")]
    pub fn watch(&self, hold: f64, on_end: LostCallback) {
        let Some(slot) = self.shared.hold(hold) else {
            return;
        };
        let loss = match slot.guard.try_read() {
            Ok(g) => g.as_ref().map(Guard::loss),
            // A release or close() is taking the guard out right now.
            Err(_) => None,
        };
        let Some(loss) = loss else { return };
        let closed = slot.closed.clone();
        slot.driver.spawn(async move {
            let lost = loss.await;
            let why = match lost {
                Some(reason) => reason.as_str(),
                None if closed.load(Ordering::Acquire) => "closed",
                None => return,
            };
            on_end.call(why.to_owned(), ThreadsafeFunctionCallMode::NonBlocking);
        });
    }

    /// Forgets hold `hold` (its JavaScript object was garbage-collected): a hold never
    /// released is released in the background.
    #[napi]
    pub fn drop_hold(&self, hold: f64) {
        let slot = locked(&self.shared.holds).remove(&(hold as u64));
        // Dropped outside the table's lock: the guard's drop starts the background release.
        drop(slot);
    }
}
