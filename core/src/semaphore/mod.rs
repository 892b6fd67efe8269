//! [`Semaphore`]: Redisson's `RSemaphore` (a count of permits in Redis, not owned by anyone).

mod at_close;
pub(crate) mod initial;
mod release;

use crate::client::Client;
use crate::driver::cleanup::{self, Retried};
use crate::driver::waiting::{self, GiveBackOnDrop, Waiter};
use crate::driver::{BoxFut, Engine, CLOSED};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::family::{self, keys as family_keys, semaphore, PUBLISH};
use crate::protocol::{keys, timing, token};
use futures::future::{select, Either};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use at_close::{Counted, GiveBackAtClose};
use initial::InitialPermits;

/// A counting semaphore on key `name`, in Redisson 4.7's `RSemaphore` layout: a STRING holding
/// the permits available, and the channel `redisson_sc:{name}`, whose messages wake waiters
/// (redlatch's and Redisson's). Made by [`Client::semaphore`].
///
/// **Permits are not owned.** Redis only keeps a number: any client may release any number of
/// permits, and nothing gives back the permits of a holder that died (use
/// [`Client::permit_semaphore`] for permits that come back by themselves). This handle keeps
/// its own count of what it acquired ([`Self::held`], shared by its clones): releasing more
/// than that is refused (`NotOwned`, reason `never_held`) before anything is sent, so a handle
/// cannot give back permits it never took. Permits still counted when the handle (its last
/// clone) goes are *not* released then: they stay taken in Redis while the client lives.
/// `Client::close` gives back the permits its semaphore handles still count, live or dropped
/// (before stop 35 it left them taken for good; before stop 45 it skipped dropped handles); a
/// process that ends without `close()` leaves them taken, as one that dies.
///
/// Single-node, Cluster and Sentinel clients; a quorum client is refused with
/// `InvalidArgument` (N independent counters are not one semaphore). Counts are whole
/// permits, 1 ..= `i32::MAX` (Redisson takes `int`), else `InvalidArgument` with nothing sent.
#[derive(Clone)]
pub struct Semaphore {
    engine: Arc<Engine>,
    name: String,
    wait: Option<Duration>,
    /// The permits this handle declares ([`Self::initial_permits`]), offered once.
    initial: InitialPermits,
    /// The permits this handle acquired and the releases whose outcome stayed unknown (see
    /// [`Self::release`]), shared by the clones.
    counted: Counted,
    /// Gives back what `counted` counts when the client is closed (shared by the clones).
    _at_close: Arc<GiveBackAtClose>,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("name", &self.name)
            .field("wait", &self.wait)
            .field("initial_permits", &self.initial.permits())
            .field("held", &self.held())
            .finish()
    }
}

impl Client {
    /// A semaphore on key `name` (Redisson `RSemaphore`; see [`Semaphore`]). Nothing is sent
    /// until a call; set the permits once with [`Semaphore::try_set_permits`], or declare
    /// them with [`Semaphore::initial_permits`].
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let pool = client.semaphore("db-connections");
    /// pool.try_set_permits(10).await?; // once; `false` if already set
    /// pool.acquire(1).await?;
    /// // ... use one of the 10 ...
    /// pool.release(1).await?;
    /// # Ok(()) }
    /// ```
    pub fn semaphore(&self, name: impl Into<String>) -> Semaphore {
        let name = name.into();
        let counted = Counted::default();
        Semaphore {
            _at_close: GiveBackAtClose::register(&self.engine, &name, counted.clone()),
            engine: self.engine.clone(),
            name,
            wait: None,
            initial: InitialPermits::default(),
            counted,
        }
    }
}

/// Undoes acquire `request_id` of semaphore `name` (nothing if it never applied).
fn give_back(engine: Arc<Engine>, name: String, request_id: String) -> BoxFut<'static, ()> {
    Box::pin(give_back_now(engine, name, request_id))
}

/// Sends the undo until Redis answers it, retrying connection errors with back-off for as long
/// as the acquire's latch lives ([`release::count_latch_ttl`]; past it the undo, which only
/// gives back what a latch proves, could do nothing). One try used to be all: an undo sent
/// while Redis stalled failed, and the permits its acquire took when Redis ran again stayed
/// taken for good (a Python trial of stop 47: repeated pauses, acquires whose waits ended).
async fn give_back_now(engine: Arc<Engine>, name: String, request_id: String) {
    let (started, life) = (engine.now(), release::count_latch_ttl(&engine));
    let request = semaphore::undo(&name, &request_id, PUBLISH, life.as_millis() as u64);
    let (engine, request) = (&*engine, &request);
    let undone = cleanup::retry(
        engine,
        None,
        || async move { semaphore::decode_undo(&waiting::call(engine, request).await?) },
        |e| e.kind() == ErrorKind::Connection,
        || engine.now().saturating_sub(started) < life,
    )
    .await;
    match undone {
        Retried::Answered(Ok(0)) => {}
        Retried::Answered(Ok(n)) => {
            tracing::debug!(semaphore = %name, permits = n, "gave back the permits of an abandoned acquire")
        }
        Retried::Answered(Err(e)) => {
            tracing::warn!(semaphore = %name, error = %e, "giving back the permits of an abandoned acquire failed")
        }
        Retried::GaveUp(e) => {
            tracing::warn!(semaphore = %name, error = %e, "giving back the permits of an abandoned acquire failed while its latch lived")
        }
    }
}

impl Semaphore {
    /// Longest time [`acquire`](Self::acquire) waits for permits. `Duration::ZERO` = one try.
    /// Default: no limit (wait until the permits are there).
    pub fn wait(mut self, wait: Duration) -> Semaphore {
        self.wait = Some(wait);
        self
    }

    /// The permits the semaphore starts with: the handle's first [`acquire`](Self::acquire),
    /// [`try_acquire`](Self::try_acquire) or [`available`](Self::available) (of it and its
    /// clones) first sets them if the semaphore does not exist yet, as
    /// [`try_set_permits`](Self::try_set_permits) does (a count that exists is left as it is).
    /// An acquire retries that set within its wait, as it retries its own request. Once per
    /// handle: a count gone later (a restart of Redis without persistence) is not set again
    /// by itself; a release into it is refused (`NotOwned`, reason `deleted`, nothing
    /// written), and `try_set_permits` restores the declared count. Checked by
    /// those calls: 1 ..= `i32::MAX`, else `InvalidArgument` with nothing sent.
    pub fn initial_permits(mut self, permits: u64) -> Semaphore {
        self.initial = InitialPermits::new(permits, false);
        self
    }

    /// The semaphore's name (its Redis key).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Permits this handle (and its clones) acquired and did not release yet.
    pub fn held(&self) -> u64 {
        self.counted.held.load(Ordering::Acquire)
    }

    fn check(&self, what: &str, n: Option<u64>) -> Result<()> {
        keys::validate_name(&self.name)?;
        if let Some(n) = n {
            family::validate_count(what, n)?;
        }
        if let Some(n) = self.initial.permits() {
            family::validate_count("initial permits", n)?;
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
    /// `InvalidArgument` for `permits` of 0 or above `i32::MAX`, a bad name or a quorum
    /// client; `Connection`/`Redis`/`NoPermission`/`OutOfMemory` when Redis fails;
    /// `KeyConflict`-class `Redis` error (WRONGTYPE) when the key holds other data.
    pub async fn try_set_permits(&self, permits: u64) -> Result<bool> {
        self.check("permits", Some(permits))?;
        initial::try_set_permits(&self.engine, &self.name, permits, false).await
    }

    /// Acquires `permits`, waiting up to the handle's [`wait`](Self::wait) (forever by
    /// default). Waiters are woken by the count Redisson (or redlatch) publishes on
    /// `redisson_sc:{name}` after a release, with polling every poll interval as the fallback.
    /// A semaphore never set has 0 permits: the call waits for `try_set_permits` or a release
    /// (or sets the handle's [`initial_permits`](Self::initial_permits) first).
    ///
    /// Cancellation-safe: dropping the future gives back, in the background, permits an
    /// attempt in flight may have taken (each acquire request leaves a short-lived latch
    /// `redlatch_acquire_latch:{name}:<id>` that proves it applied).
    ///
    /// # Errors
    /// `NotAcquired` when the wait runs out; `InvalidArgument` for a bad count or name, or a
    /// quorum client (nothing sent); `Connection` when Redis keeps failing for the network
    /// timeout, or the client was closed meanwhile; `Redis`/`NoPermission`/`OutOfMemory` at once.
    pub async fn acquire(&self, permits: u64) -> Result<()> {
        self.acquire_with_wait(permits, self.wait).await
    }

    /// One attempt, no waiting: `Ok(false)` when fewer than `permits` are available.
    ///
    /// # Errors
    /// As [`Self::acquire`], except that too few permits is `Ok(false)`, not `NotAcquired`.
    pub async fn try_acquire(&self, permits: u64) -> Result<bool> {
        match self.acquire_with_wait(permits, Some(Duration::ZERO)).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Like [`Self::acquire`] with an explicit wait (`None` = forever).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    pub async fn acquire_with_wait(&self, permits: u64, wait: Option<Duration>) -> Result<()> {
        self.check("permits", Some(permits))?;
        if let Some(w) = wait {
            timing::to_millis("wait", w, true)?;
        }
        let registry = &self.engine.registry;
        // Open until the acquire is dropped, for its undo after a close (see Lock::acquire_spec).
        let _connections = self.engine.nodes.keep();
        let acquiring = std::pin::pin!(self.acquire_loop(permits, wait));
        let closed = std::pin::pin!(registry.until_closed());
        match select(acquiring, closed).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(Error::connection(CLOSED)),
        }
    }

    async fn acquire_loop(&self, permits: u64, wait: Option<Duration>) -> Result<()> {
        let engine = &self.engine;
        let mut undo = GiveBackOnDrop::new(engine, &self.name, token::new_token()?, give_back);
        let latch_ttl_ms = release::count_latch_ttl(engine).as_millis() as u64;
        let request = semaphore::acquire_once(&self.name, permits, undo.id(), latch_ttl_ms)?;
        let mut waiter = Waiter::new(engine, family_keys::semaphore_channel(&self.name), wait);
        loop {
            let started = waiter.attempt_starts();
            if let Err(e) = self.initial.offer(engine, &self.name).await {
                waiter.failed(e, started).await?;
                continue;
            }
            undo.armed = true;
            let reply = waiting::call(engine, &request).await;
            match reply.and_then(|r| semaphore::decode_acquire(&r)) {
                Ok(semaphore::AcquireReply::Acquired { .. }) => {
                    undo.armed = false;
                    self.counted.held.fetch_add(permits, Ordering::AcqRel);
                    return Ok(());
                }
                Ok(semaphore::AcquireReply::NotEnough { available }) => {
                    // A definite answer to the same request: no earlier attempt applied.
                    undo.armed = false;
                    if !waiter.not_yet(None).await {
                        return Err(Error::new(
                            ErrorKind::NotAcquired,
                            format!(
                                "semaphore {:?} has {} of the {permits} permit{} asked for; wait ran out",
                                self.name,
                                available.unwrap_or(0).max(0),
                                if permits == 1 { "" } else { "s" }
                            ),
                        ));
                    }
                }
                Err(e) => waiter.failed_giving_back(e, started, &mut undo).await?,
            }
        }
    }

    /// Permits available now: 0 when the semaphore was never set, and 0 when its count is
    /// below zero (Redisson's `reducePermits` can take it there; its `availablePermits` then
    /// returns the negative count; an acquire waits until releases bring it above zero).
    /// Sets the handle's [`initial_permits`](Self::initial_permits) first if not set yet.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name or a quorum client; `Connection`/`Redis` when Redis
    /// fails (one try, no retry).
    pub async fn available(&self) -> Result<u64> {
        self.check("permits", None)?;
        self.initial.offer(&self.engine, &self.name).await?;
        let reply = waiting::call(&self.engine, &semaphore::available(&self.name)).await?;
        Ok(semaphore::decode_available(&reply)?.max(0) as u64)
    }
}
