//! [`Guard`]: one held acquisition.

use crate::driver::{BoxFut, End, Hold};
use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;

/// Proof of one acquisition. Release it with [`Guard::release`]; a guard dropped without
/// release is released in the background on the client's runtime (never blocking the caller).
/// That needs the runtime to keep running: guards still held when it shuts down (a
/// `#[tokio::main]` returning while tasks hold them) are not released, and their keys expire
/// with their lease. Release before shutting down.
///
/// Each guard is its own hold: for reentrant locks, every acquire (re-entry included) gets a
/// guard and each release decrements the hold count once.
///
/// The guards of one reentrant owner on one lock share their validity, because Redis keeps
/// their counts in one hash with one TTL (Redisson's layout): a re-entry, an extend, a renewal
/// or a partial release through any of them resets that TTL to its own lease, and moves the
/// local validity of all of them with it (later, or earlier for a shorter lease). Finding the
/// hash gone through one of them marks all of them lost.
pub struct Guard {
    hold: Arc<Hold>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("name", &self.hold.name)
            .field("fencing_token", &self.hold.fence)
            .field("lost", &self.is_lost())
            .finish()
    }
}

impl Guard {
    pub(crate) fn new(hold: Hold) -> Guard {
        Guard { hold: Arc::new(hold) }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.hold.name
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
    /// lock that is gone. Sub-millisecond values round up to 1 ms. In watchdog mode the next
    /// renewal (every third of the watchdog timeout) sets the lease back to the watchdog
    /// timeout, so `extend` is meant for fixed leases.
    ///
    /// # Errors
    /// `InvalidArgument` for a zero or too large lease; `NotOwned` when the lock was found
    /// gone or taken (the guard is then marked lost); `LockLost` when the loss had already
    /// been seen; `Connection`/`Redis`/`Quorum` when Redis could not be asked.
    pub async fn extend(&self, lease: Duration) -> Result<()> {
        self.hold.extend(lease).await
    }

    /// Releases the hold (decrements the hold count for a reentrant lock).
    ///
    /// # Errors
    /// `NotOwned` when the lock had expired or was taken; `LockLost` when the watchdog, an
    /// extend or [`Guard::is_lost`] had already seen the loss (then nothing is sent; a
    /// release past the local validity that nobody looked at is still sent, since the key
    /// may live on for the drift allowance, and Redis' answer decides);
    /// `Connection`/`Redis`/`Quorum` when Redis failed (the key then expires with its lease;
    /// the watchdog has stopped renewing it either way).
    pub async fn release(self) -> Result<()> {
        self.hold.release().await
    }

    /// Resolves when the hold is lost: renewal or extend found it gone or taken, or its
    /// validity ran out without a successful renewal. Never resolves after a release.
    /// The future is `'static`, so it can be spawned or raced with `select!`.
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

    /// Asks Redis whether this hold is still this owner's.
    ///
    /// # Errors
    /// `Connection`/`Redis` when Redis could not be asked.
    pub async fn owned(&self) -> Result<bool> {
        self.hold.owned().await
    }

    /// Resolves to `true` when the hold is lost, `false` when it is released (bindings use
    /// this to fire lost-lock callbacks without leaking a task per hold).
    pub fn ended(&self) -> BoxFut<'static, bool> {
        let signal = self.hold.signal.clone();
        let runtime = self.hold.engine.runtime.clone();
        Box::pin(async move { signal.ended(&*runtime).await == End::Lost })
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.hold.signal.is_held() {
            let hold = self.hold.clone();
            let runtime = hold.engine.runtime.clone();
            runtime.spawn(Box::pin(async move {
                if let Err(e) = hold.release().await {
                    tracing::debug!(lock = %hold.name, error = %e, "background release of a dropped guard failed");
                }
            }));
        }
    }
}
