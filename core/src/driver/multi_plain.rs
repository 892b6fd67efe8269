//! The multi-lock's plain first attempt: a set of lease members on one node (a single node, or
//! one Redis Cluster hash slot) is first tried with each member's own `SET key token NX PX`,
//! sent together, as a lease lock's first attempt is (`attempt.rs`), instead of the
//! `multi_acquire` script. On Redis 7 a script call costs the server several times a plain
//! `SET` (measured with `INFO commandstats` on a sequential loop: ~25 us per `EVALSHA` against
//! ~3 us per `SET`), which made the uncontended two-name multi-lock ~1.3x one lock; with this
//! path it pays one extra `SET` per member instead.
//!
//! All or nothing still holds: when every `SET` answers OK the set is held; otherwise what
//! this attempt took is undone before the script runs (`multi_abort` deletes a member only while
//! it holds this attempt's fresh token, so it never touches anyone else's grant), and the caller
//! goes on with the script, which gives the exact answer (which member is busy, its TTL, a key
//! holding application data). Two callers taking overlapping sets at once may both take part
//! and both undo; the script then decides between them atomically, so they never deadlock.

use super::acquire::LockSpec;
use super::multi::{holds_of, undo_in_background, Attempted, Outcome, UndoOnDrop};
use super::owner::InFlight;
use super::Engine;
use crate::protocol::family::multi;
use crate::protocol::reply::AcquireReply;
use crate::protocol::request::PUBLISH;
use futures::future::join_all;
use std::sync::Arc;

/// Whether the set of `armed`'s attempt may take the plain first attempt: lease members only
/// (no owner, no fencing) on one node.
pub(super) fn applies(engine: &Engine, attempt: &Attempted) -> bool {
    engine.nodes.len() == 1 && attempt.lease_only()
}

/// One plain attempt: `Some(Granted)` when every member's `SET NX PX` answered OK, `None`
/// otherwise (the attempt is then settled: undone where it took something, `armed` disarmed;
/// the caller runs the script with a fresh attempt).
pub(super) async fn attempt(
    engine: &Arc<Engine>,
    specs: &[LockSpec],
    armed: &mut UndoOnDrop<'_>,
    in_flight: &[Option<InFlight>],
) -> Option<Outcome> {
    let attempted = armed.attempt.as_ref()?;
    let lease = specs[0].lease.unwrap_or(engine.config.watchdog_timeout);
    let lease_ms = lease.as_millis() as u64;
    let timeout = engine.node_timeout(lease);
    let started = engine.now();
    let requests: Vec<_> = attempted
        .members
        .iter()
        .filter_map(|m| Some((m.holder.as_ref()?, &m.name)))
        .map(|(holder, name)| (holder, holder.acquire(name, lease_ms, None, "", 0)))
        .collect();
    let replies = join_all(
        requests
            .iter()
            .map(|(_, request)| engine.nodes.call(0, request, timeout)),
    )
    .await;
    let elapsed = engine.now() - started;
    let granted = requests
        .iter()
        .zip(&replies)
        .filter(|((holder, _), reply)| {
            let decoded = reply.as_ref().map(|r| holder.decode_acquire(r));
            matches!(decoded, Ok(Ok(AcquireReply::Acquired { .. })))
        })
        .count();
    if granted == requests.len() {
        if let Some(validity) = super::multi::single_node_validity(lease, elapsed) {
            let attempted = armed.attempt.take()?;
            tracing::debug!(members = specs.len(), "multi-lock acquired by plain SET NX");
            return Some(Outcome::Granted(holds_of(
                engine, specs, attempted, in_flight, lease, started, validity,
            )));
        }
    }
    // Settled here: nothing taken and every answer known needs no undo.
    let attempted = armed.attempt.take()?;
    if granted > 0 || replies.iter().any(Result::is_err) {
        undo_now(engine, &attempted).await;
    }
    None
}

/// Undoes a plain attempt before the script runs, so the script does not find this attempt's
/// own keys busy; in the background when the undo itself fails.
async fn undo_now(engine: &Arc<Engine>, attempted: &Attempted) {
    let Ok(request) = multi::abort(&attempted.refs(), &attempted.request_id, PUBLISH) else {
        return;
    };
    let reply = engine
        .nodes
        .call(0, &request, engine.config.network_timeout)
        .await;
    if let Err(e) = reply.and_then(|r| multi::decode_abort(&r)) {
        tracing::debug!(error = %e, "undoing a plain multi-lock attempt failed; retrying in the background");
        undo_in_background(engine, attempted, vec![0]);
    }
}
