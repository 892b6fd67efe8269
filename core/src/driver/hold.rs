//! One acquisition: extend, ownership check and the lost signal (its release: `release.rs`).
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
//! with its request id kept: the next release sends the same request again, and its
//! idempotency latch (written by the first attempt that applied) replays the first answer, so
//! a reentrant release never decrements twice and a lease release that applied is never
//! reported as "gone" or "taken". Released means Redis said so: a retry that finds the key
//! gone or another owner's, with no latch, is a refusal (the hold may have been lost, e.g. to
//! a restart without persistence, and another owner's section may have overlapped this one).

use super::signal::HoldSignal;
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
    pub(crate) holder: Holder,
    pub(crate) lease: Duration,
    pub(crate) fence: Option<u64>,
    pub(crate) signal: Arc<HoldSignal>,
    /// Watchdog registration (watchdog mode only): the engine whose watchdog renews it (this
    /// client's, or its renewer's: `Client::renew_through`) and its id there.
    pub(crate) watch: Option<(Arc<Engine>, std::sync::atomic::AtomicU64)>,
    /// Serializes releases; holds the release sent whose outcome is still unknown.
    /// Extends take it too, so a release waits for an extend in flight instead of racing it.
    pub(crate) releasing: futures::lock::Mutex<Option<super::release::Pending>>,
    /// Set once a background release (of a dropped guard, a scope's end, `close()`) runs, so
    /// that only one does.
    pub(crate) background: std::sync::atomic::AtomicBool,
    /// The id of the hold's first release, drawn with the acquire's token (one draw of the OS
    /// random source serves both); `None` once used, or when none was drawn.
    pub(super) first_release_id: std::sync::Mutex<Option<String>>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.engine.registry.untrack(self.id);
    }
}

impl Hold {
    /// The lock's name (kept once, in the hold's validity).
    pub(crate) fn name(&self) -> &str {
        self.signal.name()
    }

    /// The hold with `id` kept for its first release.
    pub(super) fn with_first_release_id(mut self, id: String) -> Self {
        self.first_release_id = std::sync::Mutex::new(Some(id));
        self
    }

    /// The id for a new release: the one drawn with the acquire's token the first time,
    /// then a fresh one.
    pub(super) fn new_release_id(&self) -> Result<String> {
        let first = self
            .first_release_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        first.map_or_else(|| self.holder.release_id(), Ok)
    }

    pub(super) fn lease_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    pub(super) fn lost_error(&self, reason: Reason) -> Error {
        Error::not_owned(
            true,
            reason,
            format!("lock {:?} was lost while held ({reason})", self.name()),
        )
    }

    pub(super) fn refused(&self, what: &str, reason: Reason) -> Error {
        Error::hold_refused(what, self.name(), reason)
    }

    /// Stops the watchdog's renewals of this hold (a dropped guard whose background release
    /// gave up): its key expires with its lease.
    pub(crate) fn stop_renewals(&self) {
        self.unwatch();
    }

    pub(super) fn unwatch(&self) {
        if let Some((renewals, id)) = &self.watch {
            renewals
                .watchdog
                .unregister(id.load(std::sync::atomic::Ordering::Acquire));
        }
    }

    /// Renews a watchdog-mode hold again after a release that Redis refused without changing
    /// anything (`NoPermission`, `OutOfMemory`): the hold is kept, so its renewals go on (a
    /// user trial of stop 38: the refused release had stopped them, and the lock expired
    /// within the watchdog timeout although the caller was told to release again). Call it
    /// once the signal is held again: the watchdog drops entries whose hold is not.
    pub(super) fn rewatch(&self) {
        if let Some((renewals, id)) = &self.watch {
            let new = renewals
                .watchdog
                .register(renewals, self.name(), &self.holder, self.signal.clone());
            id.store(new, std::sync::atomic::Ordering::Release);
            // At once, not a period from now: the last renewal may be most of a period old
            // and the release took time of its own (a CI run lost such a hold to its validity).
            renewals.watchdog.renew_by(new, renewals.now());
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
        let req = self.holder.extend(self.name(), lease_ms);
        let started = engine.runtime.now();
        let replies = engine
            .nodes
            .broadcast_until(&req, engine.node_timeout(lease), &[], engine.majority(), |r| {
                matches!(reply::decode_extend(r), Ok(OwnershipReply::Done))
            })
            .await;
        let elapsed = engine.runtime.now() - started;
        let (mut yes, mut no, mut taken, mut first_error) = (0, 0, 0, None);
        // Each node's outcome, for a quorum error (a user trial of stop 41 found its list empty).
        let mut reasons = Vec::with_capacity(replies.len());
        for r in replies {
            let Some((r, _)) = r else {
                reasons.push(Err(super::NOT_AWAITED.to_owned()));
                continue;
            };
            match r.and_then(|r| reply::decode_extend(&r)) {
                Ok(OwnershipReply::Done) => {
                    yes += 1;
                    reasons.push(Ok(()));
                }
                Ok(o) => {
                    no += 1;
                    taken += usize::from(o == OwnershipReply::Taken);
                    reasons.push(o.node_outcome());
                }
                Err(e) => {
                    reasons.push(Err(e.to_string()));
                    first_error = first_error.or(Some(e));
                }
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
                // Watchdog-mode holds (this one, or the owner's others sharing the hash) must
                // renew within the new lease, as after an acquire with it (a third of it). A
                // lease lock's hold shares with no other: its own registration, at once.
                if self.holder.shared_field().is_some() {
                    engine.ttl_set_for_owner(self.signal.validity(), lease, started);
                } else if let Some((renewals, id)) = &self.watch {
                    renewals.watchdog.renew_by(
                        id.load(std::sync::atomic::Ordering::Acquire),
                        started + timing::renewal_period(lease),
                    );
                }
                tracing::debug!(lock = %self.name(), lease_ms, "extended");
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
                format!("extend of {:?} took longer than the new lease", self.name()),
            )
            .with_nodes(engine.nodes.outcomes(reasons))),
            _ => Err(match first_error {
                Some(e) if !engine.is_quorum() => e,
                _ => Error::new(
                    ErrorKind::Quorum,
                    // A node that did not answer may still apply it (seen: the new lease on
                    // nodes resumed after the error; a user trial of stop 41).
                    format!(
                        "extend of {:?}: no majority answered; outcome unknown (the new lease may still apply on the nodes that did not answer)",
                        self.name()
                    ),
                )
                .with_nodes(engine.nodes.outcomes(reasons)),
            }),
        }
    }

    /// Asks Redis whether this hold is still ours (a majority of nodes, in quorum mode).
    pub(crate) async fn owned(&self) -> Result<bool> {
        if self.signal.is_lost_at(self.engine.now()) || self.signal.is_settled() {
            return Ok(false);
        }
        // Not while a release or an extend is in flight: its answer, not this one, settles
        // the hold (a release that applied first would look like a loss here).
        let _serial = self.releasing.lock().await;
        let engine = &self.engine;
        let reentrant = !matches!(self.holder, Holder::Lease { .. });
        let req = request::inspect(self.name(), reentrant, Some(&self.holder));
        let replies = engine
            .nodes
            .broadcast(&req, engine.node_timeout(self.lease))
            .await;
        let (mut yes, mut no, mut taken) = (0, 0, 0);
        let mut first_error = None;
        for r in replies {
            match r.and_then(|r| reply::decode_inspect(&r)) {
                Ok(i) if i.owned => yes += 1,
                Ok(i) => {
                    no += 1;
                    taken += usize::from(i.exists);
                }
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if quorum::tally(engine.nodes.len(), yes, no) == Tally::Refused {
            // Redis says it is gone or another owner's: the loss is known now, as after a
            // refused extend or renewal (`lost`, the loss callbacks).
            self.unwatch();
            let reason = if taken > 0 { Reason::Taken } else { Reason::Deleted };
            self.signal.fire(reason, "owned() found it gone or taken");
            return Ok(false);
        }
        match first_error {
            Some(e) if !engine.is_quorum() || e.is_permanent() => Err(e),
            _ => Ok(yes >= engine.majority()),
        }
    }
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/hold.rs"]
mod tests;
