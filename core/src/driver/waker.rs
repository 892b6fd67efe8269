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
