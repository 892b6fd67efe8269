//! [`Permit`]: one permit of a [`PermitSemaphore`](super::PermitSemaphore) held, its release
//! (by the caller, when dropped, or by `Client::close()`); its watchdog renewal is in
//! `renewal.rs`.

use super::renewal::{start_renewals, Renew};
use crate::driver::cleanup::{self, Retried};
use crate::driver::{BoxFut, Engine, OnClose};
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::protocol::family::permits::{self, ReleaseReply};
use crate::protocol::family::PUBLISH;
use event_listener::Event;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// One permit held. Release it with [`Permit::release`] (or by id, from any client:
/// [`PermitSemaphore::release`](super::PermitSemaphore::release)); `Client::close()` releases
/// it too. Dropped without release, a permit renewed by the watchdog (acquired without a
/// lease) is released in the background, as a dropped [`Guard`](crate::Guard): nothing would
/// renew it. A permit with a fixed lease stays taken until its lease ends or its id is
/// released: its id is how a permit is handed over (Redisson's RPermitExpirableSemaphore
/// returns only the id), so dropping the object that carried it must not give it back (a
/// user trial of stop 38: keeping the id and dropping the `Permit` let a second holder in).
/// Its id works like a credential: it is never logged or shown by `Debug`.
///
/// Fork: in a forked child of the process that acquired it, [`release`](Self::release) is
/// `NotOwned` (reason `never_held`) without touching Redis and dropping it releases nothing,
/// as for a [`Guard`](crate::Guard).
pub struct Permit {
    state: Arc<PermitState>,
    /// The process that acquired it.
    origin: crate::origin::Origin,
}

pub(super) struct PermitState {
    pub(super) engine: Arc<Engine>,
    pub(super) name: String,
    pub(super) id: String,
    pub(super) lease: Duration,
    /// When its lease ends on the engine's clock, in ms: `lease` after the grant, moved on by
    /// each renewal (the renewal's send time plus the watchdog timeout).
    pub(super) valid_until_ms: AtomicU64,
    /// Renewed by the watchdog (acquired without a lease).
    pub(super) renewed: bool,
    /// Its id in the client's registry (for `close()`).
    pub(super) registry_id: u64,
    /// Released, or a release is under way.
    pub(super) ended: AtomicBool,
    /// A renewal found it gone: it was reclaimed or released by id elsewhere.
    pub(super) lost: AtomicBool,
    /// A background release was started (one at most).
    pub(super) background: AtomicBool,
    /// A release was sent whose outcome stayed unknown: it may have applied.
    pub(super) maybe_released: AtomicBool,
    /// `Client::close` released it while its holder still held it.
    pub(super) released_by_close: AtomicBool,
    /// Wakes the renewal task so that it stops.
    pub(super) stop: Event,
    /// A renewal task runs (watchdog mode).
    pub(super) renewing: AtomicBool,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit")
            .field("semaphore", &self.state.name)
            .field("lease", &self.state.lease)
            .field("renewed", &self.state.renewed)
            .finish()
    }
}

/// Releases permit `id` of `name`, mapping Redis' answer to the error taxonomy.
pub(super) async fn release_id(engine: &Engine, name: &str, id: &str) -> Result<()> {
    let now = engine.runtime.wall_clock_ms();
    let request_id = crate::protocol::token::new_token()?;
    let request = permits::release_once(name, id, now, PUBLISH, &request_id, engine.latch_ttl_ms())?;
    let timeout = engine.config.network_timeout;
    let reply = engine.nodes.call(0, &request, timeout).await;
    // A try whose reply was lost with its connection is answered by its latch on the retry.
    // (Stops 36-45 took "no such id" on a retry for that try's release: a permit deleted
    // meanwhile, a restart without persistence, then read as released, a user trial of stop
    // 46; before stop 36 a try that had released it read as gone.)
    match permits::decode_release(&reply?)? {
        ReleaseReply::Released => Ok(()),
        ReleaseReply::Expired => Err(Error::not_owned(
            false,
            Reason::Expired,
            format!("permit of semaphore {name:?}: its lease had ended (it is given back now)"),
        )),
        ReleaseReply::Unknown => Err(Error::not_owned(
            false,
            Reason::NeverHeld,
            format!(
                "semaphore {name:?} holds no permit with this id (never issued, released \
                 before, or its lease ended and it was given back)"
            ),
        )),
    }
}

impl PermitState {
    async fn release(&self) -> Result<()> {
        if self.ended.swap(true, Ordering::AcqRel) {
            return Err(Error::not_owned(
                false,
                Reason::NeverHeld,
                format!("permit of semaphore {:?} was already released", self.name),
            ));
        }
        self.stop.notify(usize::MAX);
        if let Some(known) = self.known_loss() {
            return Err(known);
        }
        let result = match release_id(&self.engine, &self.name, &self.id).await {
            // Gone after a release of this handle whose outcome stayed unknown, while its lease
            // runs: that release removed it (permit ids are random, as for the driver's own
            // retry in `release_id`). Before stop 42 the caller's retry said `never_held` (a
            // user trial).
            Err(e)
                if e.reason() == Some(Reason::NeverHeld)
                    && self.maybe_released.load(Ordering::Acquire)
                    && !self.lease_ended() =>
            {
                Ok(())
            }
            other => other.map_err(|e| self.why_gone(e)),
        };
        let retryable = result
            .as_ref()
            .is_err_and(|e| matches!(e.kind(), ErrorKind::Connection) || e.reason().is_none());
        if retryable {
            // Unknown outcome (or an error reply that changed nothing): retryable, and still
            // tracked, so that `Client::close()` releases it if nobody else does.
            let unknown = result.as_ref().is_err_and(|e| e.kind() == ErrorKind::Connection);
            self.maybe_released.fetch_or(unknown, Ordering::AcqRel);
            self.ended.store(false, Ordering::Release);
        } else {
            self.engine.registry.untrack_other(self.registry_id);
        }
        result
    }
}

impl PermitState {
    /// The loss of this permit when it is known here (its lease ended, or a renewal found it
    /// gone) and no earlier release of unknown outcome may be what ended it: said at once, as
    /// for a lock, not after a round trip a slow Redis may not answer (a Node family trial of
    /// stop 46 got `Connection` after a network timeout for a permit already `lost`). An
    /// expired entry Redis has not reclaimed yet is given back from the background (any
    /// acquire reclaims it too).
    fn known_loss(&self) -> Option<Error> {
        if self.maybe_released.load(Ordering::Acquire) {
            return None;
        }
        let (reason, why) = if self.lease_ended() {
            (Reason::Expired, "its lease had ended")
        } else if self.lost.load(Ordering::Acquire) {
            (Reason::Deleted, "its entry is gone (found by its renewal)")
        } else {
            return None;
        };
        self.engine.registry.untrack_other(self.registry_id);
        if reason == Reason::Expired {
            let (engine, name, id) = (self.engine.clone(), self.name.clone(), self.id.clone());
            crate::driver::cleanup::spawn(
                &*self.engine.runtime,
                Box::pin(async move {
                    let _ = release_id(&engine, &name, &id).await;
                }),
            );
        }
        Some(Error::not_owned(
            true,
            reason,
            format!("permit of semaphore {:?} is no longer held: {why}", self.name),
        ))
    }

    /// Its lease has run out: a fixed lease, or the last renewal's (the watchdog's renewals
    /// failed for a whole watchdog timeout).
    pub(super) fn lease_ended(&self) -> bool {
        self.engine.now().as_millis() as u64 >= self.valid_until_ms.load(Ordering::Acquire)
    }

    /// Redis knowing no such permit (`never_held` from [`release_id`], which serves any id)
    /// means, for one this handle holds, that its entry went: reclaimed after its lease ended
    /// (`expired`), or deleted (`deleted`: a restart without persistence, its id released by
    /// another client), as a lock's release reports its key gone. `LockLost` when a renewal
    /// had found it gone before. (Before stop 35 it said `never_held`, which means released
    /// before.)
    ///
    /// A fixed lease that ended before the release is a loss known here, as for a lock released
    /// late: `LockLost` (`expired`), whether Redis still had its entry or had reclaimed it (a
    /// user trial of stop 38 found `NotOwned` against the errors table).
    fn why_gone(&self, e: Error) -> Error {
        let expired = self.lease_ended();
        if e.reason() == Some(Reason::Expired) && expired {
            return Error::not_owned(true, Reason::Expired, e.message());
        }
        // After a release whose outcome stayed unknown, that release may be what removed it.
        if e.reason() != Some(Reason::NeverHeld) || self.maybe_released.load(Ordering::Acquire) {
            return e;
        }
        let (reason, why) = if expired {
            (Reason::Expired, "its lease had ended and it was given back")
        } else {
            (
                Reason::Deleted,
                "its entry is gone (a restart without persistence, or its id released elsewhere)",
            )
        };
        let lost = self.lost.load(Ordering::Acquire) || expired;
        Error::not_owned(
            lost,
            reason,
            format!("permit of semaphore {:?} is no longer held: {why}", self.name),
        )
    }
}

impl OnClose for PermitState {
    fn close(self: Arc<Self>) -> BoxFut<'static, ()> {
        Box::pin(async move {
            if !self.ended.load(Ordering::Acquire) {
                self.released_by_close.store(true, Ordering::Release);
            }
            if let Err(e) = self.release().await {
                tracing::debug!(semaphore = %self.name, error = %e, "permit release at close failed");
            }
        })
    }
}

impl Permit {
    /// The permit's id: 32 lower-case hex digits, Redisson's format (pass it to
    /// [`PermitSemaphore::release`](super::PermitSemaphore::release) here or `RPermitExpirableSemaphore.release` in Java).
    pub fn id(&self) -> &str {
        &self.state.id
    }

    /// The lease it was acquired with; in watchdog mode (no lease given) the client's
    /// watchdog timeout, renewed every third of it.
    pub fn lease(&self) -> Duration {
        self.state.lease
    }

    /// `true` when the watchdog renews it (acquired without a lease).
    pub fn is_renewed(&self) -> bool {
        self.state.renewed
    }

    /// `true` once it is known no longer held: a renewal found it gone (reclaimed after its
    /// lease ended, or released by id by another client), or its lease ran out unrenewed
    /// (renewals that failed, e.g. refused while Redis is out of memory: another client may
    /// hold it now; a user trial of stop 44 found two holders of a 1-permit semaphore with
    /// this still `false`), before a release.
    pub fn is_lost(&self) -> bool {
        let state = &self.state;
        state.lost.load(Ordering::Acquire) || (!state.ended.load(Ordering::Acquire) && state.lease_ended())
    }

    /// `true` once released through this handle (or while a release is in flight): given
    /// back, or found lost by the release. `false` again after a release whose outcome
    /// stayed unknown (a `Connection` error: call [`release`](Self::release) again).
    pub fn is_released(&self) -> bool {
        self.state.ended.load(Ordering::Acquire)
    }

    /// `true` when `Client::close` released it while it was still held, as
    /// [`Guard::released_by_close`](crate::Guard::released_by_close) for locks: bindings then
    /// report it lost to its holder (a scope still running at close rejects `LockLost`).
    pub fn released_by_close(&self) -> bool {
        self.state.released_by_close.load(Ordering::Acquire)
    }

    /// Gives the permit back, at most once (the renewal stops first).
    ///
    /// # Errors
    /// `NotOwned` with reason `never_held` when it was already released, `deleted` when its
    /// entry is gone within its lease (a restart without persistence, its id released
    /// elsewhere); `LockLost` (a `NotOwned`) with reason `expired` when its fixed lease had
    /// ended (given back by Redis, or not yet: it is now; as a lock released late), and with
    /// the reason a renewal found when one had found it gone before; `Connection`/`Redis` when
    /// Redis fails (the permit then stays releasable: call again; unrenewed, it expires with
    /// its lease); `Connection` ("the client is closed") after `Client::close`.
    pub async fn release(&self) -> Result<()> {
        if self.origin.is_foreign() {
            return Err(crate::origin::inherited_hold(
                "release a permit of",
                &self.state.name,
            ));
        }
        self.state.engine.registry.check_open()?;
        let result = self.state.release().await;
        // Refused without a change (NoPermission, OutOfMemory): still held, so renewed again
        // (a user trial of stop 38 found a refused lock release stopping the watchdog).
        let refused = result
            .as_ref()
            .is_err_and(|e| e.kind() != ErrorKind::Connection && e.reason().is_none());
        if refused && self.state.renewed && !self.state.ended.load(Ordering::Acquire) {
            start_renewals(&self.state, Renew::AtOnce);
        }
        result
    }

    /// Releases like [`release`](Self::release), for clean-up paths that cannot call again
    /// (the end of a scope, a destructor): when the outcome stays unknown, the release goes on
    /// in the background, retried with back-off for up to the permit's lease (after that Redis
    /// gives it back itself), as [`Guard::release_final`](crate::Guard::release_final).
    /// Returns the first attempt's result.
    ///
    /// # Errors
    /// As [`release`](Self::release).
    pub async fn release_final(&self) -> Result<()> {
        let result = self.release().await;
        if !self.state.ended.load(Ordering::Acquire)
            && !self.state.engine.registry.is_closed()
            && !self.origin.is_foreign()
        {
            release_in_background(self.state.clone());
        }
        result
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.origin.is_foreign() {
            // The parent's permit (see `Guard`'s drop): never released nor destroyed here.
            std::mem::forget(self.state.clone());
            return;
        }
        // A fixed lease ends by itself, and its id may have been handed over (see `Permit`).
        if self.state.ended.load(Ordering::Acquire) || !self.state.renewed {
            return;
        }
        release_in_background(self.state.clone());
    }
}

/// Gives the permit back from a task of its own (see [`Permit::release_final`]).
fn release_in_background(state: Arc<PermitState>) {
    if state.background.swap(true, Ordering::AcqRel) {
        return;
    }
    let runtime = state.engine.runtime.clone();
    // Acquires of the same semaphore through this client wait for it (`driver/dropped.rs`).
    let in_flight = state.engine.dropped.begin(&state.name);
    crate::driver::cleanup::spawn(
        &*runtime,
        Box::pin(async move {
            retry_release(state).await;
            drop(in_flight);
        }),
    );
}

/// Releases the permit, retrying while the outcome is unknown (a failed attempt leaves it
/// releasable: `ended` goes back to false) and its lease could still be running.
async fn retry_release(state: Arc<PermitState>) {
    let engine = &state.engine;
    let give_up = engine.now() + state.lease;
    let released = cleanup::retry(
        engine,
        None,
        || state.release(),
        |_| !state.ended.load(Ordering::Acquire),
        || engine.now() < give_up,
    )
    .await;
    if let Retried::Answered(Err(e)) | Retried::GaveUp(e) = released {
        tracing::debug!(semaphore = %state.name, error = %e, "background release of a permit failed");
    }
}

impl Permit {
    /// A permit just granted: tracked for `Client::close()`, renewed by the watchdog when
    /// `renewed`.
    pub(super) fn new(
        engine: &Arc<Engine>,
        name: &str,
        id: String,
        lease: Duration,
        renewed: bool,
        sent: Duration,
    ) -> Permit {
        let state = Arc::new(PermitState {
            engine: engine.clone(),
            name: name.to_owned(),
            id,
            lease,
            valid_until_ms: AtomicU64::new(valid_until_ms(sent, lease)),
            renewed,
            registry_id: engine.registry.next_id(),
            ended: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            background: AtomicBool::new(false),
            maybe_released: AtomicBool::new(false),
            released_by_close: AtomicBool::new(false),
            stop: Event::new(),
            renewing: AtomicBool::new(false),
        });
        let weak: Weak<dyn OnClose> = Arc::downgrade(&state) as Weak<dyn OnClose>;
        if !engine.registry.track_other(state.registry_id, weak) {
            // Closed meanwhile: the permit goes back at once (the caller gets it released).
            engine.runtime.spawn(Box::pin(state.clone().close()));
        }
        if renewed {
            start_renewals(&state, Renew::AfterAPeriod);
        }
        Permit {
            state,
            origin: crate::origin::Origin::here(),
        }
    }
}

/// The end of a permit's validity for a lease granted by a request sent at `sent` (the
/// engine's clock): the lease counted from the send, less the clock-drift allowance of lock
/// grants (`quorum::drift`), so that the holder sees it end no later than Redis does. Counted
/// from the reply before stop 45, it ended a round trip after Redis' expiry, and a release
/// made in that window said `deleted` where the permit had expired (a CI run under load).
pub(super) fn valid_until_ms(sent: Duration, lease: Duration) -> u64 {
    let lasts = lease.saturating_sub(crate::protocol::quorum::drift(lease));
    (sent + lasts).as_millis() as u64
}
