//! The acquire loop: attempt on every node, wait for a wake-up or a poll, try again.
//!
//! Waiting: after the first busy attempt the waiter subscribes to the lock's unlock channel on
//! every node (one shared subscriber connection per node) and attempts again at once, so a
//! release between the attempt and the subscription is not missed. Afterwards it sleeps until
//! a release message arrives or `min(holder's PTTL, poll)` (jittered) passes: the poll interval
//! for a lease lock, so releases by clients that do not publish (redis-py) are still seen
//! promptly, and for a fair lock (its place in the queue lasts as long as its attempts renew
//! it); reentrant and read/write waiters that hear every node poll at most every
//! `max(poll interval, timing::LISTENING_POLL)` (Redisson's holders all publish).
//!
//! Hand-off: a client that has just released a lock to a listening waiter holds back its own
//! next acquire of that lock for `Config::handoff_grace` (2 ms). The releaser needs no
//! wake-up, so without this it wins nearly every race against waiters in other processes and
//! starves them. Waiters of one client wait in a line (`line.rs`); a new acquire of a lease
//! lock with waiters of its client in line queues behind them instead.
//!
//! Errors: an attempt that fails on a connection error or misses the quorum is rolled back on
//! the nodes that granted it or did not answer (Redlock step 5, in the background: see
//! `rollback.rs`), then retried after a full-jitter back-off until the wait ends, so a waiter
//! rides out a failover shorter than its wait; a wait without an end returns errors that
//! persist for `network_timeout`, so no call hangs on an unreachable Redis; errors that
//! retrying cannot cure (a missing ACL permission, a refused password, out of memory, a key that holds
//! application data) are returned at once (`timing::wait_ends_on_error`).
//!
//! A busy answer to the plain `SET NX PX` of a first attempt says nothing about the key: when
//! that is the only attempt (a wait of 0), the script form runs once more to learn whether the
//! key is a lock at all (a string without TTL that is not a token is application data).
//!
//! Fair locks: the first attempt only tries (it never queues), so a waiter is subscribed to its
//! own channel before the attempt that queues it; later attempts keep its place. An acquire
//! that ends without a hold after queueing (wait over, error, cancelled) gives its place up
//! (`fair_abort`): at once when the wait ran out, in the background otherwise.
use super::attempt::{attempt, Attempt};
use super::hold::Hold;
use super::line::Patience;
use super::owner::InFlight;
use super::rollback::{Cleanups, UndoOnDrop};
use super::transport::random_unit;
use super::waker::Waker;
use super::Engine;
use crate::error::{Error, ErrorKind, Result};
use crate::kind::LockKind;
use crate::protocol::family::fair;
use crate::protocol::request::{Holder, Turn};
use crate::protocol::{timing, token};
use futures::future::{select, Either};
use std::sync::Arc;
use std::time::Duration;

/// What to acquire, already validated.
#[derive(Debug, Clone)]
pub(crate) struct LockSpec {
    pub(crate) name: String,
    pub(crate) kind: LockKind,
    /// `Some(owner id)` for every kind but lease locks.
    pub(crate) owner: Option<String>,
    /// `None` = watchdog mode.
    pub(crate) lease: Option<Duration>,
    /// `None` = not fenced; `Some(ttl_ms)` = fenced, the counter key expiring `ttl_ms` after
    /// each fenced acquire (0 = it persists).
    pub(crate) fence: Option<u64>,
}

/// How Redis will know this acquire's holder, and its first request id: `fresh` (a random
/// token) is a lease lock's token (its request id is empty), else the request id naming the
/// acquire latch of an owner (a fair waiter with the wait slot it queues with).
fn new_holder(spec: &LockSpec, wait: Option<Duration>, fresh: String) -> (Holder, String) {
    let Some(owner) = spec.owner.clone() else {
        return (Holder::Lease { token: fresh }, String::new());
    };
    let holder = match spec.kind {
        LockKind::Fair => Holder::Fair {
            owner,
            wait_slot_ms: fair::wait_slot_ms(wait.and_then(|w| timing::to_millis("wait", w, true).ok())),
        },
        LockKind::Read => Holder::Read { owner },
        LockKind::Write => Holder::Write { owner },
        _ => Holder::Reentrant { owner },
    };
    (holder, fresh)
}

/// Acquires `spec`, waiting up to `wait` (`None` = until acquired).
///
/// # Errors
/// `NotAcquired` when the wait runs out; `Connection`, `Redis` or `Quorum` when errors persist.
pub(crate) async fn acquire(engine: &Arc<Engine>, spec: &LockSpec, wait: Option<Duration>) -> Result<Hold> {
    // A guard of this lock dropped just before: its background release lands first.
    let bound = engine.config.network_timeout;
    engine.dropped.settled(&spec.name, &*engine.runtime, bound).await;
    let lease = spec.lease.unwrap_or(engine.config.watchdog_timeout);
    // One draw of the OS random source for the holder's token (or request id) and the id of
    // the hold's first release.
    let [fresh, release_id] = token::new_tokens()?;
    let (holder, request_id) = new_holder(spec, wait, fresh);
    // A reentrant owner's acquires in flight are counted (see `drop_orphaned_counts`).
    let in_flight = engine.in_flight(&spec.name, &holder);
    let ticket = in_flight.as_ref().map(InFlight::ticket);
    // Undoes, in the background, an attempt whose outcome is unknown if this future ends
    // without a grant: an error return, or the caller dropping it (cancellation). It holds
    // the attempt's holder and request id.
    let mut undo = UndoOnDrop {
        engine,
        name: &spec.name,
        holder,
        request_id,
        lease,
        pending: false,
        _in_flight: in_flight,
    };
    let fair = matches!(undo.holder, Holder::Fair { .. });
    // Whether this fair waiter may be in the queue (from its first queueing attempt on).
    let mut queued = false;
    let cleanups = Cleanups::new(engine.nodes.len());
    let rt = &engine.runtime;
    let deadline = wait.map(|w| rt.now() + w);
    let mut waker: Option<Waker> = None;
    // Anti-barging. A lease lock with waiters in this client's line: take the last place
    // instead of trying first (they are served in order; line.rs). Else, right after handing
    // the lock to a waiter (possibly in another process), let the waiter have it.
    if wait != Some(Duration::ZERO) {
        let pause = engine.handoff_pause(&spec.name);
        let line = (spec.kind == LockKind::Lease && !engine.lines.is_empty())
            .then(|| undo.holder.channel(&spec.name))
            .filter(|channel| engine.lines.has_waiters(channel));
        if let Some(channel) = line {
            let remaining = deadline.map(|d| d.saturating_sub(rt.now()));
            let mut w = Waker::subscribe(engine, &channel, remaining, Some(&undo.holder)).await;
            if !w.is_head() {
                let poll =
                    timing::busy_retry_delay(-1, engine.config.poll_interval, remaining, random_unit());
                wait_turn(engine, &mut w, poll, deadline).await;
            }
            waker = Some(w);
        } else if let Some(pause) = pause {
            rt.sleep(deadline.map_or(pause, |d| pause.min(d.saturating_sub(rt.now()))))
                .await;
        }
    }
    let mut error_since: Option<Duration> = None;
    let mut failures = 0u32;
    let mut attempts = 0u32;
    // The plain first attempt tells "busy" without the key's TTL or type.
    let plain_first = spec.kind == LockKind::Lease && spec.fence.is_none();
    loop {
        if let Some(w) = waker.as_mut() {
            // A waiter without a wait that has not met the errors itself ends with its line's
            // once the line's attempts have met them for a network timeout, as its own would
            // (its first attempt could take another network timeout: a stalled server).
            let limit = engine.config.network_timeout;
            let judged_by_line = deadline.is_none() && error_since.is_none();
            if let Some(error) = w.line_error_after(rt.now(), limit).filter(|_| judged_by_line) {
                return Err(error);
            }
            w.mark_seen();
            w.ran(rt.now(), true);
        }
        let first = attempts == 0;
        if !first {
            // The attempt before was settled: granted nowhere, or undone by its clean-up.
            renew_attempt_ids(engine, &mut undo)?;
        }
        undo.pending = true;
        let attempt_started = rt.now();
        // A fair waiter queues once it listens on its own channel (and only if it waits).
        let queue = fair && waker.is_some() && wait != Some(Duration::ZERO);
        let turn = Turn {
            now_ms: if fair { rt.wall_clock_ms() } else { 0 },
            queue,
        };
        let outcome = attempt(
            engine,
            spec,
            &undo.holder,
            (&undo.request_id, turn),
            first,
            ticket,
            &cleanups,
        )
        .await;
        attempts += 1;
        queued |= queue;
        // Still to undo if the acquire ends here: an attempt whose outcome is unknown, and a
        // fair waiter's place in the queue. A refused upgrade changed nothing.
        undo.pending = match &outcome {
            Attempt::Failed(e) => e.kind() != ErrorKind::WouldDeadlock,
            Attempt::Busy { .. } => queued,
            Attempt::Granted(_) => false,
        };
        let now = rt.now();
        let remaining = deadline.map(|d| d.saturating_sub(now));
        let out_of_time = remaining == Some(Duration::ZERO);
        let delay = match outcome {
            Attempt::Granted(hold) => {
                undo.pending = false;
                if let Some(w) = waker.as_mut() {
                    w.granted();
                }
                // This owner's other acquires waiting in the line re-enter now (line.rs).
                if let Holder::Reentrant { owner } = &undo.holder {
                    if !engine.lines.is_empty() {
                        engine.lines.wake_owner(&undo.holder.channel(&spec.name), owner);
                    }
                }
                return Ok(hold.with_first_release_id(release_id));
            }
            Attempt::Busy { .. } if first && plain_first && out_of_time => continue,
            Attempt::Busy { pttl } => {
                error_since = None;
                failures = 0;
                if let Some(w) = &waker {
                    w.answered();
                }
                if out_of_time {
                    tracing::debug!(lock = %spec.name, "not acquired: wait ran out");
                    // A fair waiter leaves the queue before the caller hears "not acquired",
                    // so the next waiter is not held up by it.
                    undo.run_now().await;
                    return Err(Error::new(
                        ErrorKind::NotAcquired,
                        format!("lock {:?} is held by another owner; wait ran out", spec.name),
                    ));
                }
                if waker.is_none() {
                    // -1: not asked (a plain `SET NX` answers nil only).
                    let pttl = (pttl >= 0).then_some(pttl);
                    tracing::debug!(lock = %spec.name, pttl = ?pttl, "lock busy; subscribing and waiting");
                    let channel = undo.holder.channel(&spec.name);
                    let exclusive = matches!(spec.kind, LockKind::Lease | LockKind::Reentrant);
                    let line = exclusive.then_some(&undo.holder);
                    waker = Some(Waker::subscribe(engine, &channel, remaining, line).await);
                    continue;
                }
                // A fair waiter keeps the client's poll: its place in the queue lasts only
                // as long as its attempts renew it.
                let publishing = matches!(spec.kind, LockKind::Reentrant | LockKind::Read | LockKind::Write);
                let poll = waker
                    .as_ref()
                    .map_or(engine.config.poll_interval, |w| w.poll(engine, publishing));
                timing::busy_retry_delay(pttl, poll, remaining, random_unit())
            }
            Attempt::Failed(error) => {
                // Errors persist since the failed attempt *started* (an attempt that timed out
                // already used a network timeout, so this returns after one, not two), or
                // since the first error of this waiter's line (line.rs).
                let line_since = waker.as_ref().and_then(Waker::line_erring_since);
                let since = *error_since
                    .get_or_insert_with(|| line_since.map_or(attempt_started, |l| l.min(attempt_started)));
                if let Some(w) = &waker {
                    w.failed(since, &error);
                }
                // A wrong kind of client for the deployment (a Cluster node on a plain client),
                // a bad name, a refused permission or a key conflict is not cured by retrying.
                let permanent = error.is_permanent();
                let finite = deadline.is_some();
                let network_timeout = engine.config.network_timeout;
                if timing::wait_ends_on_error(permanent, out_of_time, finite, now - since, network_timeout) {
                    // Refused by nodes that answered (too few replicas confirmed the grant):
                    // they answer, so the grant is undone before the caller hears "not
                    // acquired" (a user trial of stop 41 found the key of a refused acquire
                    // still there right after the refusal). Other errors leave it to the
                    // background, within no more than the wait plus one network timeout.
                    if error.kind() == ErrorKind::NotAcquired {
                        undo.run_now().await;
                    }
                    return Err(error);
                }
                tracing::debug!(lock = %spec.name, error = %error, "acquire attempt failed; retrying");
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
            Some(w) => wait_turn(engine, w, delay, deadline).await,
            None => rt.sleep(delay).await,
        }
    }
}

/// The least time a waiting head of a line may go without running before the waiters behind
/// it pass it (line.rs): far above a busy machine's scheduling delays, so only a future that
/// is not being polled at all is passed.
const PARKED_AFTER_AT_LEAST: Duration = Duration::from_millis(250);

/// Sleeps until `waker` says to try again, or for a poll `delay` (never past `deadline`). A
/// waiter behind others in its client's line (line.rs) lets its polls pass until it is the
/// head or its wait ends: trying on a poll would take the lock past the waiters ahead of it
/// whenever a release fell in its poll (a user trial saw one waiter of ten served first in 7
/// rounds of 20). It tries on a poll all the same while the line's attempts meet errors, and
/// at each poll it moves a head that is not being polled to the end of the line.
async fn wait_turn(engine: &Engine, waker: &mut Waker, delay: Duration, deadline: Option<Duration>) {
    let rt = &engine.runtime;
    let patience = Patience {
        waiting: (engine.config.poll_interval * 2).max(PARKED_AFTER_AT_LEAST),
        attempt: engine.config.network_timeout,
    };
    loop {
        waker.ran(rt.now(), false);
        let nap = deadline.map_or(delay, |d| delay.min(d.saturating_sub(rt.now())));
        if let Either::Right(_) = select(rt.sleep(nap), Box::pin(waker.changed())).await {
            return;
        }
        let now = rt.now();
        if waker.is_head() || deadline.is_some_and(|d| now >= d) || waker.line_erring_since().is_some() {
            return;
        }
        waker.pass_parked_head(now, patience);
        if waker.is_head() {
            return;
        }
    }
}

/// Gives a quorum acquire fresh ids for its next attempt: a lease lock a new token, an
/// owner-based lock (reentrant) a new request id. The undo of an attempt that did not end in
/// a grant can arrive late (its reply timed out, so its node was not skipped any more, while
/// the request still waited in a stalled connection): with the same token it would delete the
/// next attempt's grant on that node, and with the same request id it would find that
/// attempt's replayed latch and take its count back. The holder would go on counting a node
/// that another owner can now take (seen in CI as a release answered "another owner holds
/// it"). Fresh ids confine every undo to its own attempt: a late `rlock_abort` of an earlier
/// request removes only the count that request added (quorum mode never takes a count for an
/// orphan, see `owner.rs`). A single node keeps its ids: it undoes nothing between attempts,
/// and a retry there finds a grant whose reply was lost as its own.
fn renew_attempt_ids(engine: &Engine, undo: &mut UndoOnDrop<'_>) -> Result<()> {
    if engine.nodes.len() > 1 {
        match &mut undo.holder {
            Holder::Lease { token } => *token = token::new_token()?,
            holder => undo.request_id = holder.request_id()?,
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/late_undo.rs"]
mod late_undo_tests;

#[cfg(all(test, feature = "native"))]
#[path = "tests/acquire.rs"]
mod tests;
