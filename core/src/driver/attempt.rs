//! One acquire attempt on every node: the request, the replies until a majority granted, the
//! tally and validity (Redlock steps 2-4), and on a miss the clean-up of the nodes that
//! granted or did not answer (step 5, see `rollback.rs`). What a grant becomes is `grant.rs`.

use super::acquire::LockSpec;
use super::grant::{drop_orphaned_counts, new_hold, Grant};
use super::hold::Hold;
use super::rollback::Cleanups;
use super::Engine;
use crate::error::{Error, ErrorKind};
use crate::protocol::owner::Ticket;
use crate::protocol::quorum::{self, Tally};
use crate::protocol::reply::AcquireReply;
use crate::protocol::request::{Holder, Turn};
use std::sync::Arc;
use std::time::Duration;

/// How one attempt ended.
pub(super) enum Attempt {
    Granted(Hold),
    Busy { pttl: i64 },
    Failed(Error),
}

/// One attempt on every node (except those still cleaning up an earlier attempt).
pub(super) async fn attempt(
    engine: &Arc<Engine>,
    spec: &LockSpec,
    holder: &Holder,
    (request_id, turn): (&str, Turn),
    first: bool,
    ticket: Option<Ticket>,
    cleanups: &Cleanups,
) -> Attempt {
    let lease = spec.lease.unwrap_or(engine.config.watchdog_timeout);
    if let Some(e) = engine.nodes.refusal() {
        // A node found to be another's server: no acquire runs without its vote (below).
        return Attempt::Failed(refused_node(spec, e.message(), Vec::new()));
    }
    let lease_ms = lease.as_millis() as u64;
    let rt = &engine.runtime;
    let mut request = holder.acquire_turn(
        &spec.name,
        lease_ms,
        spec.fence,
        request_id,
        engine.latch_ttl_ms(),
        turn,
    );
    if !first {
        request = request.script_only();
    }
    let started = rt.now();
    // Returns as soon as a majority granted (Redlock); later replies are not awaited (their
    // requests were sent, and a release reaches every node anyway).
    let majority = engine.majority();
    let replies = engine
        .nodes
        .broadcast_until(
            &request,
            engine.node_timeout(lease),
            &cleanups.busy(),
            majority,
            |r| matches!(holder.decode_acquire(r), Ok(AcquireReply::Acquired { .. })),
        )
        .await;
    let elapsed = rt.now() - started;

    let n = engine.nodes.len();
    // Which nodes granted or failed, and why each did not grant, matter only to a quorum's
    // clean-up and error: a single node's attempt keeps the counts alone.
    let per_node = n > 1;
    let (mut granted, mut busy, mut fence, mut min_pttl) = (0, 0, 0, i64::MAX);
    let mut holds = 1;
    let (mut granted_at, mut unanswered) = (Vec::new(), Vec::new());
    let mut reasons = Vec::new();
    let mut first_error = None;
    // A node refused for its configuration (another node's server under a second URL, a
    // database the server lacks): `connect` refuses such a quorum (`quorum::enough_answered`);
    // a lazily connected one meets it at its first call, and no grant may stand on the others
    // (a user trial of stop 41: Python's acquire succeeded, warning only at the release).
    let mut misconfigured = None;
    // Nodes whose connection this client's settings cannot make (a refused password).
    let mut refusing = 0;
    // Nodes that granted and took it back because too few of their replicas confirmed it
    // (`sync_replicas`): they answered, as a busy node does.
    let mut replicas_refused = 0;
    for (i, r) in replies.into_iter().enumerate() {
        let Some((r, _)) = r else {
            // Not asked (its clean-up of an earlier attempt still runs), or not awaited: the
            // earlier attempt's answer there says more than "not asked".
            reasons.push(Err(match cleanups.why(i) {
                Some(why) => format!("not asked: undoing an earlier attempt there, which got: {why}"),
                None => "not asked: undoing an earlier attempt there".to_owned(),
            }));
            continue;
        };
        match r.and_then(|r| holder.decode_acquire(&r)) {
            Ok(AcquireReply::Acquired { fence: f, holds: h }) => {
                granted += 1;
                fence = f;
                holds = h;
                if per_node {
                    granted_at.push(i);
                    reasons.push(Ok(()));
                }
            }
            Ok(AcquireReply::Busy { pttl }) => {
                busy += 1;
                min_pttl = min_pttl.min(pttl);
                if per_node {
                    reasons.push(Err(format!("held by another owner (pttl {pttl} ms)")));
                }
            }
            Err(e) => {
                if per_node {
                    unanswered.push(i);
                    reasons.push(Err(e.to_string()));
                    if e.kind() == ErrorKind::InvalidArgument && misconfigured.is_none() {
                        misconfigured = Some(e.message().to_owned());
                    }
                    refusing += usize::from(e.kind() == ErrorKind::Connection && e.is_permanent());
                    replicas_refused += usize::from(e.kind() == ErrorKind::NotAcquired);
                }
                first_error = first_error.or(Some(e));
            }
        }
    }
    let tally = quorum::tally(n, granted, busy);
    let mut validity = quorum::validity(lease, elapsed);
    if n == 1 && validity.is_none() && elapsed < lease {
        // A single node's grant stands while its lease runs; with a lease shorter than the
        // drift allowance the hold is reported lost at once rather than refused forever.
        validity = Some(Duration::ZERO);
    }
    if let (Tally::Granted, Some(validity), None) = (tally, validity, &misconfigured) {
        tracing::debug!(lock = %spec.name, nodes = granted, elapsed_ms = elapsed.as_millis() as u64, "acquired");
        let grant = Grant {
            lease,
            fence,
            deadline: started + validity,
            holds,
        };
        let (hold, orphaned) = new_hold(engine, spec, holder, grant, ticket);
        if orphaned > 0 {
            drop_orphaned_counts(engine, spec, holder, lease, orphaned).await;
        }
        return Attempt::Granted(hold);
    }
    if per_node && (!granted_at.is_empty() || !unanswered.is_empty()) {
        let mut touched = granted_at;
        touched.extend(&unanswered);
        for &i in &unanswered {
            if let Some(Err(why)) = reasons.get(i) {
                cleanups.note(i, why.clone());
            }
        }
        let what = (spec.name.as_str(), holder, request_id, lease);
        cleanups
            .run(engine, what, &touched, engine.node_timeout(lease))
            .await;
    }
    if let Some(why) = misconfigured {
        return Attempt::Failed(refused_node(spec, &why, engine.nodes.outcomes(reasons)));
    }
    // Nodes refusing this client's settings (a password) count against the quorum only when
    // too many refuse for a majority: a minority refusing leaves the attempt to be retried
    // within the wait (a re-trial of stop 45: one node with another password and one paused
    // failed a 6 s wait at once, as permanent, although the paused one came back in 2 s).
    let refusal = |e: &Error| e.kind() == ErrorKind::Connection && e.is_permanent();
    let refusal_stands = n - refusing < quorum::majority(n);
    match (tally, first_error) {
        // Nodes that cannot be reached with this client's settings (a refused password): the
        // quorum is out of reach, as `connect` reports it, each node with its outcome (a user
        // trial of stop 41: a lazily connected quorum reported one of them, as a connection
        // error); no retry helps.
        (Tally::Undecided, Some(e)) if refusing > 0 && refusal_stands && refusal(&e) => {
            Attempt::Failed(
                Error::new(
                    ErrorKind::Quorum,
                    format!(
                        "lock {:?}: {granted} of {n} nodes granted and {refusing} cannot be connected to with this client's settings; a majority is {}",
                        spec.name,
                        quorum::majority(n)
                    ),
                )
                .with_nodes(engine.nodes.outcomes(reasons))
                .permanently(),
            )
        }
        // A node whose key holds application data, or that refuses this user: no retry helps.
        (Tally::Refused | Tally::Undecided, Some(e)) if e.is_permanent() && !(n > 1 && refusal(&e)) => {
            Attempt::Failed(e)
        }
        (Tally::Refused, _) => Attempt::Busy {
            pttl: if min_pttl == i64::MAX { -1 } else { min_pttl },
        },
        (_, Some(e)) if n == 1 => Attempt::Failed(e),
        // Every node answered, and those that did not grant or find it busy refused for too few
        // replicas: not acquired, as on a single node (a user trial of stop 42 got a
        // QuorumError, and `acquire()` raised instead of returning False).
        (Tally::Undecided, _) if replicas_refused > 0 && granted + busy + replicas_refused == n => Attempt::Failed(
            Error::new(
                ErrorKind::NotAcquired,
                format!(
                    "lock {:?}: {granted} of {n} nodes granted, {replicas_refused} refused it for too few replicas (sync_replicas) and {busy} found it held; a majority is {}",
                    spec.name,
                    quorum::majority(n)
                ),
            )
            .with_nodes(engine.nodes.outcomes(reasons)),
        ),
        // One node answered after the lease had ended: too slow for this lease, as a reply
        // that never came (retried within the wait; the grant was undone). Never a quorum
        // error from a single node (a user trial of stop 38: `lease=0.001` on a new client
        // raised QuorumError 2 in 40).
        (Tally::Granted, _) if n == 1 => Attempt::Failed(Error::connection(format!(
            "lock {:?}: Redis answered after the {} ms lease had ended ({} ms elapsed): too slow for this lease",
            spec.name,
            lease.as_millis(),
            elapsed.as_millis()
        ))),
        (Tally::Granted, _) => Attempt::Failed(Error::new(
            ErrorKind::Quorum,
            format!(
                "lock {:?}: majority granted but the validity ran out ({} ms elapsed)",
                spec.name,
                elapsed.as_millis()
            ),
        )),
        _ => {
            let nodes = engine.nodes.outcomes(reasons);
            Attempt::Failed(
                Error::new(
                    ErrorKind::Quorum,
                    format!(
                        "lock {:?}: {granted} of {n} nodes granted; a majority is {}: {}",
                        spec.name,
                        quorum::majority(n),
                        quorum::not_granted(&nodes)
                    ),
                )
                .with_nodes(nodes),
            )
        }
    }
}

/// The refusal of an acquire of `spec` on a quorum with a node refused for its configuration
/// (`why`), with each node's outcome when the attempt ran.
fn refused_node(spec: &LockSpec, why: &str, nodes: Vec<crate::error::NodeOutcome>) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("lock {:?}: a node of this quorum is refused: {why}", spec.name),
    )
    .with_nodes(nodes)
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use super::*;
    use crate::driver::acquire::acquire;
    use crate::driver::testing::{self, cmd, lease_spec, raw, within};
    use crate::driver::Config;
    use crate::protocol::token;

    fn quorum_config() -> Config {
        Config {
            node_timeout: Some(Duration::from_millis(150)),
            ..testing::config()
        }
    }

    #[tokio::test]
    async fn a_majority_grants_and_a_minority_is_undone_where_it_granted() {
        let servers = [testing::server(), testing::server(), testing::server()];
        let engine = testing::engine(&servers.iter().collect::<Vec<_>>(), quorum_config()).await;
        let mut conns = Vec::new();
        for s in &servers {
            conns.push(raw(s).await);
        }
        let spec = lease_spec("t:1", Some(Duration::from_secs(60)));

        servers[2].pause().unwrap();
        let hold = within(acquire(&engine, &spec, Some(Duration::ZERO)))
            .await
            .expect("2 of 3 grant");
        within(hold.release()).await.unwrap();

        // One attempt with 1 of 3 granting: no majority, and (Redlock step 5) the node that
        // granted is released again by the attempt itself, before any retry.
        servers[1].pause().unwrap();
        let spec = lease_spec("t:2", Some(Duration::from_secs(60)));
        let holder = Holder::Lease {
            token: token::new_token().unwrap(),
        };
        let cleanups = Cleanups::new(3);
        let outcome = within(attempt(
            &engine,
            &spec,
            &holder,
            ("", Turn::default()),
            true,
            None,
            &cleanups,
        ))
        .await;
        let Attempt::Failed(e) = outcome else {
            panic!("1 of 3 is no majority")
        };
        assert_eq!(e.kind(), ErrorKind::Quorum, "{e}");
        let outcomes: Vec<bool> = e.nodes().iter().map(|n| n.result.is_ok()).collect();
        assert_eq!(outcomes, [true, false, false], "per node, in node order: {e}");
        within(async {
            while cleanups.busy()[0] {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert_eq!(
            cmd::<i64>(&mut conns[0], &["EXISTS", "t:2"]).await,
            0,
            "undone where it granted"
        );
        for s in &servers[1..] {
            s.resume().unwrap();
        }
    }
}
