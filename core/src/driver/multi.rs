//! The multi-lock's one-script path: every member taken by one `multi_acquire` script (on every
//! node in quorum mode), all or nothing, then one [`Hold`] per member, so each member renews,
//! reports loss and releases exactly as a lock acquired alone.
//!
//! Each attempt uses fresh tokens and a fresh request id: an attempt that failed part way (a
//! quorum missed, a reply lost) is undone in the background by `multi_abort`, which only undoes
//! a request whose latch proves it applied, and can never touch a later attempt's grant. A
//! dropped acquire (cancellation) undoes its attempt in flight the same way. While a member is
//! held by someone else the waiter listens on that member's unlock channel (as `acquire.rs`).

use super::acquire::LockSpec;
use super::grant::{new_hold, Grant};
use super::hold::Hold;
use super::owner::InFlight;
use super::transport::random_unit;
use super::waker::Waker;
use super::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::family::multi::{self, AcquireReply, Member};
use crate::protocol::quorum::{self, Tally};
use crate::protocol::request::{Holder, PUBLISH};
use crate::protocol::{keys, timing, token};
use futures::future::select;
use std::sync::Arc;
use std::time::Duration;

/// One attempt's members, with the holders it used.
struct Attempted {
    members: Vec<Member>,
    request_id: String,
}

impl Attempted {
    /// One random value per attempt serves as every lease member's token and as the request
    /// id: each names grants on distinct keys (a member's key, the latch in the first
    /// member's slot), so one fresh value keeps every undo and repeat exact, as one per member
    /// would, for one read of the OS random source instead of one per member.
    fn new(specs: &[LockSpec]) -> Result<Attempted> {
        let fresh = token::new_token()?;
        let members = specs
            .iter()
            .map(|spec| Member {
                name: spec.name.clone(),
                holder: Some(match &spec.owner {
                    Some(owner) => Holder::Reentrant { owner: owner.clone() },
                    None => Holder::Lease { token: fresh.clone() },
                }),
            })
            .collect();
        Ok(Attempted {
            members,
            request_id: fresh,
        })
    }

    fn refs(&self) -> Vec<&Member> {
        self.members.iter().collect()
    }
}

/// Undoes an attempt on `nodes` in the background (each node bounded by the network timeout).
fn undo_in_background(engine: &Arc<Engine>, attempt: &Attempted, nodes: Vec<usize>) {
    let Ok(request) = multi::abort(&attempt.refs(), &attempt.request_id, PUBLISH) else {
        return;
    };
    // Logged under its first member, whose slot holds the attempt's latch.
    let first = attempt
        .members
        .first()
        .map(|m| m.name.clone())
        .unwrap_or_default();
    let engine = engine.clone();
    let runtime = engine.runtime.clone();
    super::cleanup::spawn(
        &*runtime,
        Box::pin(async move {
            let timeout = engine.config.network_timeout;
            engine
                .nodes
                .undo_or_warn(&nodes, &request, timeout, &first, "a multi-lock attempt")
                .await;
        }),
    );
}

/// Undoes an attempt on `nodes` and waits for it (each node bounded by the network timeout);
/// a node where the undo fails is undone again in the background.
async fn undo_now(engine: &Arc<Engine>, attempt: &Attempted, nodes: Vec<usize>) {
    let Ok(request) = multi::abort(&attempt.refs(), &attempt.request_id, PUBLISH) else {
        return;
    };
    let replies = engine
        .nodes
        .call_some(&nodes, &request, engine.config.network_timeout)
        .await;
    let failed: Vec<usize> = nodes
        .into_iter()
        .zip(replies)
        .filter(|(_, r)| !matches!(r.as_ref().map(multi::decode_abort), Ok(Ok(_))))
        .map(|(i, _)| i)
        .collect();
    if !failed.is_empty() {
        undo_in_background(engine, attempt, failed);
    }
}

/// Armed while an attempt is in flight: a dropped acquire undoes it on every node.
struct UndoOnDrop<'a> {
    engine: &'a Arc<Engine>,
    attempt: Option<Attempted>,
}

impl Drop for UndoOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(attempt) = self.attempt.take() {
            tracing::debug!(
                "multi-lock acquire ended with an attempt in flight; undoing it in the background"
            );
            undo_in_background(self.engine, &attempt, (0..self.engine.nodes.len()).collect());
        }
    }
}

enum Outcome {
    Granted(Vec<Hold>),
    /// `plain`: answered by the plain first attempt.
    Busy {
        index: usize,
        pttl: i64,
        plain: bool,
    },
    Failed(Error),
}

/// Takes every member of `specs` (sorted, unfenced lease or reentrant locks sharing `lease`
/// and the watchdog mode) with one script, waiting up to `wait` (`None`: until taken).
///
/// # Errors
/// `NotAcquired` when the wait runs out; `Connection`, `Redis` or `Quorum` when errors persist;
/// permanent errors (a member holding application data, a refused permission) at once.
pub(crate) async fn acquire(
    engine: &Arc<Engine>,
    specs: &[LockSpec],
    wait: Option<Duration>,
) -> Result<Vec<Hold>> {
    let rt = &engine.runtime;
    let deadline = wait.map(|w| rt.now() + w);
    // A reentrant member's acquire counts as in flight for its owner (see `owner.rs`).
    let in_flight: Vec<Option<InFlight>> = specs
        .iter()
        .map(|s| {
            s.owner
                .as_ref()
                .map(|owner| engine.validities.begin(&s.name, owner))
        })
        .collect();
    let mut waker: Option<(usize, Waker)> = None;
    let mut error_since: Option<Duration> = None;
    let mut failures = 0u32;
    let mut first = true;
    loop {
        if let Some((_, w)) = waker.as_mut() {
            w.mark_seen();
        }
        let started = rt.now();
        let mut armed = UndoOnDrop {
            engine,
            attempt: Some(Attempted::new(specs)?),
        };
        let plain = std::mem::take(&mut first);
        let outcome = attempt(engine, specs, &mut armed, &in_flight, plain).await;
        let now = rt.now();
        let remaining = deadline.map(|d| d.saturating_sub(now));
        let out_of_time = remaining == Some(Duration::ZERO);
        let delay = match outcome {
            Outcome::Granted(holds) => return Ok(holds),
            // The plain first attempt tells "busy" without the member's TTL or type: a single
            // try runs the script once more to learn whether it is a lock at all.
            Outcome::Busy { plain: true, .. } if out_of_time => continue,
            Outcome::Busy { index, pttl, .. } => {
                error_since = None;
                failures = 0;
                let name = &specs[index].name;
                if out_of_time {
                    return Err(Error::new(
                        ErrorKind::NotAcquired,
                        format!("multi-lock member {name:?} is held by another owner; wait ran out"),
                    ));
                }
                if waker.as_ref().is_none_or(|(i, _)| *i != index) {
                    tracing::debug!(lock = %name, pttl, "multi-lock member busy; subscribing and waiting");
                    waker = Some((
                        index,
                        Waker::subscribe(engine, &keys::lock_channel(name), remaining, None).await,
                    ));
                    continue;
                }
                timing::busy_retry_delay(pttl, engine.config.poll_interval, remaining, random_unit())
            }
            Outcome::Failed(error) => {
                let since = *error_since.get_or_insert(started);
                let (permanent, finite) = (error.is_permanent(), deadline.is_some());
                let network_timeout = engine.config.network_timeout;
                if timing::wait_ends_on_error(permanent, out_of_time, finite, now - since, network_timeout) {
                    return Err(error);
                }
                tracing::debug!(error = %error, "multi-lock attempt failed; retrying");
                failures += 1;
                let backoff = timing::backoff(
                    failures,
                    engine.config.retry_base,
                    engine.config.retry_cap,
                    random_unit(),
                );
                remaining.map_or(backoff, |r| backoff.min(r))
            }
        };
        match waker.as_mut() {
            Some((_, w)) => {
                let _ = select(rt.sleep(delay), Box::pin(w.changed())).await;
            }
            None => rt.sleep(delay).await,
        }
    }
}

/// One `multi_acquire` on every node, in its plain form (each member's `SET NX PX`, for lease
/// members only) on a `first_attempt`. A grant disarms `armed`; anything else that
/// may have applied somewhere is undone: in the background, except the members a plain
/// attempt took on a node that refused others, and a grant refused for too few replicas
/// (`sync_replicas`), which are undone before this returns (a caller told "busy" or "not
/// acquired" finds nothing of its own left).
async fn attempt(
    engine: &Arc<Engine>,
    specs: &[LockSpec],
    armed: &mut UndoOnDrop<'_>,
    in_flight: &[Option<InFlight>],
    first_attempt: bool,
) -> Outcome {
    let Some(attempted) = armed.attempt.as_ref() else {
        return Outcome::Failed(Error::new(ErrorKind::Panic, "multi-lock attempt without members"));
    };
    let lease = specs[0].lease.unwrap_or(engine.config.watchdog_timeout);
    let request = match multi::acquire(
        &attempted.refs(),
        lease.as_millis() as u64,
        &attempted.request_id,
        engine.latch_ttl_ms(),
    ) {
        Ok(r) if first_attempt => r,
        Ok(r) => r.script_only(),
        Err(e) => return Outcome::Failed(e),
    };
    let plain = request.plain.is_some();
    let started = engine.now();
    let replies = engine
        .nodes
        .broadcast_until(
            &request,
            engine.node_timeout(lease),
            &[],
            engine.majority(),
            |r| matches!(multi::decode_acquire(r), Ok(AcquireReply::Acquired)),
        )
        .await;
    let elapsed = engine.now() - started;
    let (mut granted, mut touched, mut busy) = (0, Vec::new(), None::<(usize, i64)>);
    let (mut partly_taken, mut granted_at) = (Vec::new(), Vec::new());
    let (mut refused, mut first_error, mut reasons) = (0, None, Vec::new());
    for (i, r) in replies.into_iter().enumerate() {
        let Some((r, _)) = r else {
            // Not awaited: its request was sent and may apply.
            touched.push(i);
            reasons.push(Err("not awaited".to_owned()));
            continue;
        };
        match r.and_then(|r| multi::decode_acquire(&r)) {
            Ok(AcquireReply::Acquired) => {
                granted += 1;
                granted_at.push(i);
                touched.push(i);
                reasons.push(Ok(()));
            }
            Ok(AcquireReply::Busy { index, pttl }) => {
                refused += 1;
                busy = Some(busy.map_or((index, pttl), |(b, p)| (b, p.min(pttl))));
                reasons.push(Err(format!(
                    "member {:?} held by another owner",
                    specs[index].name
                )));
            }
            Ok(AcquireReply::PartlyBusy { index, taken }) => {
                refused += 1;
                // The plain form does not tell the member's TTL.
                busy = Some((busy.map_or(index, |(b, _)| b), -1));
                if taken {
                    partly_taken.push(i);
                }
                reasons.push(Err(format!(
                    "member {:?} held by another owner",
                    specs[index].name
                )));
            }
            Err(e) => {
                // Refused after it applied (too few replicas confirmed): the node answers.
                if e.kind() == ErrorKind::NotAcquired {
                    partly_taken.push(i);
                } else {
                    touched.push(i);
                }
                reasons.push(Err(e.to_string()));
                first_error = first_error.or(Some(e));
            }
        }
    }
    let n = engine.nodes.len();
    let tally = quorum::tally(n, granted, refused);
    let mut validity = quorum::validity(lease, elapsed);
    if n == 1 && validity.is_none() && elapsed < lease {
        validity = Some(Duration::ZERO);
    }
    if let (Tally::Granted, Some(validity)) = (tally, validity) {
        let Some(attempted) = armed.attempt.take() else {
            return Outcome::Failed(Error::new(ErrorKind::Panic, "multi-lock attempt vanished"));
        };
        let holds = specs
            .iter()
            .zip(attempted.members)
            .zip(in_flight)
            .map(|((spec, member), flight)| {
                let holder = member
                    .holder
                    .expect("members of a one-script attempt have holders");
                let grant = Grant {
                    lease,
                    fence: 0,
                    deadline: started + validity,
                    holds: 1,
                };
                new_hold(
                    engine,
                    spec,
                    &holder,
                    grant,
                    flight.as_ref().map(InFlight::ticket),
                )
                .0
            })
            .collect();
        tracing::debug!(members = specs.len(), "multi-lock acquired");
        return Outcome::Granted(holds);
    }
    // Not granted: undo wherever it may have applied; this attempt is settled.
    if let Some(attempted) = armed.attempt.take() {
        // After a plain attempt found a member busy the script runs next, at once for a single
        // try (see `acquire`): this attempt's grants go first, or the script would find them
        // and name a member this attempt took as the busy one.
        let mut undo_first = partly_taken;
        if plain && busy.is_some() {
            touched.retain(|i| !granted_at.contains(i));
            undo_first.append(&mut granted_at);
        }
        if !undo_first.is_empty() {
            undo_now(engine, &attempted, undo_first).await;
        }
        if !touched.is_empty() {
            undo_in_background(engine, &attempted, touched);
        }
    }
    match (tally, first_error, busy) {
        (_, Some(e), _) if e.is_permanent() || n == 1 => Outcome::Failed(e),
        (Tally::Refused, _, Some((index, pttl))) => Outcome::Busy { index, pttl, plain },
        _ => {
            let nodes = engine.nodes.outcomes(reasons);
            Outcome::Failed(
                Error::new(
                    ErrorKind::Quorum,
                    format!(
                        "multi-lock: {granted} of {n} nodes granted; a majority is {}: {}",
                        quorum::majority(n),
                        quorum::not_granted(&nodes)
                    ),
                )
                .with_nodes(nodes),
            )
        }
    }
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/multi.rs"]
mod tests;
