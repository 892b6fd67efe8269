//! [`Guard`]: one held acquisition.

use crate::driver::cleanup::{self, Retried};
use crate::driver::{BoxFut, End, Hold};
use crate::error::{Reason, Result};
use crate::origin::{inherited_hold, Origin};
use std::sync::Arc;
use std::time::Duration;

/// Proof of one acquisition. Release it with [`Guard::release`]; a guard dropped without
/// release (or after a release whose outcome stayed unknown) is released in the background on
/// the client's runtime (never blocking the caller), retried with back-off while the hold is
/// valid. That needs the runtime to keep running: guards still held when it shuts down (a
/// `#[tokio::main]` returning while tasks hold them) are not released, and their keys expire
/// with their lease. Release before shutting down.
///
/// Release is at most once and retryable: `release(&self)` either settles the hold (released,
/// or found not ours: later calls return `NotOwned` with reason `never_held`) or, when Redis
/// could not answer (a connection error, a timeout), leaves it held so that calling
/// `release()` again once Redis is reachable releases it, exactly once (see
/// [`Guard::release`]).
///
/// Each guard is its own hold: for reentrant locks, every acquire (re-entry included) gets a
/// guard and each release decrements the hold count once.
///
/// The guards of one reentrant owner on one lock share their validity, because Redis keeps
/// their counts in one hash with one TTL (Redisson's layout): a re-entry, an extend, a renewal
/// or a partial release through any of them resets that TTL to its own lease, and moves the
/// local validity of all of them with it (later, or earlier for a shorter lease); the owner's
/// watchdog-mode guards then renew within a third of a lease shorter than the watchdog
/// timeout, so an inner hold with a short lease never ends the outer watchdog hold. Finding
/// the hash gone through one of them marks all of them lost. The same holds for the holds of one
/// owner on a fair lock, and on the write side of a read/write lock (its `:write` field). Read
/// holds are the exception: each has its own timeout key in Redis, so each guard has its own
/// validity (an extend or renewal through one of them renews all of the owner's read holds in
/// Redis, but moves only its own validity).
///
/// Shareable: every method takes `&self` and the futures of [`lost`](Self::lost) and
/// [`loss`](Self::loss) are `'static`, so bindings keep one guard behind an `Arc` (or `Rc`)
/// and call it from any thread or task; release is still at most once, and an extend in
/// flight finishes before a release starts. [`Client::close`](crate::Client::close) releases
/// every guard still held; later calls on them fail with `Connection`.
///
/// Fork (shared/API.md): a guard inherited by a forked child is its parent's hold, not the
/// child's. In the child [`owned`](Self::owned) is `false`, [`release`](Self::release) and
/// [`extend`](Self::extend) are `NotOwned` (reason `never_held`), [`is_held`](Self::is_held)
/// is `false`, all without touching Redis, and dropping it releases nothing (its memory is
/// left to the child's exit); the parent keeps the lock, and only the parent renews it.
pub struct Guard {
    hold: Arc<Hold>,
    /// The process that acquired it.
    origin: Origin,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("name", &self.hold.name())
            .field("fencing_token", &self.hold.fence)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl Guard {
    /// The guard of a new hold, tracked by its client for `close()`; `None` when the client
    /// was closed meanwhile (the hold is then released in the background).
    pub(crate) fn tracked(hold: Hold) -> Option<Guard> {
        let guard = Guard {
            hold: Arc::new(hold),
            origin: Origin::here(),
        };
        guard.hold.engine.registry.track(&guard.hold).then_some(guard)
    }

    /// The hold behind the guard (the multi-lock releases its members' holds together).
    pub(crate) fn hold(&self) -> &Hold {
        &self.hold
    }

    fn check_open(&self) -> Result<()> {
        self.hold.engine.registry.check_open()
    }

    /// `true` in a forked child of the process that acquired this hold: the hold is the
    /// parent's (see the type's docs on fork).
    pub fn is_inherited(&self) -> bool {
        self.origin.is_foreign()
    }

    /// `true` once the guard's client was closed: a hold still held then was released by
    /// `close()` (bindings tell their users so).
    pub fn is_closed(&self) -> bool {
        self.hold.engine.registry.is_closed()
    }

    /// `true` when [`Client::close`](crate::Client::close) found this hold still held (not
    /// released, not lost) and released it: bindings tell its holder that the hold ended
    /// because the client was closed (a lost-lock callback with "closed"). `false` for a hold
    /// released or lost before the close, and while the client is open.
    pub fn released_by_close(&self) -> bool {
        self.hold.engine.registry.was_released_by_close(self.hold.id)
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        self.hold.name()
    }

    /// The fencing token of this acquisition (`Some` for fenced locks): pass it to the
    /// resource you protect and have it reject tokens older than the newest it saw.
    pub fn fencing_token(&self) -> Option<u64> {
        self.hold.fence
    }

    /// The lease this hold was acquired with (the watchdog timeout in watchdog mode).
    pub fn lease(&self) -> Duration {
        self.hold.lease
    }

    /// Resets the remaining lease to `lease` on Redis (replace, never add). Never re-creates a
    /// lock that is gone. Sub-millisecond values round up to 1 ms. In watchdog mode the
    /// watchdog's next renewal comes within a third of `lease` (sooner than its usual third of
    /// the watchdog timeout when `lease` is shorter) and sets the lease back to the watchdog
    /// timeout, so `extend` is meant for fixed leases.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero or too large lease; `NotOwned` when the lock was found
    /// gone or taken (the guard is then marked lost); `LockLost` when the loss had already
    /// been seen; `Connection`/`Redis`/`Quorum` when Redis could not be asked.
    pub async fn extend(&self, lease: Duration) -> Result<()> {
        if self.is_inherited() {
            return Err(inherited_hold("extend", self.name()));
        }
        self.check_open()?;
        self.hold.extend(lease).await
    }

    /// Releases the hold (decrements the hold count for a reentrant lock), at most once.
    ///
    /// A release whose outcome is unknown (`Connection`, a `Quorum` error with nodes that did
    /// not answer, or an error reply such as `NoPermission` / `OutOfMemory`, which the scripts
    /// raise before changing anything) leaves the guard held: call `release()` again to retry.
    /// The retry sends the same request, so it is exact: the first attempt that applied left
    /// an idempotency latch, and the retry gets its answer back, so a reentrant release never
    /// decrements twice and a lease release that applied is `Ok`. `Ok` means Redis said so:
    /// a retry that finds the key gone or another owner's, with no latch, is `NotOwned`
    /// (the hold may have been lost meanwhile, e.g. to a restart without persistence, and the
    /// next owner's section may have overlapped this one). A lease release's latch lives
    /// twice the network timeout (at least 1 s); a retry later than that, after an attempt
    /// that did apply, cannot tell and says so in its `NotOwned` message. A reentrant
    /// release's latch lives a lease (at least as long). The watchdog stops renewing at the
    /// first attempt either way, so an unreleased key expires with its lease.
    ///
    /// Quorum: `Ok` needs a majority of nodes to answer that they still held it, as an
    /// acquire needs a majority to grant it (Redlock); with fewer it is `NotOwned` (another
    /// owner could have held a majority meanwhile), its key deleted where it was left. A
    /// lease lock's release of a hold already known lost (`LockLost`) deletes its key on the
    /// nodes that still have it too, so they are free for the next owner at once.
    ///
    /// # Errors
    /// Reasons as in [`Reason`]: `NotOwned` (`deleted`, `taken`) when Redis says the hold is
    /// not ours within its validity, or `never_held` when it was already released; `LockLost`
    /// when the loss was known before the call (the reason seen then), or the validity had run
    /// out (`expired`; the release is still sent, since the key may live on for the drift
    /// allowance, and succeeds if Redis still has it as ours); `Connection`, `Quorum`,
    /// `Redis`, `NoPermission`, `OutOfMemory`, `KeyConflict` when Redis failed (retryable, as
    /// above; a reentrant retry later than its latch's life is refused with `Connection` and
    /// settles the guard); `Connection` ("the client is closed") after `Client::close`.
    pub async fn release(&self) -> Result<()> {
        if self.is_inherited() {
            return Err(inherited_hold("release", self.name()));
        }
        self.check_open()?;
        self.hold.release().await
    }

    /// Releases like [`release`](Self::release), for clean-up paths that cannot call again
    /// (the end of a scope, a destructor): when the outcome stays unknown, the release goes on
    /// in the background, retried with back-off while the hold is valid (after that its key
    /// expires with its lease). Returns the first attempt's result.
    ///
    /// # Errors
    /// As [`release`](Self::release).
    pub async fn release_final(&self) -> Result<()> {
        let result = self.release().await;
        self.release_rest_in_background();
        result
    }

    /// Makes a later drop of this guard (its last clone) leave a hold with a fixed lease to
    /// expire with that lease instead of releasing it, for hosts whose hold objects go at no
    /// particular time: a `Held` of the Node and wasm entries is dropped when the garbage
    /// collector finds it unreferenced, which a holder that let go of it (as redis-py or
    /// node-redlock users do, leaving the lock to its lease) cannot foresee (a user trial of
    /// stop 45: a `Held` not kept was released about 2 s into its 60 s lease, while its
    /// holder still worked). A watchdog-renewed hold is still released in the background when
    /// dropped: nothing renews it once its guard is gone.
    pub fn leave_to_its_lease(&self) {
        if self.hold.watch.is_none() {
            self.hold
                .background
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// Goes on releasing in the background when a release left the outcome unknown (the
    /// hold neither released nor known lost) and the client is open.
    pub(crate) fn release_rest_in_background(&self) {
        if !self.hold.signal.is_settled() && !self.is_closed() && !self.is_inherited() {
            release_in_background(&self.hold);
        }
    }

    /// Resolves when the hold is lost: renewal or extend found it gone or taken, or its
    /// validity ran out without a successful renewal. Never resolves after a release.
    /// The future is `'static`, so it can be spawned or raced with `select!`.
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let guard = client.rlock("job:9").acquire().await?; // renewed by the watchdog
    /// tokio::select! {
    ///     () = guard.lost() => eprintln!("lost the lock: stop writing"),
    ///     () = tokio::time::sleep(Duration::from_secs(1)) => guard.release().await?,
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> BoxFut<'static, ()> {
        let ended = self.ended();
        Box::pin(async move {
            if !ended.await {
                std::future::pending::<()>().await;
            }
        })
    }

    /// `true` once the hold is known lost.
    pub fn is_lost(&self) -> bool {
        self.hold.is_lost()
    }

    /// Why the hold was lost (`expired`, `taken` or `deleted`), once it is known lost.
    pub fn lost_reason(&self) -> Option<Reason> {
        self.is_lost().then(|| self.hold.signal.lost_reason()).flatten()
    }

    /// `true` while the guard still holds the lock as far as this client knows: not
    /// released, not lost (a release whose outcome was unknown leaves it held).
    pub fn is_held(&self) -> bool {
        !self.is_lost() && !self.hold.signal.is_settled() && !self.is_inherited()
    }

    /// Asks Redis whether this hold is still this owner's. Redis saying it is gone or another
    /// owner's (a majority of nodes, in quorum mode) is the loss itself: the guard is lost from
    /// then on, with that reason (`deleted`, `taken`), as after a refused extend, and its loss
    /// is reported (`lost()`, the bindings' callbacks); a later `release` is then `LockLost`.
    /// A hold already known lost or released answers `false` without asking: past its validity
    /// the key may still be in Redis for a while (a grant or renewal that a stalled server
    /// applied late), but the hold is over (a lease lock's release, or its watchdog at the
    /// loss, deletes that key).
    ///
    /// # Errors
    /// `Connection`/`Redis` when Redis could not be asked.
    pub async fn owned(&self) -> Result<bool> {
        if self.is_closed() || self.is_inherited() {
            return Ok(false);
        }
        self.hold.owned().await
    }

    /// Resolves to `true` when the hold is lost, `false` when it is released (bindings use
    /// this to fire lost-lock callbacks without leaking a task per hold).
    pub fn ended(&self) -> BoxFut<'static, bool> {
        let loss = self.loss();
        Box::pin(async move { loss.await.is_some() })
    }

    /// Resolves to `Some(reason)` when the hold is lost, `None` when it is released.
    pub fn loss(&self) -> BoxFut<'static, Option<Reason>> {
        let signal = self.hold.signal.clone();
        let runtime = self.hold.engine.runtime.clone();
        Box::pin(async move {
            match signal.ended(&*runtime).await {
                End::Lost(reason) => Some(reason),
                End::Released => None,
            }
        })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.is_inherited() {
            // The parent's hold: never released here. Its `Hold` is kept alive (one strong
            // reference forgotten) so that its destructor, which locks the client's registry,
            // never runs in the child: a thread of the parent may have held that lock at the
            // time of the fork, and no thread here will ever unlock it.
            std::mem::forget(self.hold.clone());
            return;
        }
        if !self.hold.signal.is_settled() {
            release_in_background(&self.hold);
        }
    }
}

/// Starts releasing `hold` in the background (once per hold): a dropped guard, a scope's end,
/// `close()`.
pub(crate) fn release_in_background(hold: &Arc<Hold>) {
    if hold.background.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let runtime = hold.engine.runtime.clone();
    // Acquires of the same lock through this client wait for it (`driver/dropped.rs`).
    let in_flight = hold.engine.dropped.begin(hold.name());
    let hold = hold.clone();
    crate::driver::cleanup::spawn(
        &*runtime,
        Box::pin(async move {
            retry_release(hold).await;
            drop(in_flight);
        }),
    );
}

/// Releases `hold`, retrying while the outcome is unknown and the hold could still be valid
/// (after that its key expires with its lease).
async fn retry_release(hold: Arc<Hold>) {
    let released = cleanup::retry(
        &hold.engine,
        None,
        || hold.release(),
        |e| !hold.signal.is_settled() && !e.is_permanent(),
        || hold.engine.now() < hold.signal.deadline(),
    )
    .await;
    let error = match released {
        Retried::Answered(Ok(())) => return,
        Retried::Answered(Err(e)) | Retried::GaveUp(e) => e,
    };
    tracing::debug!(lock = %hold.name(), error = %error, "background release of a dropped guard failed");
    // No one can release it any more: it expires with its lease instead of being renewed for
    // the life of the process (a release refused for permissions kept the hold renewed, as it
    // must for a caller who may retry; a user trial of stop 43).
    hold.stop_renewals();
}
