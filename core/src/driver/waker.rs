//! Wake-ups for one waiter: a subscription to its holder's channel (the lock's unlock channel,
//! a fair waiter's own, the read/write lock's) on every node that supports pub/sub (see
//! `acquire.rs` for how the acquire loop uses them). A waiter for an exclusive lock also takes
//! a place in its client's line for it (line.rs): its wake-ups go to the line's head.

use super::line::{Patience, Place};
use super::transport::Subscription;
use super::Engine;
use crate::error::Error;
use crate::protocol::request::Holder;
use futures::future::{select, select_all, Either};
use std::sync::Arc;
use std::time::Duration;

pub(super) struct Waker {
    subs: Vec<Box<dyn Subscription>>,
    /// The waiter's place in its client's line (exclusive locks), else `None`.
    place: Option<Place>,
}

impl Waker {
    /// Subscribes to `channel` (the holder's: `Holder::channel`) on every node, each bounded
    /// by the network timeout and the remaining wait. `line` (lease and reentrant locks: the
    /// acquire's holder): the waiter joins its client's line for `channel` first (line.rs).
    pub(crate) async fn subscribe(
        engine: &Arc<Engine>,
        channel: &str,
        remaining: Option<Duration>,
        line: Option<&Holder>,
    ) -> Waker {
        let place = line.map(|holder| {
            let owner = match holder {
                Holder::Reentrant { owner } => Some(owner.as_str()),
                _ => None,
            };
            engine.lines.join(channel, owner, engine.runtime.now())
        });
        let limit = remaining.map_or(engine.config.network_timeout, |r| {
            r.min(engine.config.network_timeout)
        });
        let mut subs = Vec::new();
        for (i, t) in engine.nodes.transports().iter().enumerate() {
            let sub = select(t.subscribe(channel), engine.runtime.sleep(limit)).await;
            match sub {
                Either::Left((Ok(Some(s)), _)) => subs.push(s),
                Either::Left((Ok(None), _)) => {}
                Either::Left((Err(e), _)) => {
                    tracing::debug!(node = engine.nodes.label(i), error = %e, "subscribe failed; polling instead")
                }
                Either::Right(_) => tracing::debug!(
                    node = engine.nodes.label(i),
                    "subscribe timed out; polling instead"
                ),
            }
        }
        Waker { subs, place }
    }

    pub(super) fn mark_seen(&mut self) {
        self.subs.iter_mut().for_each(|s| s.mark_seen());
    }

    /// Resolves when this waiter should try again: a release message arrived, or (a waiter in
    /// a line) the line handed it a wake-up. A waiter in a line that is not its head hands the
    /// messages it receives to the head and waits on. Pending for ever with neither (the poll
    /// decides).
    pub(super) async fn changed(&mut self) {
        loop {
            let Waker { subs, place } = self;
            let message = async {
                if subs.is_empty() {
                    return std::future::pending().await;
                }
                let _ = select_all(subs.iter_mut().map(|s| s.changed())).await;
            };
            let Some(place) = place.as_ref() else {
                return message.await;
            };
            match select(Box::pin(message), Box::pin(place.woken())).await {
                Either::Right(_) => return,
                Either::Left(_) if place.is_head() => return,
                Either::Left(_) => place.pass_to_head(),
            }
            self.mark_seen();
        }
    }

    /// The longest pause before this waiter's next attempt: the client's poll interval, or
    /// [`timing::LISTENING_POLL`](crate::protocol::timing::LISTENING_POLL) when it is longer
    /// and this waiter hears every node of `engine` for a kind whose holders all publish
    /// (`publishing`: not a lease lock, whose peers redis-py and node-redlock publish nothing).
    pub(super) fn poll(&self, engine: &Engine, publishing: bool) -> Duration {
        let poll = engine.config.poll_interval;
        if publishing && self.subs.len() == engine.nodes.len() {
            poll.max(crate::protocol::timing::LISTENING_POLL)
        } else {
            poll
        }
    }

    /// `true` when this waiter is first in its line (or in none).
    pub(super) fn is_head(&self) -> bool {
        self.place.as_ref().is_none_or(Place::is_head)
    }

    /// The waiter got the lock: the next one in its line waits for the release message.
    pub(super) fn granted(&mut self) {
        if let Some(place) = self.place.as_mut() {
            place.answered();
            place.granted();
        }
    }

    /// The waiter runs at `now`, starting an attempt (`active`) or waiting (line.rs).
    pub(super) fn ran(&self, now: Duration, active: bool) {
        if let Some(place) = &self.place {
            place.ran(now, active);
        }
    }

    /// A waiter behind the head: moves a head that has not run within `patience` to the end
    /// of the line (line.rs).
    pub(super) fn pass_parked_head(&self, now: Duration, patience: Patience) {
        if let Some(place) = &self.place {
            place.pass_parked_head(now, patience);
        }
    }

    /// When the errors met by the attempts of this waiter's line began, if they still do.
    pub(super) fn line_erring_since(&self) -> Option<Duration> {
        self.place.as_ref().and_then(Place::erring_since)
    }

    /// The latest error of this waiter's line once its errors, which began after this waiter
    /// joined it, have persisted for `limit` at `now` (line.rs).
    pub(super) fn line_error_after(&self, now: Duration, limit: Duration) -> Option<Error> {
        self.place.as_ref()?.error_after(now, limit)
    }

    /// An attempt failed on `error`, errors persisting since `since` (line.rs: every waiter
    /// tries).
    pub(super) fn failed(&self, since: Duration, error: &Error) {
        if let Some(place) = &self.place {
            place.failed(since, error);
        }
    }

    /// An attempt got an answer: the line waits in order again.
    pub(super) fn answered(&self) {
        if let Some(place) = &self.place {
            place.answered();
        }
    }
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use super::*;
    use crate::driver::testing::{self, cmd, raw, within};

    #[tokio::test]
    async fn a_publish_on_the_channel_wakes_the_waiter_and_an_unanswering_node_is_polled() {
        let (a, b) = (testing::server(), testing::server());
        let engine = testing::engine(&[&a, &b], testing::config()).await;
        b.pause().unwrap();
        // The paused node's subscription times out within the remaining wait: that node is
        // polled instead, the live one still wakes the waiter.
        let mut waker = within(Waker::subscribe(
            &engine,
            "redisson_lock__channel:{w}",
            Some(Duration::from_millis(200)),
            None,
        ))
        .await;
        assert_eq!(waker.subs.len(), 1, "subscribed on the live node only");
        b.resume().unwrap();
        waker.mark_seen();
        let mut conn = raw(&a).await;
        let receivers: i64 = cmd(&mut conn, &["PUBLISH", "redisson_lock__channel:{w}", "0"]).await;
        assert_eq!(
            receivers, 1,
            "the subscription was confirmed before subscribe returned"
        );
        within(waker.changed()).await;
    }

    #[tokio::test]
    async fn with_no_subscription_only_the_poll_wakes_the_waiter() {
        let a = testing::server();
        let engine = testing::engine(&[&a], testing::config()).await;
        a.pause().unwrap();
        let mut waker = within(Waker::subscribe(
            &engine,
            "redisson_lock__channel:{p}",
            Some(Duration::from_millis(100)),
            None,
        ))
        .await;
        a.resume().unwrap();
        assert!(waker.subs.is_empty());
        let woke = tokio::time::timeout(Duration::from_millis(200), waker.changed()).await;
        assert!(
            woke.is_err(),
            "changed() never resolves without a subscription (the poll interval decides)"
        );
    }
}
