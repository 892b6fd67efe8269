//! Releasing a [`Hold`], in two steps so that several holds can share one request: [`begin`]
//! takes the hold's release lock and decides the request's id and latch (or refuses at once),
//! and [`Releasing::settle`] decides the hold's fate from each node's answer for it. A hold
//! released alone sends its kind's release script ([`Hold::release`]); the members of a
//! one-script multi-lock send one `multi_release` for all of them (`multi.rs`), each member
//! still settled by the rules below from its own code in the reply.
//!
//! A release whose outcome is unknown (a connection error or a timeout) leaves the hold held,
//! with its request id kept: the next release sends the same request id again, and its
//! idempotency latch (written by the first attempt that applied) replays the first answer, so
//! a reentrant release never decrements twice and a lease release that applied is never
//! reported as "gone" or "taken". Released means Redis said so: a retry that finds the key
//! gone or another owner's, with no latch, is a refusal (the hold may have been lost, e.g. to
//! a restart without persistence, and another owner's section may have overlapped this one).
//!
//! [`begin`]: Hold::begin_release

use super::hold::Hold;
use super::owner::InFlight;
use super::signal::{End, HoldSignal};
use super::transport::Transport;
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::protocol::family::{rwlock, PUBLISH};
use crate::protocol::quorum;
use crate::protocol::reply::OwnershipReply;
use crate::protocol::request::{Holder, Request};
use futures::lock::MutexGuard;
use std::time::Duration;

/// A release that was sent without an answer: its request id (reused by the retry) and when
/// it was first sent.
pub(crate) struct Pending {
    request_id: String,
    sent: Duration,
}

/// Puts a release that was begun back to "held" if it is dropped before it settles (the
/// outcome is then unknown), so the hold can still be released.
struct Unsettled<'a>(Option<&'a HoldSignal>);

impl Unsettled<'_> {
    fn settle(mut self, settled: bool) {
        if let Some(signal) = self.0.take() {
            signal.finish_release(settled);
        }
    }
}

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        if let Some(signal) = self.0.take() {
            signal.finish_release(false);
        }
    }
}

/// A release begun: the hold's release lock is held until [`settle`](Self::settle).
pub(crate) struct Releasing<'a> {
    hold: &'a Hold,
    pending: MutexGuard<'a, Option<Pending>>,
    unsettled: Unsettled<'a>,
    /// A reentrant release counts as in flight for its owner from before it begins until
    /// Redis answered: a re-acquire that removes counts of lost holds must not race it (see
    /// `drop_orphaned_counts` in grant.rs).
    _in_flight: Option<InFlight>,
    started: Duration,
    still_valid: bool,
    /// A lease release retried after its latch expired may find the key gone (or taken)
    /// although its first attempt released it: it then reports that, never a guess.
    unchecked: bool,
    request_id: String,
    latch_ttl_ms: u64,
    retry: bool,
}

impl Hold {
    /// Releases the hold on every node (at most once; retryable while the outcome is unknown).
    pub(crate) async fn release(&self) -> Result<()> {
        let releasing = match self.begin_release().await {
            Ok(releasing) => releasing,
            Err(e) => {
                self.clear_if_lost(&e).await;
                return Err(e);
            }
        };
        let request = releasing.request();
        let engine = &self.engine;
        let holder = &self.holder;
        // No validity hangs on a release: every node gets the full network timeout, and the
        // call returns once a majority confirmed (the others finish in the background).
        let replies = engine
            .nodes
            .broadcast_until_then(
                &request,
                engine.config.network_timeout,
                &[],
                engine.majority(),
                |r| holder.decode_release(r).is_ok_and(OwnershipReply::was_owned),
                Some(warn_unconfirmed),
            )
            .await;
        let outcomes = replies
            .into_iter()
            .map(|reply| reply.map(|(r, _)| r.and_then(|r| holder.decode_release(&r))))
            .collect();
        releasing.settle(outcomes)
    }

    /// After a release refused with `e`: when the hold was known lost, deletes what it may
    /// have left in Redis ([`clear_lost`]).
    pub(crate) async fn clear_if_lost(&self, e: &Error) {
        if let (ErrorKind::LockLost, Some(reason)) = (e.kind(), self.signal.lost_reason()) {
            clear_lost(&self.engine, self.name(), &self.holder, reason).await;
        }
    }

    /// This hold's release request named `request_id`, its latch kept `latch_ttl_ms` (0: none).
    fn release_request(&self, request_id: &str, latch_ttl_ms: u64) -> Request {
        let now_ms = self.engine.runtime.wall_clock_ms();
        self.holder
            .release(self.name(), self.lease_ms(), request_id, latch_ttl_ms, now_ms)
    }

    /// Starts a release: waits for an extend or release in flight, then either refuses (already
    /// released, known lost, or a reentrant retry too late to be exact) or returns the begun
    /// release, whose request id is the unknown attempt's (a retry) or a new one.
    pub(crate) async fn begin_release(&self) -> Result<Releasing<'_>> {
        self.begin_release_with(None).await
    }

    /// As [`Self::begin_release`], naming a new release `fresh_id` when given (the members of
    /// one multi-lock share one: their latch keys differ by name) instead of a random one.
    pub(crate) async fn begin_release_with(&self, fresh_id: Option<&str>) -> Result<Releasing<'_>> {
        let pending = self.releasing.lock().await;
        let engine = &self.engine;
        let started = engine.now();
        // Known lost at the deadline: still sent (the key may live on for the drift
        // allowance); Redis' answer decides, and a refusal is then `expired`.
        let still_valid = started < self.signal.deadline();
        match self.signal.begin_release() {
            Ok(()) => {}
            Err(End::Released) => return Err(self.refused("release", Reason::NeverHeld)),
            Err(End::Lost(reason)) => {
                self.unwatch();
                return Err(self.lost_error(reason));
            }
        }
        let unsettled = Unsettled(Some(&self.signal));
        self.unwatch();
        let in_flight = engine.in_flight(self.name(), &self.holder);
        let latch_ttl_ms = engine.release_latch_ttl_ms(&self.holder, self.lease);
        let unchecked = pending
            .as_ref()
            .is_some_and(|p| !engine.latch_may_tell(p.sent, Duration::from_millis(latch_ttl_ms)));
        if let (Some(p), Holder::Reentrant { .. }) = (pending.as_ref(), &self.holder) {
            // The latch that makes the retry exact may be gone by the time it arrives.
            if unchecked {
                unsettled.settle(true);
                return Err(Error::connection(format!(
                    "release of {:?}: the outcome of the attempt sent {} ms ago is unknown and \
                     can no longer be checked exactly (its idempotency latch expired); the \
                     hold's count stays until the lock's TTL ends",
                    self.name(),
                    started.saturating_sub(p.sent).as_millis()
                )));
            }
        }
        let retry = pending.is_some();
        let request_id = match (pending.as_ref(), fresh_id) {
            (Some(p), _) => p.request_id.clone(),
            (None, Some(id)) => id.to_owned(),
            (None, None) => self.new_release_id()?,
        };
        let mut releasing = Releasing {
            hold: self,
            pending,
            unsettled,
            _in_flight: in_flight,
            started,
            still_valid,
            unchecked,
            request_id,
            latch_ttl_ms,
            retry,
        };
        if !retry {
            *releasing.pending = Some(Pending {
                request_id: releasing.request_id.clone(),
                sent: started,
            });
        }
        Ok(releasing)
    }
}

/// `true` when a hold of `holder` lost for `reason` may have left a key that
/// [`clear_lost`] deletes.
pub(super) fn leaves_a_key(engine: &super::Engine, holder: &Holder, reason: Reason) -> bool {
    match holder {
        Holder::Lease { .. } => reason == Reason::Expired || engine.is_quorum(),
        // Its count, while other readers keep the hash alive (`clear_lost`).
        Holder::Read { .. } => reason == Reason::Expired,
        _ => false,
    }
}

/// Deletes what a lease hold known lost may have left in Redis, which would keep every next
/// owner out for the rest of its TTL (compare-and-delete on its token, so never another
/// owner's key; no latch, answers ignored; at most one network timeout). Sent when:
/// - its validity ran out (`Expired`): Redis may hold the key longer than this client counts,
///   from a grant or renewal that a stalled server applied after it was sent (a renewal queued
///   during a pause extends the key for a whole lease when the server resumes; a user trial of
///   stop 43 found such keys kept for 30 s after the loss was reported, and after the release);
/// - a quorum's majority lost it: the other nodes may keep theirs.
///
/// A read hold whose lease ran out leaves its count in the hash while other readers keep it
/// alive, where it makes its owner's write acquire an upgrade (refused) and its next read
/// count twice (a user trial of stop 44): the owner's expired holds are removed, none of its
/// live ones (`rwlock::read_release_lost`).
///
/// A reentrant hold's counts are left: one owner's re-acquire may meet them, and the orphan
/// rule (`owner.rs`) removes them then; a count removed here could be that re-acquire's own.
pub(super) async fn clear_lost(engine: &super::Engine, name: &str, holder: &Holder, reason: Reason) {
    if !leaves_a_key(engine, holder, reason) {
        return;
    }
    let Ok(request_id) = holder.release_id() else {
        return;
    };
    let request = match holder {
        Holder::Read { owner } => {
            let latch_ttl_ms = engine.latch_ttl_ms();
            rwlock::read_release_lost(name, owner, PUBLISH, &request_id, latch_ttl_ms)
        }
        _ => holder.release(name, 0, &request_id, 0, engine.runtime.wall_clock_ms()),
    };
    let _ = engine
        .nodes
        .broadcast(&request, engine.config.network_timeout)
        .await;
}

impl Releasing<'_> {
    pub(crate) fn hold(&self) -> &Hold {
        self.hold
    }

    /// The id naming this release's latch (`redisson_unlock_latch:{N}:<id>`).
    pub(crate) fn request_id(&self) -> &str {
        &self.request_id
    }

    /// How long this release's latch lives.
    pub(crate) fn latch_ttl_ms(&self) -> u64 {
        self.latch_ttl_ms
    }

    /// `true` when this sends again a release whose outcome was unknown: it then goes out as
    /// EVAL, since on a slow node with an empty script cache the NOSCRIPT answer to an EVALSHA
    /// can come after the timeout, and the release would never land.
    pub(crate) fn is_retry(&self) -> bool {
        self.retry
    }

    /// The hold's own release request.
    fn request(&self) -> Request {
        let mut request = self.hold.release_request(&self.request_id, self.latch_ttl_ms);
        request.by_source = self.retry;
        request
    }

    /// Settles the release from each node's answer for this hold (`None`: not awaited).
    ///
    /// # Errors
    /// As `Guard::release`.
    pub(crate) fn settle(mut self, outcomes: Vec<Option<Result<OwnershipReply>>>) -> Result<()> {
        let hold = self.hold;
        let engine = &hold.engine;
        let elapsed = engine.now() - self.started;
        let (mut yes, mut still_held, mut taken, mut errors) = (0, 0, 0, Vec::new());
        // Each node's outcome, for a quorum error (a user trial of stop 41 found its list empty).
        let mut reasons = Vec::with_capacity(outcomes.len());
        for (i, outcome) in outcomes.into_iter().enumerate() {
            reasons.push(match &outcome {
                None => Err(super::NOT_AWAITED.to_owned()),
                Some(Ok(o)) => o.node_outcome(),
                Some(Err(e)) => Err(e.to_string()),
            });
            let Some(decoded) = outcome else { continue };
            match decoded {
                Ok(OwnershipReply::HandedOff) => engine.note_handoff(hold.name()),
                Ok(OwnershipReply::StillHeld) => still_held += 1,
                _ => {}
            }
            // Only Redis' word counts as released: this request applied now, or its latch
            // says an earlier attempt did (a retry after a lost reply replays the first
            // answer). A retry that finds the key gone or another owner's is a refusal: the
            // hold may have been lost (expired, a restart without persistence) and the next
            // owner's section may have overlapped this one.
            match decoded {
                Ok(o) if o.was_owned() => yes += 1,
                Ok(OwnershipReply::Taken) => taken += 1,
                Ok(_) => {}
                Err(e) => errors.push((i, e)),
            }
        }
        let majority = engine.majority();
        if still_held >= majority {
            // A partial release reset the hash's TTL to this hold's lease: that is now the
            // validity of the owner's other holds.
            // (None: it took longer than the lease, so nothing is known to be left of it.)
            let left = quorum::validity(hold.lease, elapsed).unwrap_or(Duration::ZERO);
            hold.signal.set_deadline(self.started + left);
            engine.ttl_set_for_owner(hold.signal.validity(), hold.lease, self.started);
        }
        // Released means a majority still held it until now (Redlock): with fewer, another
        // owner could have taken a majority meanwhile, as `owned()` and extends tell too.
        if yes >= majority {
            for (i, e) in &errors {
                engine
                    .nodes
                    .warn(*i, "release", unconfirmed_message(engine.nodes.label(*i), e));
            }
            tracing::debug!(lock = %hold.name(), "released");
            *self.pending = None;
            self.unsettled.settle(true);
            return Ok(());
        }
        let unconfirmed = errors.len();
        let unknown = match errors.into_iter().next() {
            Some((_, e)) if !engine.is_quorum() => Some(e),
            // Nodes that did not answer might still have held it: not a definite "not owned".
            Some(_) if yes + unconfirmed >= majority => Some(
                Error::new(
                    ErrorKind::Quorum,
                    format!(
                        "release of {:?} was confirmed by {yes} node(s) and {unconfirmed} did not answer; a majority is {majority}",
                        hold.name()
                    ),
                )
                .with_nodes(engine.nodes.outcomes(reasons)),
            ),
            _ => None,
        };
        if let Some(e) = unknown {
            // The hold stays held: the caller may release it again once Redis is back. An
            // error reply (ACL, OOM) came from a script that changed nothing, so the next
            // attempt is a fresh one; after a connection error or a timeout it may have
            // applied, and the retry sends the same request.
            let refused = !matches!(e.kind(), ErrorKind::Connection | ErrorKind::Quorum);
            if refused {
                *self.pending = None;
            }
            self.unsettled.settle(false);
            if refused {
                // After `settle`: a watchdog round between the two would drop an entry whose
                // hold is still "releasing" (a CI run lost a hold this way or to its validity).
                hold.rewatch();
            }
            return Err(e);
        }
        *self.pending = None;
        self.unsettled.settle(true);
        let reason = match (self.still_valid, taken > 0) {
            (false, _) => Reason::Expired,
            (true, true) => Reason::Taken,
            (true, false) => Reason::Deleted,
        };
        let err = hold.refused("release", reason);
        if !self.unchecked {
            return Err(err);
        }
        Err(Error::not_owned(
            err.kind() == ErrorKind::LockLost,
            reason,
            format!(
                "{}; an earlier attempt, whose outcome was unknown, may have released it, but \
                 its idempotency latch had expired, so that cannot be told from a loss",
                err.message()
            ),
        ))
    }
}

/// The deployment warning (kind `"release"`) for a node of a quorum that did not confirm a
/// release although a majority did (shared/API.md: a quorum release "reports unreachable
/// nodes as a warning, not an error"), whether its answer came before the release returned
/// or after. Once per node and client (a node down is a deployment condition, not news on
/// every release); later ones are `tracing` debug events.
pub(super) fn warn_unconfirmed(transport: &dyn Transport, error: &Error) {
    transport.warn("release", unconfirmed_message(transport.label(), error));
}

fn unconfirmed_message(node: &str, error: &Error) -> String {
    // A node refused for its configuration (another node's server, a database it lacks) is
    // not down: say to fix the URL (a user trial read "check that the node is up").
    let check = if error.kind() == ErrorKind::InvalidArgument {
        "check the quorum's URLs"
    } else {
        "check that the node is up"
    };
    format!(
        "{node}: a node of the quorum did not confirm a release ({error}); a majority released the lock, and its key on this node expires with the lease (said once per node; {check})"
    )
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/release.rs"]
mod tests;
