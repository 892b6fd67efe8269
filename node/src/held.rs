//! Holds: one acquisition each, kept in its client's table under a number JavaScript holds
//! (client.rs), with release, extend, the loss watcher and the state queries as
//! `NativeClient` methods taking that number.
//!
//! A hold is the core's shareable [`Guard`]: the core releases at most once, serializes
//! release and extend, keeps a release whose outcome is unknown (a connection error) held so
//! that `release()` may be called again, and goes on in the background after a scope's
//! release (`scopeEnd`, the core's `release_final`). `client.close()` is the core's
//! `Client::close`: it releases every guard still held, lets go of the connections and
//! makes later calls fail with "the client is closed".
//!
//! A release that succeeds retires the hold's entry, and the facade's engine then stops
//! watching the hold's JavaScript object for collection: a program that drops many released
//! holds paid one `FinalizationRegistry` callback and one `dropHold` call per hold, all in one
//! task after a major collection (16,000 of them stalled the event loop 19 ms in the
//! contended benchmark, the slowest 0.1 % of its waits). Later calls through that handle get
//! the core's own answers (`holdRefusal`: "already released"). `dropHold` removes the entry
//! of a hold whose object was collected without a release, which the core then releases in
//! the background.
//!
//! Loss reporting, only for holds someone watches (the facade asks with `watch(hold, onEnd)`
//! when a program first reads `held.signal`, so a plain acquire + release pays for no
//! callback): a task awaits the core's `loss()` and, if the hold was lost, calls
//! `onEnd(reason)` (`"expired"`, `"taken"` or `"deleted"`) through a *weak* threadsafe
//! function (it never keeps Node alive). A hold that `client.close()` released is gone for
//! its holder as well (`Guard::released_by_close`): the task then calls `onEnd("closed")`.
//! The task ends when the hold is released or lost, which also frees the callback.

use crate::calls::Value;
use crate::client::{locked, NativeClient};
use crate::local::Scratch;
use crate::options::millis;
use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use redlatch::{Error, Guard, Reason};
use std::sync::Arc;

/// The `onEnd(why)` callback, `why` the loss reason or `"closed"`: errors not passed to it
/// (`CalleeHandled = false`), weak (`Weak = true`: unreferenced, so it never keeps the event
/// loop alive).
pub(crate) type LostCallback = ThreadsafeFunction<String, Unknown<'static>, String, Status, false, true>;

/// One hold of the client's table: the core guard, and what `acquire` answers with.
pub(crate) struct HoldSlot {
    guard: Guard,
    pub(crate) fencing_token: Option<u64>,
    pub(crate) lease_ms: f64,
}

impl HoldSlot {
    pub(crate) fn new(guard: Guard) -> Self {
        HoldSlot {
            fencing_token: guard.fencing_token(),
            lease_ms: guard.lease().as_millis() as f64,
            guard,
        }
    }

    /// Releases the hold of an acquire that finished after `client.close()` (the caller
    /// rejects it): the core's close released it already if it saw it, else this does.
    pub(crate) async fn release_after_close(&self) {
        let _ = self.guard.release_final().await;
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
    /// back; `ERR_CONNECTION` ("the client is closed") after `close()`. `scopeEnd` (the end
    /// of `using`, `await using`): nobody can call again, so a hold still held after the
    /// attempt is handed to the core, which retries in the background while it is valid.
    #[napi]
    pub fn release(
        &self,
        hold: f64,
        scope_end: bool,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let slot = self.shared.hold(hold).ok_or_else(unknown_hold)?;
        let shared = self.shared.clone();
        Ok(self.shared.driver.call(out, id, async move {
            let result = if scope_end {
                slot.guard.release_final().await
            } else {
                slot.guard.release().await
            };
            if result.is_ok() {
                shared.retire_hold(hold as u64, &slot);
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
            slot.guard.extend(lease).await.map(|()| Value::Unit)
        }))
    }

    /// Settles call `id` with whether Redis still has hold `hold` as this owner's (`false`
    /// after `close()`).
    #[napi]
    pub fn owned(&self, hold: f64, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let slot = self.shared.hold(hold).ok_or_else(unknown_hold)?;
        Ok(self
            .shared
            .driver
            .call(out, id, async move { slot.guard.owned().await.map(Value::Bool) }))
    }

    /// Hold `hold`'s state, read locally (never blocks): bit 1 = known lost (or released by
    /// `client.close()`), bit 2 = released by `client.close()`, bit 4 = still held (not
    /// released, not lost; a release whose outcome was unknown leaves it held), bits 8 and up
    /// = the loss reason's code (1 expired, 2 taken, 3 deleted; 0 while not known lost).
    #[napi]
    pub fn hold_state(&self, hold: f64) -> u32 {
        let Some(slot) = self.shared.hold(hold) else {
            return 0;
        };
        let guard = &slot.guard;
        let closed = guard.released_by_close();
        u32::from(closed || guard.is_lost())
            | (u32::from(closed) << 1)
            | (u32::from(guard.is_held()) << 2)
            | (guard.lost_reason().map_or(0, |r| r.code() as u32) << 8)
    }

    /// Calls `onEnd(reason)` once if hold `hold` is lost (`"expired"`, `"taken"`,
    /// `"deleted"`), `onEnd("closed")` if `client.close()` releases it; never after a
    /// release. A no-op for a hold already released (the facade reads the state first).
    #[napi(ts_args_type = "hold: number, onEnd: (why: string) => void")]
    pub fn watch(&self, hold: f64, on_end: LostCallback) {
        let Some(slot) = self.shared.hold(hold) else {
            return;
        };
        let loss = slot.guard.loss();
        // Weak: the watcher must not keep a hold whose JavaScript object was collected (its
        // drop releases it in the background), and nobody is left to tell then.
        let slot = Arc::downgrade(&slot);
        self.shared.driver.spawn(async move {
            let why = match loss.await {
                Some(reason) => reason.as_str(),
                None if slot.upgrade().is_some_and(|s| s.guard.released_by_close()) => "closed",
                None => return,
            };
            on_end.call(why.to_owned(), ThreadsafeFunctionCallMode::NonBlocking);
        });
    }

    /// Forgets hold `hold` (its JavaScript object was garbage-collected): a hold never
    /// released is left to its lease when it has a fixed one, else (watchdog-renewed)
    /// released in the background (`Guard::leave_to_its_lease`).
    #[napi]
    pub fn drop_hold(&self, hold: f64) {
        let slot = locked(&self.shared.holds).remove(&(hold as u64));
        if let Some(slot) = &slot {
            slot.guard.leave_to_its_lease();
        }
        // Dropped outside the table's lock: the guard's drop may start the background release.
        drop(slot);
    }
}

/// Throws the core's refusal of `what` (`"release"`, `"extend"`) on a hold of lock `name` that
/// was released through this handle (its entry retired: module docs).
#[napi]
pub fn hold_refusal(what: String, name: String) -> napi::Result<()> {
    Err(crate::error::to_napi(Error::hold_refused(
        &what,
        &name,
        Reason::NeverHeld,
    )))
}
