//! The permits a semaphore handle declares it starts with (`Semaphore::initial_permits`,
//! `PermitSemaphore::initial_permits`): offered with Redisson's `trySetPermits` by the
//! handle's first acquire or `available`, which retries the offer within its own wait, as it
//! does its acquire (the bindings offered them by a call of their own, which a Redis paused
//! for longer than a network timeout failed at once, however long the acquire could wait:
//! a Python and a Node family trial of stop 46).

use crate::driver::waiting;
use crate::driver::Engine;
use crate::error::Result;
use crate::protocol::family::{keys as family_keys, semaphore, PUBLISH};
use crate::protocol::token;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Sets the number of permits of semaphore `name` if it does not exist yet (Redisson
/// `trySetPermits`), publishing it: `Ok(true)` when set. Its short-lived latch makes the
/// transport's repeat of a request whose reply was lost answer `true` again.
/// `permit_set`: the permit-expirable semaphore's (its permit ZSET is checked too, and the count
/// is not set over application data there).
pub(crate) async fn try_set_permits(
    engine: &Engine,
    name: &str,
    permits: u64,
    permit_set: bool,
) -> Result<bool> {
    let mut request = semaphore::try_set_permits_once(
        name,
        permits,
        None,
        PUBLISH,
        &token::new_token()?,
        engine.latch_ttl_ms(),
    )?;
    if permit_set {
        request.keys.push(family_keys::permit_timeouts(name));
    }
    semaphore::decode_try_set(&waiting::call(engine, &request).await?)
}

/// A handle's declared permits, offered once per handle and its clones (shared flag).
#[derive(Clone, Default)]
pub(crate) struct InitialPermits {
    permits: Option<u64>,
    /// A permit-expirable semaphore's (see [`try_set_permits`]).
    permit_set: bool,
    offered: Arc<AtomicBool>,
}

impl InitialPermits {
    pub(crate) fn new(permits: u64, permit_set: bool) -> InitialPermits {
        InitialPermits {
            permits: Some(permits),
            permit_set,
            offered: Arc::default(),
        }
    }

    /// The declared count, if any (validated by the handle's checks before anything is sent).
    pub(crate) fn permits(&self) -> Option<u64> {
        self.permits
    }

    /// Offers the permits unless this handle already did (whoever set them: a count that
    /// exists is left as it is). An error leaves them to the next try.
    ///
    /// # Errors
    /// As [`try_set_permits`]: `Connection`, `Redis`, `KeyConflict` when the key holds other data.
    pub(crate) async fn offer(&self, engine: &Engine, name: &str) -> Result<()> {
        let Some(permits) = self.permits else {
            return Ok(());
        };
        if self.offered.load(Ordering::Acquire) {
            return Ok(());
        }
        try_set_permits(engine, name, permits, self.permit_set).await?;
        self.offered.store(true, Ordering::Release);
        Ok(())
    }
}

impl std::fmt::Debug for InitialPermits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InitialPermits")
            .field("permits", &self.permits)
            .field("offered", &self.offered.load(Ordering::Relaxed))
            .finish()
    }
}
