//! The acquire loop: attempt on every node, wait for a wake-up or a poll, try again.
//!
//! Waiting: after the first busy attempt the waiter subscribes to the lock's unlock channel on
//! every node (one shared subscriber connection per node) and attempts again at once, so a
//! release between the attempt and the subscription is not missed. Afterwards it sleeps until
//! a release message arrives or `min(holder's PTTL, poll interval)` (jittered) passes, so
//! releases by clients that do not publish (redis-py) are still seen promptly.
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
use super::owner::InFlight;
use super::rollback::{Cleanups, UndoOnDrop};
use super::transport::{random_unit, Runtime};
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

/// How Redis will know this acquire's holder: a fresh token for a lease lock, else the owner
/// (a fair waiter with the wait slot it queues with).
fn new_holder(spec: &LockSpec, wait: Option<Duration>) -> Result<Holder> {
    let Some(owner) = spec.owner.clone() else {
        return Ok(Holder::Lease {
            token: token::new_token()?,
        });
    };
    Ok(match spec.kind {
        LockKind::Fair => Holder::Fair {
            owner,
            wait_slot_ms: fair::wait_slot_ms(wait.and_then(|w| timing::to_millis("wait", w, true).ok())),
        },
        LockKind::Read => Holder::Read { owner },
        LockKind::Write => Holder::Write { owner },
        _ => Holder::Reentrant { owner },
    })
}

/// Acquires `spec`, waiting up to `wait` (`None` = until acquired).
///
/// # Errors
/// `NotAcquired` when the wait runs out; `Connection`, `Redis` or `Quorum` when errors persist.
pub(crate) async fn acquire(engine: &Arc<Engine>, spec: &LockSpec, wait: Option<Duration>) -> Result<Hold> {
    let lease = spec.lease.unwrap_or(engine.config.watchdog_timeout);
    let mut holder = new_holder(spec, wait)?;
    let mut request_id = holder.request_id()?;
    // A reentrant owner's acquires in flight are counted (see `drop_orphaned_counts`).
    let in_flight = engine.in_flight(&spec.name, &holder);
    let ticket = in_flight.as_ref().map(InFlight::ticket);
    // Undoes, in the background, an attempt whose outcome is unknown if this future ends
    // without a grant: an error return, or the caller dropping it (cancellation).
    let mut undo = UndoOnDrop {
        engine: engine.clone(),
        name: spec.name.clone(),
        holder: holder.clone(),
        request_id: request_id.clone(),
        lease,
        pending: false,
        _in_flight: in_flight,
    };
    let fair = matches!(holder, Holder::Fair { .. });
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
        let channel = holder.channel(&spec.name);
        if spec.kind == LockKind::Lease && engine.lines.has_waiters(&channel) {
            let remaining = deadline.map(|d| d.saturating_sub(rt.now()));
            let mut w = Waker::subscribe(engine, &channel, remaining, true).await;
            if !w.is_head() {
                let poll =
                    timing::busy_retry_delay(-1, engine.config.poll_interval, remaining, random_unit());
                wait_turn(rt, &mut w, poll, deadline).await;
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
            w.mark_seen();
        }
        let first = attempts == 0;
        if !first {
            // The attempt before was settled: granted nowhere, or undone by its clean-up.
            renew_attempt_ids(engine, &mut holder, &mut request_id, &mut undo)?;
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
            &holder,
            (&request_id, turn),
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
                return Ok(hold);
            }
            Attempt::Busy { .. } if first && plain_first && out_of_time => continue,
            Attempt::Busy { pttl } => {
                error_since = None;
                failures = 0;
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
                    tracing::debug!(lock = %spec.name, pttl, "lock busy; subscribing and waiting");
                    let channel = holder.channel(&spec.name);
                    let exclusive = matches!(spec.kind, LockKind::Lease | LockKind::Reentrant);
                    waker = Some(Waker::subscribe(engine, &channel, remaining, exclusive).await);
                    continue;
                }
                timing::busy_retry_delay(pttl, engine.config.poll_interval, remaining, random_unit())
            }
            Attempt::Failed(error) => {
                // Errors persist since the failed attempt *started*: an attempt that timed
                // out already used a network timeout, so this returns after one, not two.
                let since = *error_since.get_or_insert(attempt_started);
                // A wrong kind of client for the deployment (a Cluster node on a plain client),
                // a bad name, a refused permission or a key conflict is not cured by retrying.
                let permanent = error.is_permanent();
                let finite = deadline.is_some();
                let network_timeout = engine.config.network_timeout;
                if timing::wait_ends_on_error(permanent, out_of_time, finite, now - since, network_timeout) {
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
            Some(w) => wait_turn(rt, w, delay, deadline).await,
            None => rt.sleep(delay).await,
        }
    }
}

/// Sleeps until `waker` says to try again, or for a poll `delay`. A waiter behind others in
/// its client's line (line.rs) lets its polls pass until it is the head or its wait ends:
/// trying on a poll would take the lock past the waiters ahead of it whenever a release
/// fell in its poll (a user trial saw one waiter of ten served first in 7 rounds of 20).
async fn wait_turn(rt: &Arc<dyn Runtime>, waker: &mut Waker, delay: Duration, deadline: Option<Duration>) {
    loop {
        if let Either::Right(_) = select(rt.sleep(delay), Box::pin(waker.changed())).await {
            return;
        }
        let out_of_time = deadline.is_some_and(|d| rt.now() >= d);
        if waker.is_head() || out_of_time {
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
fn renew_attempt_ids(
    engine: &Engine,
    holder: &mut Holder,
    request_id: &mut String,
    undo: &mut UndoOnDrop,
) -> Result<()> {
    if engine.nodes.len() > 1 {
        match holder {
            Holder::Lease { token } => {
                *token = token::new_token()?;
                undo.holder = holder.clone();
            }
            _ => {
                *request_id = holder.request_id()?;
                undo.request_id = request_id.clone();
            }
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/late_undo.rs"]
mod late_undo_tests;

#[cfg(all(test, feature = "native"))]
mod tests {
    use super::*;
    use crate::driver::testing::{self, cmd, lease_spec, raw, within};
    use crate::driver::Config;

    #[test]
    fn each_kind_is_known_to_redis_by_its_token_or_owner() {
        let mut spec = lease_spec("k", None);
        let (a, b) = (new_holder(&spec, None).unwrap(), new_holder(&spec, None).unwrap());
        assert!(
            matches!((&a, &b), (Holder::Lease { token: x }, Holder::Lease { token: y }) if x != y && !x.is_empty())
        );
        spec.owner = Some("c:7".to_owned());
        for (kind, expect) in [
            (LockKind::Reentrant, Holder::Reentrant { owner: "c:7".into() }),
            (LockKind::Read, Holder::Read { owner: "c:7".into() }),
            (LockKind::Write, Holder::Write { owner: "c:7".into() }),
        ] {
            spec.kind = kind;
            assert_eq!(new_holder(&spec, None).unwrap(), expect);
        }
        spec.kind = LockKind::Fair;
        let wait = Some(Duration::from_secs(2));
        assert_eq!(
            new_holder(&spec, wait).unwrap(),
            Holder::Fair {
                owner: "c:7".into(),
                wait_slot_ms: fair::wait_slot_ms(Some(2_000)),
            },
            "a fair waiter queues with its wait"
        );
    }

    #[tokio::test]
    async fn a_busy_lock_is_not_acquired_within_the_wait_and_application_data_is_a_conflict() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let mut conn = raw(&s).await;
        let spec = lease_spec("a:1", Some(Duration::from_secs(60)));
        let held = acquire(&engine, &spec, Some(Duration::ZERO)).await.unwrap();
        let e = acquire(&engine, &spec, Some(Duration::ZERO))
            .await
            .err()
            .expect("refused");
        assert_eq!(e.kind(), ErrorKind::NotAcquired);
        let e = within(acquire(&engine, &spec, Some(Duration::from_millis(100))))
            .await
            .err()
            .expect("refused");
        assert_eq!(e.kind(), ErrorKind::NotAcquired);
        held.release().await.unwrap();

        // A string without TTL that is no token: the plain SET NX only says "busy", the script
        // form that follows says what it is, even with no wait.
        let _: () = cmd(&mut conn, &["SET", "a:2", "application data"]).await;
        let e = acquire(&engine, &lease_spec("a:2", None), Some(Duration::ZERO))
            .await
            .err()
            .expect("refused");
        assert_eq!(e.kind(), ErrorKind::KeyConflict, "{e}");
        assert_eq!(
            cmd::<Option<String>>(&mut conn, &["GET", "a:2"]).await.as_deref(),
            Some("application data"),
            "left untouched"
        );
    }

    #[tokio::test]
    async fn errors_end_the_wait_after_one_network_timeout_and_permanent_ones_at_once() {
        let s = testing::server();
        // A long network timeout: retrying a permanent error would outlast the hang bound.
        let config = Config {
            network_timeout: Duration::from_secs(60),
            ..testing::config()
        };
        let engine = testing::engine(&[&s], config).await;
        let mut conn = raw(&s).await;
        let _: i64 = cmd(&mut conn, &["RPUSH", "a:3", "x"]).await;
        let e = within(acquire(&engine, &lease_spec("a:3", None), None))
            .await
            .err()
            .expect("refused");
        assert_eq!(
            e.kind(),
            ErrorKind::KeyConflict,
            "returned at once, not retried: {e}"
        );

        // Unreachable Redis with no wait limit: the error returns once it persisted for the
        // network timeout (500 ms here), not never.
        let engine = testing::engine(&[&s], testing::config()).await;
        s.pause().unwrap();
        let result = within(acquire(&engine, &lease_spec("a:4", None), None)).await;
        s.resume().unwrap();
        let e = result.err().expect("no grant from a paused server");
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    }

    #[tokio::test]
    async fn a_waiter_is_woken_by_the_release_not_the_poll() {
        let s = testing::server();
        // Poll and lease far beyond the hang bound: only the unlock message can wake it.
        let config = Config {
            poll_interval: Duration::from_secs(120),
            handoff_grace: Duration::ZERO,
            ..testing::config()
        };
        let engine = testing::engine(&[&s], config).await;
        let spec = lease_spec("a:5", Some(Duration::from_secs(120)));
        let held = acquire(&engine, &spec, Some(Duration::ZERO)).await.unwrap();
        let waiter = {
            let (engine, spec) = (engine.clone(), spec.clone());
            tokio::spawn(async move { acquire(&engine, &spec, None).await.map(|h| h.fence) })
        };
        // Let the waiter subscribe and go to sleep.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiter.is_finished());
        held.release().await.unwrap();
        within(waiter).await.unwrap().unwrap();
    }
}
