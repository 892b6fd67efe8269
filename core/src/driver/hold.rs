//! One acquisition: release, extend, ownership check and the lost signal.
//!
//! Errors for a hold that is not (or no longer) ours follow one rule, decided here for every
//! binding (see [`Reason`]):
//! - `LockLost` when the loss was known before the call: the watchdog, an extend or another
//!   hold of the owner found the key gone or taken (the reason seen then), or the hold's
//!   validity ran out before the call started (`expired`; a release is still sent then, since
//!   the key may live on for the drift allowance, and succeeds if Redis still has it as ours);
//! - `NotOwned` when this call is the first to find it: `deleted` (key gone) or `taken`
//!   (another owner holds it), within the validity; `never_held` when the hold was already
//!   released.
//!
//! A release whose outcome is unknown (a connection error or a timeout) leaves the hold held,
//! with its request id kept: the next [`Hold::release`] sends the same request again, and its
//! idempotency latch (written by the first attempt that applied) replays the first answer, so
//! a reentrant release never decrements twice and a lease release that applied is never
//! reported as "gone" or "taken". Released means Redis said so: a retry that finds the key
//! gone or another owner's, with no latch, is a refusal (the hold may have been lost, e.g. to
//! a restart without persistence, and another owner's section may have overlapped this one).

use super::signal::{End, HoldSignal};
use super::Engine;
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::protocol::quorum::{self, Tally};
use crate::protocol::reply::OwnershipReply;
use crate::protocol::request::{self, Holder};
use crate::protocol::{reply, timing};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Hold {
    /// Its id in the client's registry of live holds (see `registry.rs`).
    pub(crate) id: u64,
    pub(crate) engine: Arc<Engine>,
    pub(crate) name: String,
    pub(crate) holder: Holder,
    pub(crate) lease: Duration,
    pub(crate) fence: Option<u64>,
    pub(crate) signal: Arc<HoldSignal>,
    /// Watchdog registration (watchdog mode only).
    pub(crate) watch_id: Option<u64>,
    /// Serializes releases; holds the release sent whose outcome is still unknown.
    /// Extends take it too, so a release waits for an extend in flight instead of racing it.
    pub(crate) releasing: futures::lock::Mutex<Option<Pending>>,
    /// Set once a background release (of a dropped guard, a scope's end, `close()`) runs, so
    /// that only one does.
    pub(crate) background: std::sync::atomic::AtomicBool,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.engine.registry.untrack(self.id);
    }
}

/// A release that was sent without an answer: its request id (reused by the retry) and when
/// it was first sent.
pub(crate) struct Pending {
    request_id: String,
    sent: Duration,
}

/// Puts a release that was begun back to "held" if its future is dropped midway (the outcome
/// is then unknown), so the hold can still be released.
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

impl Hold {
    fn lease_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    fn lost_error(&self, reason: Reason) -> Error {
        Error::not_owned(
            true,
            reason,
            format!("lock {:?} was lost while held ({reason})", self.name),
        )
    }

    fn refused(&self, what: &str, reason: Reason) -> Error {
        let why = match reason {
            Reason::Deleted => "the key is gone",
            Reason::Taken => "another owner holds it",
            Reason::Expired => "its lease ran out",
            Reason::NeverHeld => "this hold was already released",
        };
        let lost = reason == Reason::Expired;
        Error::not_owned(
            lost,
            reason,
            format!(
                "cannot {what} lock {:?}: not held by this owner ({why})",
                self.name
            ),
        )
    }

    fn unwatch(&self) {
        if let Some(id) = self.watch_id {
            self.engine.watchdog.unregister(id);
        }
    }

    /// `true` once the hold is known lost (found gone, or its validity ran out).
    pub(crate) fn is_lost(&self) -> bool {
        self.signal.is_lost_at(self.engine.now())
    }

    /// `true` when the hold is still held once a release or extend in flight has finished
    /// (`Client::close` asks, to tell the holders of the holds it releases).
    pub(crate) async fn held_when_idle(&self) -> bool {
        let _idle = self.releasing.lock().await;
        !self.is_lost() && !self.signal.is_settled()
    }

    /// Releases the hold on every node (at most once; retryable while the outcome is unknown).
    pub(crate) async fn release(&self) -> Result<()> {
        let mut pending = self.releasing.lock().await;
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
        // A reentrant release counts as in flight for its owner from before it begins until
        // Redis answered: a re-acquire that removes counts of lost holds must not race it
        // (see `drop_orphaned_counts` in acquire.rs).
        let _in_flight = engine.in_flight(&self.name, &self.holder);
        let latch_ttl = engine.release_latch_ttl_ms(&self.holder, self.lease);
        // A lease release retried after its latch expired may find the key gone (or taken)
        // although its first attempt released it: it then reports that, never a guess.
        let unchecked = pending.as_ref().is_some_and(|p| {
            started.saturating_sub(p.sent) + engine.config.network_timeout >= Duration::from_millis(latch_ttl)
        });
        if let (Some(p), Holder::Reentrant { .. }) = (pending.as_ref(), &self.holder) {
            // The latch that makes the retry exact may be gone by the time it arrives.
            let window = Duration::from_millis(latch_ttl).saturating_sub(engine.config.network_timeout);
            if started.saturating_sub(p.sent) >= window {
                unsettled.settle(true);
                return Err(Error::connection(format!(
                    "release of {:?}: the outcome of the attempt sent {} ms ago is unknown and \
                     can no longer be checked exactly (its idempotency latch expired); the \
                     hold's count stays until the lock's TTL ends",
                    self.name,
                    started.saturating_sub(p.sent).as_millis()
                )));
            }
        }
        let request_id = match pending.as_ref() {
            Some(p) => p.request_id.clone(),
            None => self.holder.release_id()?,
        };
        let now_ms = engine.runtime.wall_clock_ms();
        let mut req = self
            .holder
            .release(&self.name, self.lease_ms(), &request_id, latch_ttl, now_ms);
        // A retry goes out as EVAL: on a slow node with an empty script cache the NOSCRIPT
        // answer to an EVALSHA can come after the timeout, and the release would never land.
        req.by_source = pending.is_some();
        if pending.is_none() {
            *pending = Some(Pending {
                request_id,
                sent: started,
            });
        }
        // No validity hangs on a release: every node gets the full network timeout, and the
        // call returns once a majority confirmed (the others finish in the background).
        let holder = &self.holder;
        let replies = engine
            .nodes
            .broadcast_until(&req, engine.config.network_timeout, &[], engine.majority(), |r| {
                holder.decode_release(r).is_ok_and(OwnershipReply::was_owned)
            })
            .await;
        let elapsed = engine.now() - started;
        let (mut yes, mut still_held, mut absent, mut taken, mut errors) = (0, 0, 0, 0, Vec::new());
        for (i, reply) in replies.into_iter().enumerate() {
            let Some((r, _)) = reply else { continue };
            let decoded = r.and_then(|r| self.holder.decode_release(&r));
            match decoded {
                Ok(OwnershipReply::HandedOff) => engine.note_handoff(&self.name),
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
                Ok(OwnershipReply::Absent) => absent += 1,
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
            let left = quorum::validity(self.lease, elapsed).unwrap_or(Duration::ZERO);
            self.signal.set_deadline(started + left);
        }
        if yes >= majority || (yes >= 1 && yes + absent >= majority) {
            for (i, e) in &errors {
                tracing::warn!(lock = %self.name, node = engine.nodes.label(*i), error = %e, "release did not reach a node; its key expires with the lease");
            }
            tracing::debug!(lock = %self.name, "released");
            *pending = None;
            unsettled.settle(true);
            return Ok(());
        }
        let unconfirmed = errors.len();
        let unknown = match errors.into_iter().next() {
            Some((_, e)) if !engine.is_quorum() => Some(e),
            // Nodes that did not answer might still have held it: not a definite "not owned".
            Some(_) if yes + unconfirmed >= majority => Some(Error::new(
                ErrorKind::Quorum,
                format!(
                    "release of {:?} was confirmed by {yes} node(s) and {unconfirmed} did not answer; a majority is {majority}",
                    self.name
                ),
            )),
            _ => None,
        };
        if let Some(e) = unknown {
            // The hold stays held: the caller may release it again once Redis is back. An
            // error reply (ACL, OOM) came from a script that changed nothing, so the next
            // attempt is a fresh one; after a connection error or a timeout it may have
            // applied, and the retry sends the same request.
            if !matches!(e.kind(), ErrorKind::Connection | ErrorKind::Quorum) {
                *pending = None;
            }
            unsettled.settle(false);
            return Err(e);
        }
        *pending = None;
        unsettled.settle(true);
        let reason = match (still_valid, taken > 0) {
            (false, _) => Reason::Expired,
            (true, true) => Reason::Taken,
            (true, false) => Reason::Deleted,
        };
        let err = self.refused("release", reason);
        if !unchecked {
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

    /// Resets the remaining lease to `lease` on every node (replace, never add).
    pub(crate) async fn extend(&self, lease: Duration) -> Result<()> {
        let lease_ms = timing::to_millis("lease", lease, false)?;
        // One call at a time per hold: a release begun meanwhile waits for this extend.
        let _serial = self.releasing.lock().await;
        if self.signal.is_lost_at(self.engine.now()) {
            return Err(self.lost_error(self.signal.lost_reason().unwrap_or(Reason::Expired)));
        }
        if !self.signal.is_held() {
            return Err(self.refused("extend", Reason::NeverHeld));
        }
        let engine = &self.engine;
        let req = self.holder.extend(&self.name, lease_ms);
        let started = engine.runtime.now();
        let replies = engine
            .nodes
            .broadcast_until(&req, engine.node_timeout(lease), &[], engine.majority(), |r| {
                matches!(reply::decode_extend(r), Ok(OwnershipReply::Done))
            })
            .await;
        let elapsed = engine.runtime.now() - started;
        let (mut yes, mut no, mut taken, mut first_error) = (0, 0, 0, None);
        for (r, _) in replies.into_iter().flatten() {
            match r.and_then(|r| reply::decode_extend(&r)) {
                Ok(OwnershipReply::Done) => yes += 1,
                Ok(o) => {
                    no += 1;
                    taken += usize::from(o == OwnershipReply::Taken);
                }
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        let mut validity = quorum::validity(lease, elapsed);
        if !engine.is_quorum() {
            // One node: `PEXPIRE` applied is the whole answer. A lease shorter than the drift
            // allowance (or the call) leaves no local validity: the hold is then reported
            // lost at once, but the extend did what it was asked.
            validity = validity.or(Some(Duration::ZERO));
        }
        match (quorum::tally(engine.nodes.len(), yes, no), validity) {
            (Tally::Granted, Some(v)) => {
                self.signal.set_deadline(started + v);
                tracing::debug!(lock = %self.name, lease_ms, "extended");
                Ok(())
            }
            (Tally::Refused, _) => {
                self.unwatch();
                let reason = if taken > 0 { Reason::Taken } else { Reason::Deleted };
                self.signal.fire(reason, "extend found it gone or taken");
                Err(self.refused("extend", reason))
            }
            (Tally::Granted, None) => Err(Error::new(
                ErrorKind::Quorum,
                format!("extend of {:?} took longer than the new lease", self.name),
            )),
            _ => Err(match first_error {
                Some(e) if !engine.is_quorum() => e,
                _ => Error::new(
                    ErrorKind::Quorum,
                    format!("extend of {:?}: no majority answered", self.name),
                ),
            }),
        }
    }

    /// Asks Redis whether this hold is still ours (a majority of nodes, in quorum mode).
    pub(crate) async fn owned(&self) -> Result<bool> {
        if self.signal.is_lost_at(self.engine.now()) || self.signal.is_settled() {
            return Ok(false);
        }
        let engine = &self.engine;
        let reentrant = !matches!(self.holder, Holder::Lease { .. });
        let req = request::inspect(&self.name, reentrant, Some(&self.holder));
        let replies = engine
            .nodes
            .broadcast(&req, engine.node_timeout(self.lease))
            .await;
        let mut yes = 0;
        let mut first_error = None;
        for r in replies {
            match r.and_then(|r| reply::decode_inspect(&r)) {
                Ok(i) if i.owned => yes += 1,
                Ok(_) => {}
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        match first_error {
            Some(e) if !engine.is_quorum() || e.kind().is_permanent() => Err(e),
            _ => Ok(yes >= engine.majority()),
        }
    }
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/hold.rs"]
mod tests;
