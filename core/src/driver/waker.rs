//! Wake-ups for one waiter: a subscription to its holder's channel (the lock's unlock channel,
//! a fair waiter's own, the read/write lock's) on every node that supports pub/sub (see
//! `acquire.rs` for how the acquire loop uses them).

use super::transport::Subscription;
use super::Engine;
use futures::future::{select, select_all, Either};
use std::sync::Arc;
use std::time::Duration;

pub(super) struct Waker {
    subs: Vec<Box<dyn Subscription>>,
}

impl Waker {
    /// Subscribes to `channel` (the holder's: `Holder::channel`) on every node, each bounded
    /// by the network timeout and the remaining wait.
    pub(crate) async fn subscribe(engine: &Arc<Engine>, channel: &str, remaining: Option<Duration>) -> Waker {
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
        Waker { subs }
    }

    pub(super) fn mark_seen(&mut self) {
        self.subs.iter_mut().for_each(|s| s.mark_seen());
    }

    pub(super) async fn changed(&mut self) {
        if self.subs.is_empty() {
            return std::future::pending().await;
        }
        let _ = select_all(self.subs.iter_mut().map(|s| s.changed())).await;
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
