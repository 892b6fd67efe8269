//! A [`Semaphore`] handle's release: the idempotency latch of each release, the releases of
//! unknown outcome a handle remembers for its retry, and their settling in the background.

use super::Semaphore;
use crate::driver::cleanup::{self, Retried};
use crate::driver::waiting;
use crate::driver::Engine;
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::protocol::family::{semaphore, PUBLISH};
use crate::protocol::token;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How many releases of unknown outcome a handle remembers.
const MAX_UNSETTLED: usize = 64;

/// A release that failed with a connection error (it may have applied): its request id, which
/// the next release of the same count sends again, so that its latch decides.
pub(super) struct UnsettledRelease {
    pub(super) permits: u64,
    pub(super) request_id: String,
    pub(super) sent: Duration,
}

impl Semaphore {
    /// Releases `permits` this handle acquired, publishing the new count (which wakes waiters).
    ///
    /// Each release leaves a latch `redisson_unlock_latch:{name}:<id>` for the client's
    /// watchdog timeout plus a network timeout (31 s by default; at least two network
    /// timeouts, at least 1 s), so the transport's repeat after a lost reply adds nothing
    /// twice. A release that failed with `Connection` may have applied: the handle
    /// keeps its request id, and the next release of the same count (a caller's retry) sends
    /// that id again, so it is exact while the latch lives (from the first send); after that
    /// Redis cannot tell, so the retry is not sent: it fails with `NotOwned` (reason
    /// `expired`) and the permits leave this handle's count (they were given back once, or
    /// not at all; never twice). Until such a release is settled its permits cannot be given
    /// back by a release of another count either.
    ///
    /// # Errors
    /// `NotOwned` (reason `never_held`) when `permits` is more than [`held`](Self::held)
    /// less the permits of unsettled releases of other counts, nothing sent; `NotOwned` (reason `expired`) for the retry of a release of unknown outcome
    /// whose latch has expired (see above), nothing sent; `NotOwned` (reason `deleted`) when the
    /// semaphore has no count any more (deleted, expired, or lost in a restart of Redis
    /// without persistence): nothing is written (a count made by the release would leave the
    /// semaphore short once `try_set_permits` found it set) and the permits leave this
    /// handle's count, so `try_set_permits` restores the declared count; `InvalidArgument` for a bad count or name, or a quorum client;
    /// `Connection`/`Redis`/`NoPermission`/`OutOfMemory` when Redis fails (the permits then
    /// still count as held by this handle, so the release can be retried).
    pub async fn release(&self, permits: u64) -> Result<()> {
        self.check("permits", Some(permits))?;
        // The permits of releases of unknown outcome (other than the one this may retry) are
        // not free to release again: they may be back in Redis already (a Rust user trial of
        // stop 45: release(2) timed out but applied, then release(1) twice took a semaphore of
        // 3 to 5).
        let unsettled = self.unsettled_besides(permits);
        let taken = self
            .counted
            .held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| {
                h.checked_sub(unsettled)?
                    .checked_sub(permits)
                    .map(|_| h - permits)
            });
        if let Err(held) = taken {
            let s = |n: u64| if n == 1 { "" } else { "s" };
            let pending = match unsettled {
                0 => String::new(),
                n => format!(
                    ", {n} of them in a release whose outcome is unknown (release that count again to settle it)"
                ),
            };
            return Err(Error::not_owned(
                false,
                Reason::NeverHeld,
                format!(
                    "cannot release {permits} permit{} of semaphore {:?}: this handle holds {held}{pending}",
                    s(permits),
                    self.name
                ),
            ));
        }
        let engine = &self.engine;
        let (request_id, sent) = match self.take_unsettled(permits) {
            Some(earlier) if self.latch_may_tell(&earlier) => (earlier.request_id, earlier.sent),
            // Its latch may be gone: sending it again would give the permits back twice if it
            // applied (a user trial of stop 42: a retry 3 s later took a semaphore of 3 to 4).
            // So Redis is asked whether the latch is still there (it lives from when Redis
            // applied the release, which a pause can make later than the send: a user trial of
            // stop 44 was refused with it there); if not, that cannot be told, and the permits
            // leave this handle.
            Some(earlier) => {
                let request = semaphore::replay_release(&self.name, permits, PUBLISH, &earlier.request_id)?;
                let replayed = waiting::call(engine, &request)
                    .await
                    .and_then(|reply| semaphore::decode_replay(&reply));
                match replayed {
                    Ok(true) => return Ok(()),
                    Ok(false) => {}
                    Err(e) => {
                        // Still unknown: kept for another retry.
                        self.counted.held.fetch_add(permits, Ordering::AcqRel);
                        self.keep_unsettled(earlier);
                        return Err(e);
                    }
                }
                return Err(Error::not_owned(
                    false,
                    Reason::Expired,
                    format!(
                        "semaphore {:?}: an earlier release of {permits} permit{}, whose outcome was unknown, may have given them back, but its idempotency latch has expired, so that cannot be told; not sent again (that could give them back twice), and this handle no longer counts them",
                        self.name,
                        if permits == 1 { "" } else { "s" }
                    ),
                ));
            }
            None => (token::new_token()?, engine.now()),
        };
        match send_release(engine, &self.name, permits, &request_id, false).await {
            Ok(()) => Ok(()),
            // The count is gone, and the permits with it: they leave this handle.
            Err(e) if e.reason() == Some(Reason::Deleted) => Err(e),
            Err(e) => {
                self.counted.held.fetch_add(permits, Ordering::AcqRel);
                if e.kind() == ErrorKind::Connection {
                    self.keep_unsettled(UnsettledRelease {
                        permits,
                        request_id,
                        sent,
                    });
                }
                Err(e)
            }
        }
    }

    /// Gives back everything this handle and its clones count, for the end of a handle whose
    /// caller cannot call again (the C `redlatch_semaphore_free`, so the C++ destructor): a
    /// release of unknown outcome is sent again with its request id (its latch decides, so a
    /// release that applied is not given back twice), the rest is released; failures are
    /// logged, as at `Client::close`. Before stop 45 the C handle released its whole count,
    /// which gave back twice the permits of a release that had applied unseen.
    pub async fn release_all_final(&self) {
        let (permits, unsettled) = self.counted.take();
        super::at_close::give_back(&self.engine, &self.name, permits, unsettled).await;
    }

    /// Releases like [`release`](Self::release), for clean-up paths that cannot call again
    /// (the end of a scope, a destructor): when the outcome stays unknown (`Connection`), the
    /// permits leave this handle's count anyway, and the same release (its request id, so
    /// that its latch decides) is sent again in the background, with back-off, while that
    /// latch can still tell whether it applied; after that it is left alone, since sending it
    /// again could give the permits back twice. (Before stop 35 a scope whose release timed
    /// out kept the permits counted while the release applied late, so the handle's next
    /// release, or a C++ `Semaphore`'s destructor, gave them back a second time.) Returns the
    /// first attempt's result.
    ///
    /// # Errors
    /// As [`release`](Self::release).
    pub async fn release_final(&self, permits: u64) -> Result<()> {
        let result = self.release(permits).await;
        if let Some(e) = result
            .as_ref()
            .err()
            .filter(|e| e.kind() == ErrorKind::Connection)
        {
            if let Some(unsettled) = self.take_unsettled(permits) {
                let _ = self
                    .counted
                    .held
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| h.checked_sub(permits));
                self.settle_in_background(unsettled, e.clone());
            }
        }
        result
    }

    /// Sends `unsettled`, whose first try failed with `error` (a connection error), again
    /// until Redis answers it, while its latch can still tell.
    fn settle_in_background(&self, unsettled: UnsettledRelease, error: Error) {
        let (engine, name) = (self.engine.clone(), self.name.clone());
        cleanup::spawn(
            &*self.engine.runtime,
            Box::pin(async move {
                let (engine, name, unsettled) = (&*engine, &*name, &unsettled);
                let (permits, id) = (unsettled.permits, &*unsettled.request_id);
                // By source: on a slow node whose script cache is empty, an EVALSHA's NOSCRIPT
                // answer could come after each try's timeout, and the release would never land.
                let settled = cleanup::retry(
                    engine,
                    Some(error),
                    || send_release(engine, name, permits, id, true),
                    |e| e.kind() == ErrorKind::Connection,
                    || latch_may_tell(engine, unsettled),
                )
                .await;
                match settled {
                    Retried::Answered(Ok(())) => {}
                    Retried::Answered(Err(e)) => {
                        tracing::warn!(semaphore = %name, error = %e, "a release whose outcome is unknown failed again")
                    }
                    Retried::GaveUp(_) => {
                        tracing::warn!(semaphore = %name, permits, "a release whose outcome is unknown could not be confirmed while its latch lived; the permits may not have been given back")
                    }
                }
            }),
        );
    }

    /// Remembers a release whose outcome is unknown, for the handle's retry (bounded: the
    /// oldest go, for a handle retrying none of them).
    fn keep_unsettled(&self, release: UnsettledRelease) {
        if let Ok(mut unsettled) = self.counted.unsettled.lock() {
            if unsettled.len() >= MAX_UNSETTLED {
                unsettled.remove(0);
            }
            unsettled.push(release);
        }
    }

    /// The permits of the unsettled releases, besides one of `permits` (which a release of
    /// that count retries).
    fn unsettled_besides(&self, permits: u64) -> u64 {
        let Ok(unsettled) = self.counted.unsettled.lock() else {
            return 0;
        };
        let total: u64 = unsettled.iter().map(|u| u.permits).sum();
        let retried = unsettled.iter().any(|u| u.permits == permits);
        total - if retried { permits } else { 0 }
    }

    /// The earliest unsettled release of `permits`, however old (see
    /// [`latch_may_tell`](Self::latch_may_tell)).
    fn take_unsettled(&self, permits: u64) -> Option<UnsettledRelease> {
        let mut unsettled = self.counted.unsettled.lock().ok()?;
        let i = unsettled.iter().position(|u| u.permits == permits)?;
        Some(unsettled.remove(i))
    }

    /// Whether the latch of `earlier`, if it applied, is still there when its id is sent again
    /// now (see the function of that name below).
    fn latch_may_tell(&self, earlier: &UnsettledRelease) -> bool {
        latch_may_tell(&self.engine, earlier)
    }
}

/// Whether the latch of `earlier`, if it applied, is certainly still there when its id, sent
/// again now, reaches Redis (the engine's one rule: `Engine::latch_may_tell`).
pub(super) fn latch_may_tell(engine: &Engine, earlier: &UnsettledRelease) -> bool {
    engine.latch_may_tell(earlier.sent, count_latch_ttl(engine))
}

/// How long a semaphore's request latches live (a release's, and an acquire's, which its undo
/// needs as proof): the client's watchdog timeout (default 30 s; at least its latch TTL),
/// plus a network timeout, the longest a re-send may leave after [`latch_may_tell`] said yes.
/// A semaphore's count has no TTL, so a request whose outcome stays unknown must stay exact
/// to settle, in the background or by the caller, for as long as a stall of Redis may last, as
/// a reentrant release's latch lives its hold's lease. With two network timeouts, a release
/// that could not be sent while Redis was paused for longer (connections killed, then every
/// new one's set-up held) was given up in the background, its permits taken for good (a
/// re-trial of stop 46); so was the undo of an acquire whose wait ended in repeated pauses (a
/// Python trial of stop 47). Redisson never reads these keys (the ids are random).
pub(super) fn count_latch_ttl(engine: &Engine) -> Duration {
    let life = Duration::from_millis(engine.latch_ttl_ms()).max(engine.config.watchdog_timeout);
    life + engine.config.network_timeout
}

/// Sends the release of `permits` as request `request_id` (its latch makes a repeat exact;
/// `by_source`: as `EVAL`) and waits for Redis' answer. Used by a release, its background
/// settling and `Client::close` (`at_close.rs`).
pub(super) async fn send_release(
    engine: &Engine,
    name: &str,
    permits: u64,
    request_id: &str,
    by_source: bool,
) -> Result<()> {
    let ttl_ms = count_latch_ttl(engine).as_millis() as u64;
    let mut request = semaphore::release_once(name, permits, PUBLISH, request_id, ttl_ms)?;
    request.by_source = by_source;
    let reply = waiting::call(engine, &request).await?;
    if semaphore::released_into_no_count(&reply) {
        return Err(Error::not_owned(
            false,
            Reason::Deleted,
            format!(
                "semaphore {name:?} has no count (deleted, expired, or lost in a restart of Redis without persistence): the permits held went with it, and none were released; set the count again with try_set_permits"
            ),
        ));
    }
    semaphore::decode_release(&reply).map(|_| ())
}
