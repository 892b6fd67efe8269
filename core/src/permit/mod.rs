//! [`PermitSemaphore`] and [`Permit`]: Redisson's `RPermitExpirableSemaphore`, whose permits
//! have ids and leases and come back by themselves when a lease ends.

use crate::client::Client;
use crate::driver::cleanup::{self, Retried};
use crate::driver::waiting::{self, GiveBackOnDrop, Waiter};
use crate::driver::{BoxFut, Engine, CLOSED};
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::protocol::family::permits::{self, AcquireReply, ReleaseReply};
use crate::protocol::family::{keys as family_keys, validate_count, PUBLISH};
use crate::protocol::{keys, timing};
use crate::semaphore::initial::{try_set_permits, InitialPermits};
use futures::future::{select, Either};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod held;
mod renewal;
use held::release_id;
pub use held::Permit;

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
    /// The permits this handle declares ([`Self::initial_permits`]), offered once.
    initial: InitialPermits,
    /// Ids whose release through this handle (and its clones) ended with an unknown outcome:
    /// a retry that finds the id gone was given back by that release (see [`Self::release`]).
    maybe_released: Arc<Mutex<VecDeque<String>>>,
}

/// How many ids of releases of unknown outcome a handle remembers.
const MAX_MAYBE_RELEASED: usize = 64;

impl std::fmt::Debug for PermitSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitSemaphore")
            .field("name", &self.name)
            .field("wait", &self.wait)
            .field("initial_permits", &self.initial.permits())
            .finish()
    }
}

impl Client {
    /// A permit-expirable semaphore on key `name` (Redisson `RPermitExpirableSemaphore`; see
    /// [`PermitSemaphore`]). Set its permits once with [`PermitSemaphore::try_set_permits`],
    /// or declare them with [`PermitSemaphore::initial_permits`].
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let slots = client.permit_semaphore("render-slots");
    /// slots.try_set_permits(4).await?;
    /// // Given back by itself after 60 s if its holder dies; `None` = renewed by the watchdog.
    /// let permit = slots.acquire(Some(Duration::from_secs(60))).await?;
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn permit_semaphore(&self, name: impl Into<String>) -> PermitSemaphore {
        PermitSemaphore {
            engine: self.engine.clone(),
            name: name.into(),
            wait: None,
            initial: InitialPermits::default(),
            maybe_released: Arc::default(),
        }
    }
}

/// Gives back permit `id` of semaphore `name` (nothing if its acquire never applied).
fn give_back(engine: Arc<Engine>, name: String, id: String) -> BoxFut<'static, ()> {
    Box::pin(give_back_now(engine, name, id))
}

/// Sends the undo until Redis answers it, retrying connection errors with back-off for as long
/// as a permit taken in watchdog mode could still be held (the watchdog timeout and a network
/// timeout: a longer explicit lease ends by itself later). One try used to be all, as the
/// counted semaphore's undo (stop 47): sent while Redis stalled it was lost, and the permit
/// its acquire took when Redis ran again stayed taken for its whole lease.
async fn give_back_now(engine: Arc<Engine>, name: String, id: String) {
    let (started, life) = (
        engine.now(),
        engine.config.watchdog_timeout + engine.config.network_timeout,
    );
    let (engine, name, id) = (&*engine, &*name, &*id);
    let given_back = cleanup::retry(
        engine,
        None,
        || async move {
            let undo = permits::undo(name, id, engine.runtime.wall_clock_ms(), PUBLISH)?;
            permits::decode_release(&waiting::call(engine, &undo).await?)
        },
        |e| e.kind() == ErrorKind::Connection,
        || engine.now().saturating_sub(started) < life,
    )
    .await;
    match given_back {
        Retried::Answered(Ok(ReleaseReply::Unknown)) => {} // the acquire never applied
        Retried::Answered(Ok(_)) => {
            tracing::debug!(semaphore = %name, "gave back the permit of an abandoned acquire")
        }
        Retried::Answered(Err(e)) | Retried::GaveUp(e) => {
            tracing::warn!(semaphore = %name, error = %e, "giving back the permit of an abandoned acquire failed")
        }
    }
}

impl PermitSemaphore {
    /// Longest time [`acquire`](Self::acquire) waits for a permit. `Duration::ZERO` = one try.
    /// Default: no limit.
    pub fn wait(mut self, wait: Duration) -> PermitSemaphore {
        self.wait = Some(wait);
        self
    }

    /// The permits the semaphore starts with: the handle's first [`acquire`](Self::acquire),
    /// [`try_acquire`](Self::try_acquire) or [`available`](Self::available) (of it and its
    /// clones) first sets them if the semaphore does not exist yet, as
    /// [`try_set_permits`](Self::try_set_permits) does (a count that exists is left as it is).
    /// An acquire retries that set within its wait, as it retries its own request. Once per
    /// handle: a count gone later (a restart of Redis without persistence) is not set again
    /// by itself, since permits taken before may still be released into it and a count set
    /// anew would then give out more than declared; call `try_set_permits` then. Checked by
    /// those calls: 1 ..= `i32::MAX`, else `InvalidArgument` with nothing sent.
    pub fn initial_permits(mut self, permits: u64) -> PermitSemaphore {
        self.initial = InitialPermits::new(permits, true);
        self
    }

    /// The semaphore's name (its Redis key).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> Result<()> {
        keys::validate_name(&self.name)?;
        if let Some(n) = self.initial.permits() {
            validate_count("initial permits", n)?;
        }
        waiting::single_node(&self.engine)
    }

    /// Sets the number of permits if the semaphore does not exist yet (Redisson
    /// `trySetPermits`), publishing it. `Ok(false)` when it already exists (left untouched).
    /// The transport's repeat of a request whose reply was lost answers what the first
    /// application answered (`true`), not "already set": each call leaves a short-lived latch
    /// `redlatch_acquire_latch:{name}:<id>` (a key Redisson never reads).
    ///
    /// # Errors
    /// `InvalidArgument` for 0 or more than `i32::MAX` permits, a bad name or a quorum client;
    /// `Connection`/`Redis`/`NoPermission`/`OutOfMemory` when Redis fails.
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        self.check()?;
        validate_count("permits", permits)?;
        try_set_permits(&self.engine, &self.name, permits, true).await
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
        // A permit of this semaphore dropped just before: its background release lands first.
        let bound = engine.config.network_timeout;
        engine.dropped.settled(&self.name, &*engine.runtime, bound).await;
        let renewed = lease_ms.is_none();
        let lease_ms = lease_ms.unwrap_or(engine.config.watchdog_timeout.as_millis() as u64);
        let id = permits::new_permit_ids(1)?.remove(0);
        let mut undo = GiveBackOnDrop::new(engine, &self.name, id.clone(), give_back);
        let mut waiter = Waiter::new(engine, family_keys::semaphore_channel(&self.name), wait);
        loop {
            let started = waiter.attempt_starts();
            if let Err(e) = self.initial.offer(engine, &self.name).await {
                waiter.failed(e, started).await?;
                continue;
            }
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
                    return Ok(self.new_permit(id, Duration::from_millis(lease_ms), renewed, started));
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
                Err(e) => waiter.failed_giving_back(e, started, &mut undo).await?,
            }
        }
    }

    /// `sent`: when its acquire went out (the engine's clock), from which its lease counts.
    fn new_permit(&self, id: String, lease: Duration, renewed: bool, sent: Duration) -> Permit {
        Permit::new(&self.engine, &self.name, id, lease, renewed, sent)
    }

    /// Releases the permit `id` (taken by any client, Java included), by its 32 hex digits.
    ///
    /// # Errors
    /// `InvalidArgument` when `id` is not 32 hex digits (not echoed), a bad name or a quorum
    /// client (nothing sent); `NotOwned` with reason `never_held` when no such permit is held,
    /// `expired` when its lease had ended but it was not given back yet (it is now);
    /// `Connection`/`Redis` when Redis fails: the outcome is unknown, and a retry of the same
    /// id through this handle (or a clone) that finds no such permit returns `Ok` (that
    /// release, or the end of the permit's lease, gave it back), as [`Permit::release`] does.
    /// (Before stop 47 such a retry said `never_held`: a re-trial.)
    pub async fn release(&self, id: &str) -> Result<()> {
        self.check()?;
        permits::validate_permit_id(id)?;
        let result = release_id(&self.engine, &self.name, id).await;
        let mut maybe = self.maybe_released.lock().unwrap_or_else(|p| p.into_inner());
        let earlier = maybe.iter().position(|m| m == id).map(|i| maybe.remove(i));
        match result {
            Err(e) if e.kind() == ErrorKind::Connection => {
                if maybe.len() >= MAX_MAYBE_RELEASED {
                    maybe.pop_front();
                }
                maybe.push_back(id.to_owned());
                Err(e)
            }
            Err(e) if e.reason() == Some(Reason::NeverHeld) && earlier.is_some() => Ok(()),
            other => other,
        }
    }

    /// Permits available now, after giving expired ones back (0 when never set). Sets the
    /// handle's [`initial_permits`](Self::initial_permits) first if not set yet.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name or a quorum client; `Connection`/`Redis` when Redis
    /// fails (one try, no retry).
    pub async fn available(&self) -> Result<u64> {
        self.check()?;
        self.initial.offer(&self.engine, &self.name).await?;
        let request = permits::available(&self.name, self.engine.runtime.wall_clock_ms(), PUBLISH);
        let reply = waiting::call(&self.engine, &request).await?;
        Ok(permits::decode_available(&reply)?.0.max(0) as u64)
    }
}
