//! The multi-lock's one-request release: the held members of a set taken by one script (see
//! `multi.rs`) are released by one `multi_release` script (on every node in quorum mode), and
//! each member's hold is settled from its own code in the reply by the same rules as a
//! release alone (`release.rs`): a member whose outcome is unknown stays held and retryable
//! with the same request id, a member found lost reports it, a replayed latch is Redis' word.

use super::hold::Hold;
use super::release::Releasing;
use super::Engine;
use crate::error::Result;
use crate::protocol::family::multi::{self, Member};
use crate::protocol::reply::OwnershipReply;
use crate::protocol::request::PUBLISH;

/// Releases `holds` (members of one one-script set, sharing one lease) in one request; one
/// result per hold, in order. A hold refused before sending (already released, known lost)
/// gets its refusal and is not sent.
pub(crate) async fn release(engine: &Engine, holds: &[&Hold]) -> Vec<Result<()>> {
    let mut results: Vec<Result<()>> = holds.iter().map(|_| Ok(())).collect();
    let mut begun: Vec<(usize, Releasing<'_>)> = Vec::new();
    // One id for the members' new releases (their latches differ by name); a retried
    // member keeps its own.
    let fresh_id = match holds.first().map(|h| h.holder.release_id()) {
        Some(Ok(id)) => Some(id),
        Some(Err(e)) => return holds.iter().map(|_| Err(e.clone())).collect(),
        None => None,
    };
    // Each hold's release lock is taken in the members' (sorted) order, as every caller does.
    for (i, hold) in holds.iter().enumerate() {
        match hold.begin_release_with(fresh_id.as_deref()).await {
            Ok(releasing) => begun.push((i, releasing)),
            Err(e) => results[i] = Err(e),
        }
    }
    // Members known lost: what they may have left is deleted, all at once (one network
    // timeout at most, not one per member).
    let clears = holds.iter().zip(&results).filter_map(|(hold, r)| match r {
        Err(e) => Some(hold.clear_if_lost(e)),
        Ok(()) => None,
    });
    super::concurrently(futures::future::join_all(clears)).await;
    if let Some((_, first)) = begun.first() {
        let lease_ms = first.hold().lease.as_millis() as u64;
        let members: Vec<Member> = begun
            .iter()
            .map(|(_, r)| Member {
                name: r.hold().name().to_owned(),
                holder: Some(r.hold().holder.clone()),
            })
            .collect();
        let parts: Vec<multi::Releasing<'_>> = begun
            .iter()
            .zip(&members)
            .map(|((_, r), member)| multi::Releasing {
                member,
                request_id: r.request_id(),
                latch_ttl_ms: r.latch_ttl_ms(),
                sent_before: r.is_retry(),
            })
            .collect();
        match multi::release(&parts, lease_ms, PUBLISH) {
            Ok(mut request) => {
                request.by_source = begun.iter().any(|(_, r)| r.is_retry());
                let n = begun.len();
                let replies = engine
                    .nodes
                    .broadcast_until_then(
                        &request,
                        engine.config.network_timeout,
                        &[],
                        engine.majority(),
                        |r| {
                            multi::decode_release(r, n).is_ok_and(|codes| codes.iter().all(|c| c.was_owned()))
                        },
                        Some(super::release::warn_unconfirmed),
                    )
                    .await;
                let decoded: Vec<Option<Result<Vec<OwnershipReply>>>> = replies
                    .into_iter()
                    .map(|reply| reply.map(|(r, _)| r.and_then(|r| multi::decode_release(&r, n))))
                    .collect();
                for (k, (i, releasing)) in begun.into_iter().enumerate() {
                    let outcomes = decoded
                        .iter()
                        .map(|node| {
                            node.as_ref()
                                .map(|codes| codes.as_ref().map(|c| c[k]).map_err(Clone::clone))
                        })
                        .collect();
                    results[i] = releasing.settle(outcomes);
                }
            }
            // Nothing was sent: every begun release goes back to held (dropped unsettled).
            Err(e) => {
                for (i, _) in begun {
                    results[i] = Err(e.clone());
                }
            }
        }
    }
    results
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/multi_release.rs"]
mod tests;
