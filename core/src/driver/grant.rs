//! What a granted attempt becomes: the [`Hold`], its validity (joined to the owner's live one
//! for a reentrant owner, see `owner.rs`), its watchdog registration, and the removal of hold
//! counts that lost holds of the owner left in the hash (the orphan rule,
//! `protocol::owner::orphaned_counts`).

use super::acquire::LockSpec;
use super::hold::Hold;
use super::owner::Seen;
use super::signal::{HoldSignal, Validity};
use super::Engine;
use crate::protocol::owner::Ticket;
use crate::protocol::reply::OwnershipReply;
use crate::protocol::request::Holder;
use crate::protocol::token;
use std::sync::Arc;
use std::time::Duration;

/// What a granted attempt established.
pub(super) struct Grant {
    pub(super) lease: Duration,
    /// Fencing token (0 when not fenced).
    pub(super) fence: u64,
    /// End of the local validity.
    pub(super) deadline: Duration,
    /// The reentrant hold count Redis reported after this grant (1 for lease locks).
    pub(super) holds: u64,
}

/// The hold for a grant, and how many of the hold counts Redis reported belong to holds of
/// this owner that were already declared lost (also the multi-lock's, per member).
pub(super) fn new_hold(
    engine: &Arc<Engine>,
    spec: &LockSpec,
    holder: &Holder,
    grant: Grant,
    ticket: Option<Ticket>,
) -> (Hold, u64) {
    let Grant {
        lease,
        fence,
        deadline,
        holds,
    } = grant;
    let (validity, orphaned) = match (holder.shared_field(), ticket) {
        // The owner's holds are counts in one hash with one TTL: they share one validity.
        (Some(owner), Some(ticket)) => {
            // With no live hold of this owner, and no other acquire, release or rollback of it
            // running at any time during this one, every count beyond this grant's own was
            // left by holds this client declared lost while Redis still kept them (their
            // local validity ends a drift allowance before the key). A lost hold's release
            // sends nothing, so without this the count would outlive every guard. The rule is
            // `protocol::owner::orphaned_counts`.
            let seen = Seen {
                deadline,
                now: engine.now(),
                holds,
                quorum: engine.is_quorum(),
            };
            let joined = engine.validities.join(&spec.name, &owner, ticket, seen);
            // A re-entry set the hash's TTL to this hold's lease: the owner's watchdog-mode
            // holds renew within a third of it if it is shorter than theirs.
            if joined.reentered {
                engine.ttl_set_for_owner(&joined.validity, lease, engine.now());
            }
            (joined.validity, joined.orphaned)
        }
        _ => (Validity::new(&spec.name, deadline), 0),
    };
    // A re-entry reports the outer hold's token (the owner's holds share the validity), never
    // a lower one than already handed out to this owner.
    let fence = validity.fence(fence);
    let signal = Arc::new(HoldSignal::sharing(validity));
    // Fixed leases need no renewal: their loss is the deadline passing (see signal.rs).
    let watch = spec.lease.is_none().then(|| {
        let renewals = engine.renewals().clone();
        let id = renewals
            .watchdog
            .register(&renewals, &spec.name, holder, signal.clone());
        (renewals, std::sync::atomic::AtomicU64::new(id))
    });
    let hold = Hold {
        id: engine.registry.next_id(),
        engine: engine.clone(),
        holder: holder.clone(),
        lease,
        fence: spec.fence.map(|_| fence),
        signal,
        watch,
        releasing: Default::default(),
        background: Default::default(),
        first_release_id: Default::default(),
    };
    (hold, orphaned)
}

/// Removes `count` hold counts that lost holds of this owner left in the hash (single node):
/// one reentrant release each, which keeps the grant's own count and resets the TTL to
/// `lease`. Best effort: on failure the counts expire with the key, as before.
pub(super) async fn drop_orphaned_counts(
    engine: &Engine,
    spec: &LockSpec,
    holder: &Holder,
    lease: Duration,
    count: u64,
) {
    tracing::warn!(lock = %spec.name, count, "re-acquire found hold counts of holds already reported lost; removing them");
    for _ in 0..count {
        let Ok(request_id) = token::new_token() else {
            return;
        };
        let req = holder.release(
            &spec.name,
            lease.as_millis() as u64,
            &request_id,
            engine.release_latch_ttl_ms(holder, lease),
            engine.runtime.wall_clock_ms(),
        );
        let reply = engine.nodes.call(0, &req, engine.config.network_timeout).await;
        match reply.and_then(|r| holder.decode_release(&r)) {
            Ok(OwnershipReply::StillHeld) => {}
            other => {
                tracing::warn!(lock = %spec.name, outcome = ?other, "removing a lost hold's count stopped");
                return;
            }
        }
    }
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use crate::driver::acquire::acquire;
    use crate::driver::testing::{self, cmd, raw, rlock_spec};
    use crate::error::{ErrorKind, Reason};
    use std::time::Duration;

    const NOW: Option<Duration> = Some(Duration::ZERO);
    const LEASE: Option<Duration> = Some(Duration::from_secs(60));

    #[tokio::test]
    async fn a_re_entry_shares_the_owners_validity_and_keeps_every_count() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let mut conn = raw(&s).await;
        let mut spec = rlock_spec(&engine, "g:1", 1, LEASE);
        spec.fence = Some(0);
        let outer = acquire(&engine, &spec, NOW).await.unwrap();
        let inner = acquire(&engine, &spec, NOW).await.unwrap();
        let field = spec.owner.clone().unwrap();
        assert_eq!(
            cmd::<Option<i64>>(&mut conn, &["HGET", "g:1", &field]).await,
            Some(2)
        );
        assert_eq!(
            inner.fence, outer.fence,
            "a re-entry reports the outer hold's token"
        );
        inner.signal.fire(Reason::Deleted, "test");
        assert!(
            outer.is_lost(),
            "one validity: a loss through one hold is the other's"
        );
    }

    #[tokio::test]
    async fn a_lone_re_acquire_removes_the_counts_of_stale_holds_and_retires_them() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let mut conn = raw(&s).await;
        // A stale hold: Redis still keeps its count, but its local validity (which ends a
        // drift allowance before the key) is over: declared lost, or run out unnoticed.
        for (name, declared) in [("g:2", true), ("g:2b", false)] {
            let spec = rlock_spec(&engine, name, 1, LEASE);
            let field = spec.owner.clone().unwrap();
            let count = |conn: &mut redis::aio::MultiplexedConnection| {
                let (mut conn, field) = (conn.clone(), field.clone());
                async move { cmd::<Option<i64>>(&mut conn, &["HGET", name, &field]).await }
            };
            let stale = acquire(&engine, &spec, NOW).await.unwrap();
            if declared {
                stale.signal.fire(Reason::Expired, "test: validity ran out");
            } else {
                stale.signal.set_deadline(Duration::ZERO);
            }
            let fresh = acquire(&engine, &spec, NOW).await.unwrap();
            assert_eq!(
                count(&mut conn).await,
                Some(1),
                "{name}: the stale count was removed"
            );
            // The stale hold released after the re-acquire sends nothing: the new count stays.
            let e = stale.release().await.expect_err("lost");
            assert_eq!(e.kind(), ErrorKind::LockLost, "{name}");
            assert_eq!(
                count(&mut conn).await,
                Some(1),
                "{name}: the new hold's count is intact"
            );
            fresh.release().await.unwrap();
            assert_eq!(
                cmd::<i64>(&mut conn, &["EXISTS", name]).await,
                0,
                "nothing outlives the holds"
            );
        }
    }

    #[tokio::test]
    async fn a_re_acquire_overlapping_another_call_of_the_owner_removes_nothing() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let mut conn = raw(&s).await;
        let spec = rlock_spec(&engine, "g:3", 1, LEASE);
        let field = spec.owner.clone().unwrap();
        let stale = acquire(&engine, &spec, NOW).await.unwrap();
        stale.signal.fire(Reason::Expired, "test: validity ran out");
        // A release (or rollback) of the owner in flight during the re-acquire: the count
        // Redis reports may or may not include its effect, so none is taken for an orphan.
        let holder = stale.holder.clone();
        let in_flight = engine.in_flight("g:3", &holder);
        let fresh = acquire(&engine, &spec, NOW).await.unwrap();
        drop(in_flight);
        assert_eq!(
            cmd::<Option<i64>>(&mut conn, &["HGET", "g:3", &field]).await,
            Some(2)
        );
        fresh.release().await.unwrap();
    }
}
