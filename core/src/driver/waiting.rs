//! Waiting for a counter in Redis (a semaphore's permits, a latch's count): the loop shared by
//! the semaphores and the latch, as the lock's acquire loop does it (see `acquire.rs`).
//!
//! After the first "not yet" the waiter subscribes to the kind's channel (Redisson's
//! `redisson_sc:{N}` or latch channel) and tries again at once, so a release between the
//! attempt and the subscription is not missed; afterwards it sleeps until a message arrives or
//! a jittered poll interval passes (clients that do not publish are still seen). Errors are
//! retried with full-jitter back-off while they persist for less than the network timeout;
//! permanent ones (ACL, OOM, a key of another type) are returned at once.

use super::transport::random_unit;
use super::waker::Waker;
use super::Engine;
use crate::error::{Error, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use crate::protocol::timing;
use futures::future::select;
use std::sync::Arc;
use std::time::Duration;

/// The message of the semaphores and the latch on a quorum client.
pub(crate) const SINGLE_NODE_ONLY: &str =
    "semaphores and count-down latches need a single-node, Cluster or Sentinel client";

/// Refuses a quorum client for kinds that keep one counter (Redisson has no Redlock form of
/// them: N independent counters are not one semaphore).
pub(crate) fn single_node(engine: &Engine) -> Result<()> {
    engine.registry.check_open()?;
    if engine.is_quorum() {
        return Err(Error::invalid(SINGLE_NODE_ONLY));
    }
    Ok(())
}

/// One request to the (single) node, bounded by the network timeout (retried once after a
/// connection error, inside that bound: see `nodes.rs`).
pub(crate) async fn call(engine: &Engine, request: &Request) -> Result<Reply> {
    engine.nodes.call(0, request, engine.config.network_timeout).await
}

/// The state of one wait: its deadline, its subscription and the errors seen.
pub(crate) struct Waiter {
    engine: Arc<Engine>,
    channel: String,
    deadline: Option<Duration>,
    waker: Option<Waker>,
    error_since: Option<Duration>,
    failures: u32,
}

impl Waiter {
    /// A wait on `channel` of at most `wait` (`None`: no end).
    pub(crate) fn new(engine: &Arc<Engine>, channel: String, wait: Option<Duration>) -> Waiter {
        Waiter {
            deadline: wait.map(|w| engine.now() + w),
            engine: engine.clone(),
            channel,
            waker: None,
            error_since: None,
            failures: 0,
        }
    }

    /// Call before each attempt: forgets wake-ups already acted on; returns the attempt's start.
    pub(crate) fn attempt_starts(&mut self) -> Duration {
        if let Some(w) = self.waker.as_mut() {
            w.mark_seen();
        }
        self.engine.now()
    }

    /// The time left (`None`: no end).
    pub(crate) fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_sub(self.engine.now()))
    }

    /// After a "not yet" answer: `false` when the wait is over; else waits for a message, the
    /// poll interval (at most `hint`, e.g. until a permit's lease ends) or the deadline, and
    /// returns `true` (the first time: subscribes and returns at once).
    pub(crate) async fn not_yet(&mut self, hint: Option<Duration>) -> bool {
        self.error_since = None;
        self.failures = 0;
        let remaining = self.remaining();
        if remaining == Some(Duration::ZERO) {
            return false;
        }
        let Some(waker) = self.waker.as_mut() else {
            tracing::debug!(channel = %self.channel, "not yet; subscribing and waiting");
            self.waker = Some(Waker::subscribe(&self.engine, &self.channel, remaining).await);
            return true;
        };
        let hint_ms = hint.map_or(-1, |h| h.as_millis().min(i64::MAX as u128) as i64);
        let delay = timing::busy_retry_delay(
            hint_ms,
            self.engine.config.poll_interval,
            remaining,
            random_unit(),
        );
        let _ = select(self.engine.runtime.sleep(delay), Box::pin(waker.changed())).await;
        true
    }

    /// After a failed attempt that started at `started`: `Err` when waiting must end (a
    /// permanent error, the deadline, or errors persisting for the network timeout); else
    /// sleeps a back-off and returns `Ok`.
    pub(crate) async fn failed(&mut self, error: Error, started: Duration) -> Result<()> {
        let now = self.engine.now();
        let since = *self.error_since.get_or_insert(started);
        let remaining = self.remaining();
        if error.kind().is_permanent()
            || remaining == Some(Duration::ZERO)
            || now - since >= self.engine.config.network_timeout
        {
            return Err(error);
        }
        tracing::debug!(channel = %self.channel, error = %error, "attempt failed; retrying");
        self.failures += 1;
        let config = &self.engine.config;
        let backoff = timing::backoff(self.failures, config.retry_base, config.retry_cap, random_unit());
        self.engine
            .runtime
            .sleep(remaining.map_or(backoff, |r| backoff.min(r)))
            .await;
        Ok(())
    }
}
