//! One acquisition: release, extend, ownership check and the lost signal.

use super::signal::HoldSignal;
use super::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::quorum::{self, Tally};
use crate::protocol::reply::OwnershipReply;
use crate::protocol::request::{self, Holder};
use crate::protocol::{reply, timing};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Hold {
    pub(crate) engine: Arc<Engine>,
    pub(crate) name: String,
    pub(crate) holder: Holder,
    pub(crate) lease: Duration,
    pub(crate) fence: Option<u64>,
    pub(crate) signal: Arc<HoldSignal>,
    /// Watchdog registration (watchdog mode only).
    pub(crate) watch_id: Option<u64>,
}

impl Hold {
    fn lease_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    fn lost_error(&self) -> Error {
        Error::new(
            ErrorKind::LockLost,
            format!("lock {:?} was lost while held", self.name),
        )
    }

    fn not_owned(&self, what: &str) -> Error {
        Error::new(
            ErrorKind::NotOwned,
            format!(
                "cannot {what} lock {:?}: not held by this owner (expired or taken)",
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

    /// Releases the hold on every node.
    pub(crate) async fn release(&self) -> Result<()> {
        let engine = &self.engine;
        self.unwatch();
        // A reentrant release counts as in flight for its owner from before `close()` until
        // Redis answered: a re-acquire that removes counts of lost holds must not race it
        // (see `drop_orphaned_counts` in acquire.rs).
        let _in_flight = engine.in_flight(&self.name, &self.holder);
        // Past its deadline but not yet seen lost, the hold is still released (the key may
        // live on for the drift allowance); Redis' answer then says whether it was still ours.
        let still_valid = engine.now() < self.signal.deadline();
        if !self.signal.close() {
            return Err(if self.signal.is_lost_at(engine.now()) {
                self.lost_error()
            } else {
                self.not_owned("release")
            });
        }
        let request_id = self.holder.request_id()?;
        let req = self
            .holder
            .release(&self.name, self.lease_ms(), &request_id, engine.latch_ttl_ms());
        // No validity hangs on a release: every node gets the full network timeout, and the
        // call returns once a majority confirmed (the others finish in the background).
        let holder = &self.holder;
        let started = engine.now();
        let replies = engine
            .nodes
            .broadcast_until(
                &req,
                engine.config.network_timeout,
                true,
                engine.majority(),
                |r| holder.decode_release(r).is_ok_and(OwnershipReply::was_owned),
            )
            .await;
        let elapsed = engine.now() - started;
        let (mut yes, mut still_held, mut absent, mut errors) = (0, 0, 0, Vec::new());
        for (i, reply) in replies.into_iter().enumerate() {
            let Some((r, retried)) = reply else { continue };
            let decoded = r.and_then(|r| self.holder.decode_release(&r));
            if let Ok(OwnershipReply::HandedOff) = decoded {
                engine.note_handoff(&self.name);
            }
            if let Ok(OwnershipReply::StillHeld) = decoded {
                still_held += 1;
            }
            match decoded {
                Ok(o) if o.was_owned() => yes += 1,
                // A lease-lock release retried after a lost reply finds its key gone or already
                // taken by the next waiter: the first attempt deleted it, as long as the hold
                // was still valid (reentrant releases replay their latch instead).
                Ok(OwnershipReply::Absent | OwnershipReply::Taken)
                    if retried && still_valid && matches!(self.holder, Holder::Lease { .. }) =>
                {
                    yes += 1
                }
                Ok(OwnershipReply::Absent) => absent += 1,
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
            return Ok(());
        }
        let unconfirmed = errors.len();
        match errors.into_iter().next() {
            Some((_, e)) if !engine.is_quorum() => Err(e),
            // Nodes that did not answer might still have held it: not a definite "not owned".
            Some(_) if yes + unconfirmed >= majority => Err(Error::new(
                ErrorKind::Quorum,
                format!(
                    "release of {:?} was confirmed by {yes} node(s) and {unconfirmed} did not answer; a majority is {majority}",
                    self.name
                ),
            )),
            _ => Err(self.not_owned("release")),
        }
    }

    /// Resets the remaining lease to `lease` on every node (replace, never add).
    pub(crate) async fn extend(&self, lease: Duration) -> Result<()> {
        let lease_ms = timing::to_millis("lease", lease, false)?;
        if self.signal.is_lost_at(self.engine.now()) {
            return Err(self.lost_error());
        }
        let engine = &self.engine;
        let req = self.holder.extend(&self.name, lease_ms);
        let started = engine.runtime.now();
        let replies = engine
            .nodes
            .broadcast_until(&req, engine.node_timeout(lease), true, engine.majority(), |r| {
                matches!(reply::decode_extend(r), Ok(OwnershipReply::Done))
            })
            .await;
        let elapsed = engine.runtime.now() - started;
        let (mut yes, mut no, mut first_error) = (0, 0, None);
        for (r, _) in replies.into_iter().flatten() {
            match r.and_then(|r| reply::decode_extend(&r)) {
                Ok(OwnershipReply::Done) => yes += 1,
                Ok(_) => no += 1,
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        match (
            quorum::tally(engine.nodes.len(), yes, no),
            quorum::validity(lease, elapsed),
        ) {
            (Tally::Granted, Some(v)) => {
                self.signal.set_deadline(started + v);
                tracing::debug!(lock = %self.name, lease_ms, "extended");
                Ok(())
            }
            (Tally::Refused, _) => {
                self.unwatch();
                self.signal.fire("extend found it gone or taken");
                Err(self.not_owned("extend"))
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
        if self.signal.is_lost_at(self.engine.now()) {
            return Ok(false);
        }
        let engine = &self.engine;
        let req = request::inspect(&self.name, Some(&self.holder));
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
            Some(e) if !engine.is_quorum() => Err(e),
            _ => Ok(yes >= engine.majority()),
        }
    }
}
