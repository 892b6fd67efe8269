//! Waiting for a counter in Redis (a semaphore's permits, a latch's count): the loop shared by
//! the semaphores and the latch, as the lock's acquire loop does it (see `acquire.rs`).
//!
//! After the first "not yet" the waiter subscribes to the kind's channel (Redisson's
//! `redisson_sc:{N}` or latch channel) and tries again at once, so a release between the
//! attempt and the subscription is not missed; afterwards it sleeps until a message arrives or
//! a jittered poll interval passes (clients that do not publish are still seen). Errors are
//! retried with full-jitter back-off until the wait ends (without an end: while they persist
//! for less than the network timeout); permanent ones (ACL, OOM, a key of another type) are
//! returned at once (`timing::wait_ends_on_error`).

use super::transport::random_unit;
use super::waker::Waker;
use super::{BoxFut, Engine};
use crate::error::{Error, ErrorKind, Result};
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

/// One request to the (single) node, bounded by the network timeout (retried at most twice
/// after a connection error, inside that bound: see `nodes.rs`).
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
    /// poll (`Waker::poll`: at most `hint`, e.g. until a permit's lease ends) or the deadline, and
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
            self.waker = Some(Waker::subscribe(&self.engine, &self.channel, remaining, None).await);
            return true;
        };
        let hint_ms = hint.map_or(-1, |h| h.as_millis().min(i64::MAX as u128) as i64);
        // Semaphores, permits and latches: Redisson's formats, whose every holder publishes.
        let poll = waker.poll(&self.engine, true);
        let delay = timing::busy_retry_delay(hint_ms, poll, remaining, random_unit());
        let _ = select(self.engine.runtime.sleep(delay), Box::pin(waker.changed())).await;
        true
    }

    /// After a failed attempt that started at `started`: `Err` when waiting must end
    /// (`timing::wait_ends_on_error`: a permanent error, the deadline, or, without one, errors
    /// persisting for the network timeout); else sleeps a back-off and returns `Ok`.
    pub(crate) async fn failed(&mut self, error: Error, started: Duration) -> Result<()> {
        let now = self.engine.now();
        let since = *self.error_since.get_or_insert(started);
        let remaining = self.remaining();
        let (permanent, out_of_time) = (error.is_permanent(), remaining == Some(Duration::ZERO));
        let (finite, network_timeout) = (self.deadline.is_some(), self.engine.config.network_timeout);
        if timing::wait_ends_on_error(permanent, out_of_time, finite, now - since, network_timeout) {
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

/// Gives back what one semaphore acquire request took: `(engine, semaphore name, request or
/// permit id)`; nothing when that request never applied.
pub(crate) type GiveBack = fn(Arc<Engine>, String, String) -> BoxFut<'static, ()>;

/// Gives back, in the background, what an acquire request of a semaphore took if its caller
/// never saw the grant (cancelled, or the reply lost): armed while an attempt's outcome is
/// unknown.
pub(crate) struct GiveBackOnDrop {
    engine: Arc<Engine>,
    name: String,
    id: String,
    give_back: GiveBack,
    pub(crate) armed: bool,
}

impl GiveBackOnDrop {
    /// Disarmed; `give_back` undoes request `id` of semaphore `name`.
    pub(crate) fn new(engine: &Arc<Engine>, name: &str, id: String, give_back: GiveBack) -> Self {
        let (engine, name) = (engine.clone(), name.to_owned());
        GiveBackOnDrop {
            engine,
            name,
            id,
            give_back,
            armed: false,
        }
    }

    /// The request (or permit) id whose grant this gives back.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Gives back now what `drop` would in the background. Stays armed while it runs: dropped
    /// midway, it is sent again in the background (it may be repeated).
    async fn give_back_now(&mut self) {
        (self.give_back)(self.engine.clone(), self.name.clone(), self.id.clone()).await;
        self.armed = false;
    }
}

impl Drop for GiveBackOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (name, id) = (std::mem::take(&mut self.name), std::mem::take(&mut self.id));
        let give_back = (self.give_back)(self.engine.clone(), name, id);
        super::cleanup::spawn(&*self.engine.runtime, give_back);
    }
}

impl Waiter {
    /// [`failed`](Self::failed) for a semaphore acquire whose `undo` is armed: when the wait
    /// ends on an acquire refused after it applied (`NotAcquired`: too few replicas confirmed
    /// it, `sync_replicas`), the node answered, so what it took goes back before the caller
    /// hears of the refusal, not in the background after it.
    pub(crate) async fn failed_giving_back(
        &mut self,
        error: Error,
        started: Duration,
        undo: &mut GiveBackOnDrop,
    ) -> Result<()> {
        let refused = error.kind() == ErrorKind::NotAcquired;
        let end = self.failed(error, started).await;
        if end.is_err() && refused {
            undo.give_back_now().await;
        }
        end
    }
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use super::*;
    use crate::driver::testing::{self, cmd, raw, within};
    use crate::error::ErrorKind;

    #[tokio::test]
    async fn the_first_not_yet_subscribes_and_tries_again_at_once_and_the_wait_ends_at_its_deadline() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let mut waiter = Waiter::new(
            &engine,
            "redisson_sc:{w}".to_owned(),
            Some(Duration::from_millis(300)),
        );
        waiter.attempt_starts();
        assert!(within(waiter.not_yet(None)).await);
        assert!(waiter.waker.is_some(), "subscribed");
        // A release published on the channel ends the sleep (the poll interval is 20 ms here,
        // so this only checks it returns to try again).
        let mut conn = raw(&s).await;
        let receivers: i64 = cmd(&mut conn, &["PUBLISH", "redisson_sc:{w}", "1"]).await;
        assert_eq!(receivers, 1);
        assert!(within(waiter.not_yet(None)).await);
        within(async {
            while waiter.remaining() != Some(Duration::ZERO) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(!waiter.not_yet(None).await, "the wait is over");
    }

    #[tokio::test]
    async fn errors_are_retried_while_transient_and_end_the_wait_when_permanent_or_persisting() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let mut waiter = Waiter::new(&engine, "redisson_sc:{e}".to_owned(), None);
        let started = waiter.attempt_starts();
        assert!(
            within(waiter.failed(Error::connection("x"), started))
                .await
                .is_ok(),
            "retried"
        );
        // Errors since the first failed attempt started, for a network timeout: the wait ends.
        tokio::time::sleep(engine.config.network_timeout).await;
        let e = within(waiter.failed(Error::connection("still down"), engine.now()))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connection);

        let mut waiter = Waiter::new(&engine, "redisson_sc:{e}".to_owned(), None);
        let e = within(waiter.failed(Error::new(ErrorKind::NoPermission, "NOPERM"), engine.now()))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoPermission, "permanent: at once");
    }

    #[tokio::test]
    async fn counters_refuse_a_quorum_client() {
        let (a, b) = (testing::server(), testing::server());
        let engine = testing::engine(&[&a, &b], testing::config()).await;
        let e = single_node(&engine).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::InvalidArgument, SINGLE_NODE_ONLY)
        );
        let engine = testing::engine(&[&a], testing::config()).await;
        assert!(single_node(&engine).is_ok());
    }
}
