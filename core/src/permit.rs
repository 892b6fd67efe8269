//! [`PermitSemaphore`] and [`Permit`]: Redisson's `RPermitExpirableSemaphore`, whose permits
//! have ids and leases and come back by themselves when a lease ends.

use crate::client::Client;
use crate::driver::waiting::{self, Waiter};
use crate::driver::{BoxFut, Engine, OnClose, CLOSED};
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::protocol::family::permits::{self, AcquireReply, ReleaseReply};
use crate::protocol::family::{keys as family_keys, semaphore, validate_count, PUBLISH};
use crate::protocol::{keys, timing};
use event_listener::Event;
use futures::future::{select, Either};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A permit-expirable semaphore on key `name`, in Redisson 4.7's `RPermitExpirableSemaphore`
/// layout: STRING `name` = permits available, ZSET `{name}:timeout` of the permits held (the
/// id's 16 bytes -> expiry, wall-clock ms), channel `redisson_sc:{name}`. Made by
/// [`Client::permit_semaphore`].
///
/// Each acquire returns a [`Permit`] with an id in Redisson's format (32 lower-case hex
/// digits), so a Java client can release a redlatch permit by id and the reverse. A permit
/// with a lease comes back by itself when the lease ends (every operation gives expired
/// permits back first); one taken without a lease is renewed by a watchdog every third of the
/// client's watchdog timeout (`permit_extend`) while its [`Permit`] lives, so a holder that
/// dies gives it back within that timeout (default 30 s). Expiries are absolute wall-clock
/// times, as Redisson stores them: hosts sharing a semaphore need synchronised clocks.
///
/// Single-node, Cluster and Sentinel clients; a quorum client is refused with
/// `InvalidArgument`.
#[derive(Clone)]
pub struct PermitSemaphore {
    engine: Arc<Engine>,
    name: String,
    wait: Option<Duration>,
}

impl std::fmt::Debug for PermitSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitSemaphore")
            .field("name", &self.name)
            .field("wait", &self.wait)
            .finish()
    }
}

impl Client {
    /// A permit-expirable semaphore on key `name` (Redisson `RPermitExpirableSemaphore`; see
    /// [`PermitSemaphore`]). Set its permits once with [`PermitSemaphore::try_set_permits`].
    pub fn permit_semaphore(&self, name: impl Into<String>) -> PermitSemaphore {
        PermitSemaphore {
            engine: self.engine.clone(),
            name: name.into(),
            wait: None,
        }
    }
}

/// One permit held. Release it with [`Permit::release`]; a permit dropped without release is
/// released in the background (as a dropped [`Guard`](crate::Guard)). `Client::close()`
/// releases it too. Its id works like a credential: it is never logged or shown by `Debug`.
pub struct Permit {
    state: Arc<PermitState>,
}

struct PermitState {
    engine: Arc<Engine>,
    name: String,
    id: String,
    lease: Duration,
    /// Renewed by the watchdog (acquired without a lease).
    renewed: bool,
    /// Its id in the client's registry (for `close()`).
    registry_id: u64,
    /// Released, or a release is under way.
    ended: AtomicBool,
    /// A renewal found it gone: it was reclaimed or released by id elsewhere.
    lost: AtomicBool,
    /// Wakes the renewal task so that it stops.
    stop: Event,
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
async fn release_id(engine: &Engine, name: &str, id: &str) -> Result<()> {
    let request = permits::release(name, id, engine.runtime.wall_clock_ms(), PUBLISH)?;
    let reply = waiting::call(engine, &request).await?;
    match permits::decode_release(&reply)? {
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
        let result = release_id(&self.engine, &self.name, &self.id).await;
        if let Err(e) = &result {
            if matches!(e.kind(), ErrorKind::Connection) || e.reason().is_none() {
                // Unknown outcome (or an error reply that changed nothing): retryable.
                self.ended.store(false, Ordering::Release);
            }
        }
        self.engine.registry.untrack_other(self.registry_id);
        result
    }
}

impl OnClose for PermitState {
    fn close(self: Arc<Self>) -> BoxFut<'static, ()> {
        Box::pin(async move {
            if let Err(e) = self.release().await {
                tracing::debug!(semaphore = %self.name, error = %e, "permit release at close failed");
            }
        })
    }
}

impl Permit {
    /// The permit's id: 32 lower-case hex digits, Redisson's format (pass it to
    /// [`PermitSemaphore::release`] here or `RPermitExpirableSemaphore.release` in Java).
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

    /// `true` once a renewal found it no longer held (reclaimed after its lease ended, or
    /// released by id by another client).
    pub fn is_lost(&self) -> bool {
        self.state.lost.load(Ordering::Acquire)
    }

    /// Gives the permit back, at most once (the renewal stops first).
    ///
    /// # Errors
    /// `NotOwned` with reason `never_held` when it was already released (or is no longer held:
    /// its lease ended and it was given back, or someone released its id), `expired` when its
    /// lease had ended but it was not given back yet (it is now); `Connection`/`Redis` when
    /// Redis fails (the permit then stays releasable: call again; unrenewed, it expires with
    /// its lease); `Connection` ("the client is closed") after `Client::close`.
    pub async fn release(&self) -> Result<()> {
        self.state.engine.registry.check_open()?;
        self.state.release().await
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if self.state.ended.load(Ordering::Acquire) {
            return;
        }
        let state = self.state.clone();
        self.state.engine.runtime.spawn(Box::pin(async move {
            if let Err(e) = state.release().await {
                tracing::debug!(semaphore = %state.name, error = %e, "background release of a dropped permit failed");
            }
        }));
    }
}

/// Renews a watchdog-mode permit every third of the watchdog timeout until it is released,
/// dropped or found gone. Holds it weakly: a dropped permit is not kept alive.
async fn renew(state: Weak<PermitState>) {
    let mut pause = None;
    loop {
        let Some(strong) = state.upgrade() else { return };
        let engine = strong.engine.clone();
        let timeout = engine.config.watchdog_timeout;
        let period = timing::renewal_period(timeout);
        let listener = strong.stop.listen();
        if strong.ended.load(Ordering::Acquire) {
            return;
        }
        drop(strong);
        let _ = select(engine.runtime.sleep(pause.unwrap_or(period)), listener).await;
        let Some(strong) = state.upgrade() else { return };
        if strong.ended.load(Ordering::Acquire) || engine.registry.is_closed() {
            return;
        }
        let now = engine.runtime.wall_clock_ms();
        let expiry = permits::expiry(now, Some(timeout.as_millis() as u64));
        let outcome = match permits::extend(&strong.name, &strong.id, expiry, now, PUBLISH) {
            Ok(request) => waiting::call(&engine, &request)
                .await
                .and_then(|r| permits::decode_extend(&r)),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(true) => pause = None,
            Ok(false) => {
                tracing::warn!(semaphore = %strong.name, "permit renewal found it no longer held");
                strong.lost.store(true, Ordering::Release);
                return;
            }
            Err(e) => {
                tracing::debug!(semaphore = %strong.name, error = %e, "permit renewal failed; retrying");
                pause = Some((period / 4).min(Duration::from_secs(1)));
            }
        }
    }
}

/// Gives back, in the background, a permit whose grant its caller never saw.
struct UndoOnDrop {
    engine: Arc<Engine>,
    name: String,
    id: String,
    armed: bool,
}

impl Drop for UndoOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (engine, name, id) = (
            self.engine.clone(),
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.id),
        );
        self.engine.runtime.spawn(Box::pin(async move {
            match release_id(&engine, &name, &id).await {
                Ok(()) => tracing::debug!(semaphore = %name, "gave back the permit of an abandoned acquire"),
                Err(e) if e.kind() == ErrorKind::NotOwned => {}
                Err(e) => tracing::warn!(semaphore = %name, error = %e, "giving back the permit of an abandoned acquire failed"),
            }
        }));
    }
}

impl PermitSemaphore {
    /// Longest time [`acquire`](Self::acquire) waits for a permit. `Duration::ZERO` = one try.
    /// Default: no limit.
    pub fn wait(mut self, wait: Duration) -> PermitSemaphore {
        self.wait = Some(wait);
        self
    }

    /// The semaphore's name (its Redis key).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> Result<()> {
        keys::validate_name(&self.name)?;
        waiting::single_node(&self.engine)
    }

    /// Sets the number of permits if the semaphore does not exist yet (Redisson
    /// `trySetPermits`), publishing it. `Ok(false)` when it already exists (left untouched).
    ///
    /// # Errors
    /// `InvalidArgument` for 0 or more than `i32::MAX` permits, a bad name or a quorum client;
    /// `Connection`/`Redis`/`NoPermission`/`OutOfMemory` when Redis fails.
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        self.check()?;
        validate_count("permits", permits)?;
        let request = semaphore::try_set_permits(&self.name, permits, None, PUBLISH)?;
        semaphore::decode_try_set(&waiting::call(&self.engine, &request).await?)
    }

    /// Acquires one permit, waiting up to the handle's [`wait`](Self::wait) (forever by
    /// default). `lease`: the permit comes back by itself that long after the acquire
    /// (whole ms, sub-ms rounds up); `None`: watchdog mode (see [`PermitSemaphore`]). A waiter
    /// wakes on the semaphore channel's messages, when the earliest held permit's lease ends,
    /// or every poll interval.
    ///
    /// Cancellation-safe: dropping the future gives back, in the background, a permit an
    /// attempt in flight may have taken (its id is known before it is sent).
    ///
    /// # Errors
    /// `NotAcquired` when the wait runs out; `InvalidArgument` for a zero or too long lease,
    /// a bad name or a quorum client (nothing sent); `Connection` when Redis keeps failing
    /// for the network timeout or the client was closed; `Redis`/`NoPermission`/`OutOfMemory`
    /// at once.
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<Permit> {
        self.acquire_with_wait(lease, self.wait).await
    }

    /// One attempt, no waiting: `Ok(None)` when no permit is available.
    ///
    /// # Errors
    /// As [`Self::acquire`], except that no permit available is `Ok(None)`.
    pub async fn try_acquire(&self, lease: Option<Duration>) -> Result<Option<Permit>> {
        match self.acquire_with_wait(lease, Some(Duration::ZERO)).await {
            Ok(p) => Ok(Some(p)),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Like [`Self::acquire`] with an explicit wait (`None` = forever).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    pub async fn acquire_with_wait(&self, lease: Option<Duration>, wait: Option<Duration>) -> Result<Permit> {
        self.check()?;
        let lease_ms = match lease {
            Some(l) => Some(timing::to_millis("lease", l, false)?),
            None => None,
        };
        if let Some(w) = wait {
            timing::to_millis("wait", w, true)?;
        }
        let registry = &self.engine.registry;
        // Open until the acquire is dropped, for its undo after a close (see Lock::acquire_spec).
        let _connections = self.engine.nodes.keep();
        let acquiring = std::pin::pin!(self.acquire_loop(lease_ms, wait));
        let closed = std::pin::pin!(registry.until_closed());
        match select(acquiring, closed).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(Error::connection(CLOSED)),
        }
    }

    async fn acquire_loop(&self, lease_ms: Option<u64>, wait: Option<Duration>) -> Result<Permit> {
        let engine = &self.engine;
        let renewed = lease_ms.is_none();
        let lease_ms = lease_ms.unwrap_or(engine.config.watchdog_timeout.as_millis() as u64);
        let id = permits::new_permit_ids(1)?.remove(0);
        let mut undo = UndoOnDrop {
            engine: engine.clone(),
            name: self.name.clone(),
            id: id.clone(),
            armed: false,
        };
        let mut waiter = Waiter::new(engine, family_keys::semaphore_channel(&self.name), wait);
        loop {
            let started = waiter.attempt_starts();
            let now = engine.runtime.wall_clock_ms();
            let request = permits::acquire(
                &self.name,
                std::slice::from_ref(&id),
                permits::expiry(now, Some(lease_ms)),
                now,
                PUBLISH,
            )?;
            undo.armed = true;
            let reply = waiting::call(engine, &request).await;
            match reply.and_then(|r| permits::decode_acquire(&r)) {
                Ok(AcquireReply::Acquired { .. }) => {
                    undo.armed = false;
                    return Ok(self.new_permit(id, Duration::from_millis(lease_ms), renewed));
                }
                Ok(AcquireReply::NotEnough { earliest_expiry }) => {
                    // A definite answer to the same ids: no earlier attempt took the permit.
                    undo.armed = false;
                    let now = engine.runtime.wall_clock_ms();
                    let hint = earliest_expiry.map(|at| Duration::from_millis(at.saturating_sub(now)));
                    if !waiter.not_yet(hint).await {
                        return Err(Error::new(
                            ErrorKind::NotAcquired,
                            format!("semaphore {:?} has no permit available; wait ran out", self.name),
                        ));
                    }
                }
                Err(e) => waiter.failed(e, started).await?,
            }
        }
    }

    fn new_permit(&self, id: String, lease: Duration, renewed: bool) -> Permit {
        let engine = &self.engine;
        let state = Arc::new(PermitState {
            engine: engine.clone(),
            name: self.name.clone(),
            id,
            lease,
            renewed,
            registry_id: engine.registry.next_id(),
            ended: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            stop: Event::new(),
        });
        let weak: Weak<dyn OnClose> = Arc::downgrade(&state) as Weak<dyn OnClose>;
        if !engine.registry.track_other(state.registry_id, weak) {
            // Closed meanwhile: the permit goes back at once (the caller gets it released).
            engine.runtime.spawn(Box::pin(state.clone().close()));
        }
        if renewed {
            engine.runtime.spawn(Box::pin(renew(Arc::downgrade(&state))));
        }
        Permit { state }
    }

    /// Releases the permit `id` (taken by any client, Java included), by its 32 hex digits.
    ///
    /// # Errors
    /// `InvalidArgument` when `id` is not 32 hex digits (not echoed), a bad name or a quorum
    /// client (nothing sent); `NotOwned` with reason `never_held` when no such permit is held,
    /// `expired` when its lease had ended but it was not given back yet (it is now);
    /// `Connection`/`Redis` when Redis fails.
    pub async fn release(&self, id: &str) -> Result<()> {
        self.check()?;
        permits::validate_permit_id(id)?;
        release_id(&self.engine, &self.name, id).await
    }

    /// Permits available now, after giving expired ones back (0 when never set).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name or a quorum client; `Connection`/`Redis` when Redis
    /// fails.
    pub async fn available(&self) -> Result<u64> {
        self.check()?;
        let request = permits::available(&self.name, self.engine.runtime.wall_clock_ms(), PUBLISH);
        let reply = waiting::call(&self.engine, &request).await?;
        Ok(permits::decode_available(&reply)?.0.max(0) as u64)
    }
}
