//! Wake-ups on a Redis Cluster: a second cluster connection (RESP3) for subscriptions,
//! `SSUBSCRIBE` to the shard channel of the lock's slot when the cluster has sharded pub/sub,
//! else `SUBSCRIBE`.
//!
//! When a slot leaves a master (a migration, a failover) the server drops the subscribers of
//! its shard channels with a `SUNSUBSCRIBE` push, and redis-rs forgets those subscriptions
//! (its own resubscription after a topology change covers the ones it still tracks): a user
//! trial of stop 43 saw `PUBSUB SHARDNUMSUB` at 0 on the new master, its waiters woken only
//! by their poll. So on that push, and when a node connection is lost, the subscriber sends
//! `SSUBSCRIBE` again for every shard channel that still has waiters (redis-rs routes it to
//! the slot's current master, following `MOVED`), retrying while the slot has no master.
//! Either push also wakes every waiter to poll once, for a message missed meanwhile.
//!
//! A master that is paused (or cut off) sends no push and resets nothing: its replica takes
//! over while the subscriber's connection stays open to it, unanswered. The data path sees
//! that first (a waiter's poll gets no answer, and the transport connects again); it then has
//! the subscriber [`renew`](ClusterSubscriber::renew) its connection too: a new one through
//! the first seed that answers (a new topology), every channel with waiters subscribed on it,
//! the old one dropped.

use super::cluster::{PushHandler, SharedPushHandler};
use super::cluster_connect::{connect_through_first_answering, per_seed_clients};
use super::node::NodeSpec;
use super::pubsub::{ChannelWaker, Channels, Unsubscriber};
use super::redis_calls::map_error;
use super::tls::TlsOptions;
use super::transport::TransportOptions;
use crate::error::{Error, Result};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{PushInfo, PushKind, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// Tries of a subscription made again after a topology change: the pauses double from
/// 50 ms to 1 s, so about a minute in all, longer than a Cluster's failover takes
/// (`cluster-node-timeout` and an election). Waiters poll meanwhile.
const RESUBSCRIBE_TRIES: u32 = 64;
const FIRST_RESUBSCRIBE_PAUSE: Duration = Duration::from_millis(50);
/// Pauses after which a successful resubscription is made once more (see `subscribe_again`).
const SETTLING_PASSES: [Duration; 2] = [Duration::from_millis(500), Duration::from_secs(2)];

struct Inner {
    client: ClusterClient,
    /// A client of each seed alone, for renewing through the first that answers.
    per_seed: Vec<ClusterClient>,
    channels: Channels,
    /// The connection and its subscriptions; the async mutex serializes the commands.
    state: tokio::sync::Mutex<State>,
    /// A renewal is under way (one at a time).
    renewing: AtomicBool,
}

#[derive(Default)]
struct State {
    /// Made by the first subscription; replaced by [`ClusterSubscriber::renew`].
    conn: Option<ClusterConnection>,
    /// Channels subscribed on `conn` (`true` = sharded).
    subscribed: HashSet<(String, bool)>,
}

/// The shared subscriber of a cluster client.
pub(crate) struct ClusterSubscriber {
    inner: Arc<Inner>,
}

impl ClusterSubscriber {
    pub(crate) fn new(seeds: &[NodeSpec], tls: &TlsOptions, options: &TransportOptions) -> Result<Self> {
        let channels = Channels::default();
        // The push handler belongs to the client, which `Inner` owns: it reaches `Inner`
        // through a weak reference set once `Inner` exists.
        let this: Arc<OnceLock<Weak<Inner>>> = Arc::default();
        let on_push: SharedPushHandler = {
            let (channels, this) = (channels.clone(), this.clone());
            Arc::new(move |push: &PushInfo| {
                channels.on_push(push);
                if let Some(inner) = this.get().and_then(Weak::upgrade) {
                    inner.after_push(push);
                }
            })
        };
        let push: PushHandler = {
            let h = on_push.clone();
            Box::new(move |p: &PushInfo| h(p))
        };
        let client = super::cluster::cluster_client(seeds, tls, options, Some(push))?;
        let per_seed = per_seed_clients(seeds, tls, options, Some(&on_push))?;
        let inner = Arc::new(Inner {
            client,
            per_seed,
            channels,
            state: tokio::sync::Mutex::default(),
            renewing: AtomicBool::new(false),
        });
        let _ = this.set(Arc::downgrade(&inner));
        Ok(ClusterSubscriber { inner })
    }

    /// Subscribes to `channel`, sharded or not (confirmed before this returns).
    pub(crate) async fn subscribe(&self, channel: &str, sharded: bool) -> Result<ChannelWaker> {
        let inner = &self.inner;
        let notify = inner.channels.add(channel);
        let waker = ChannelWaker {
            unsubscribe: Some(Box::new(Unsubscribe {
                inner: inner.clone(),
                sharded,
                runtime: tokio::runtime::Handle::current(),
            })),
            channels: inner.channels.clone(),
            channel: channel.to_owned(),
            notify,
        };
        let mut state = inner.state.lock().await;
        let key = (channel.to_owned(), sharded);
        if !state.subscribed.contains(&key) {
            let mut conn = match &state.conn {
                Some(conn) => conn.clone(),
                None => {
                    let conn = inner.connect(false).await?;
                    state.conn.insert(conn).clone()
                }
            };
            state.subscribed.insert(key.clone());
            if let Err(e) = subscribe_on(&mut conn, channel, sharded, false).await {
                state.subscribed.remove(&key);
                return Err(map_error(&e, &[]));
            }
        }
        Ok(waker)
    }

    /// After a call on the data connection got no answer (a node paused or cut off: its
    /// replica may have taken over with no push to tell this subscriber): in the background,
    /// a new connection with every channel that has waiters subscribed on it replaces this
    /// one, tried again with the pauses of a resubscription while the slots have no
    /// reachable master; then every waiter polls once, for a message missed meanwhile.
    pub(crate) fn renew(&self) {
        let inner = self.inner.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if inner.renewing.swap(true, Ordering::AcqRel) {
            return;
        }
        runtime.spawn(async move {
            let renewed = inner.renew_with_retries().await;
            inner.renewing.store(false, Ordering::Release);
            if renewed {
                inner.channels.wake_all();
                // Settling passes, as after a push (a redirect's slot-map refresh).
                inner.subscribe_again(None).await;
            }
        });
    }
}

/// `SSUBSCRIBE` (sharded) or `SUBSCRIBE` `channel` on `conn`; when `moved` (after a
/// topology change), a sharded one goes to the slot's current master.
async fn subscribe_on(
    conn: &mut ClusterConnection,
    channel: &str,
    sharded: bool,
    moved: bool,
) -> redis::RedisResult<()> {
    if !sharded {
        return conn.subscribe(channel).await;
    }
    // After a failover, redis-rs' slot map may still name the old master, now a replica,
    // which accepts `SSUBSCRIBE` for its master's slots but was not seen to pass on the new
    // master's messages. A read of a key in the channel's slot gets `MOVED` there, after
    // which redis-rs knows the new master. The read may be refused (an ACL user without
    // `EXISTS`): the subscription is made all the same.
    if let Some(key) = slot_key(channel).filter(|_| moved) {
        let _: redis::RedisResult<i64> = redis::cmd("EXISTS").arg(key).query_async(conn).await;
    }
    conn.ssubscribe(channel).await
}

impl Inner {
    /// A connection through all the seeds at first; through the first seed that answers
    /// when `again` (a paused seed would hold it back a connect timeout: `cluster_connect`).
    async fn connect(&self, again: bool) -> Result<ClusterConnection> {
        let made = match again {
            true => connect_through_first_answering(&self.client, &self.per_seed).await,
            false => self.client.get_async_connection().await,
        };
        made.map_err(|e| Error::connection(format!("cluster subscriber: {}", map_error(&e, &[]).message())))
    }

    /// [`ClusterSubscriber::renew`]'s tries; `true` once a new connection is in place.
    async fn renew_with_retries(&self) -> bool {
        let mut pause = FIRST_RESUBSCRIBE_PAUSE;
        for _ in 0..RESUBSCRIBE_TRIES {
            match self.renew_once().await {
                Ok(renewed) => return renewed,
                Err(e) => tracing::debug!(error = %e, "renewing the cluster subscriber's connection"),
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
        false
    }

    /// A new connection with the channels that have waiters, in place of the current one
    /// (`Ok(false)`: no connection to renew; with no waiters, the next subscription makes one).
    async fn renew_once(&self) -> Result<bool> {
        if self.state.lock().await.conn.is_none() {
            return Ok(false);
        }
        // Made before the lock is taken: subscriptions go on meanwhile, on the old one.
        let mut conn = self.connect(true).await?;
        let mut state = self.state.lock().await;
        let wanted: HashSet<(String, bool)> = state
            .subscribed
            .iter()
            .filter(|(name, _)| self.channels.wanted(name))
            .cloned()
            .collect();
        for (name, sharded) in &wanted {
            subscribe_on(&mut conn, name, *sharded, true)
                .await
                .map_err(|e| map_error(&e, &[]))?;
        }
        tracing::debug!(channels = wanted.len(), "cluster subscriber connected again");
        state.subscribed = wanted;
        state.conn = if state.subscribed.is_empty() {
            None
        } else {
            Some(conn)
        };
        Ok(true)
    }

    /// After the server dropped a shard channel's subscribers (`SUNSUBSCRIBE` push: its slot
    /// moved) or a node connection was lost, subscribes again in the background.
    fn after_push(self: &Arc<Self>, push: &PushInfo) {
        let only = match (&push.kind, push.data.first()) {
            (PushKind::SUnsubscribe, Some(Value::BulkString(name))) => {
                Some(String::from_utf8_lossy(name).into_owned())
            }
            (PushKind::Disconnection, _) => None,
            _ => return,
        };
        // Push messages are delivered on a connection's task, inside the runtime.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(self.clone().subscribe_again(only));
        }
    }

    async fn subscribe_again(self: Arc<Self>, only: Option<String>) {
        let mut pause = FIRST_RESUBSCRIBE_PAUSE;
        let mut settling = SETTLING_PASSES.iter();
        for _ in 0..RESUBSCRIBE_TRIES {
            match self.subscribe_again_once(only.as_deref()).await {
                // Once more after each settling pause: a redirect's slot-map refresh runs in
                // the background, so a pass right after the push may still have gone to the
                // old master (CI under load saw that after a failover).
                Ok(()) => match settling.next() {
                    Some(&after) => {
                        tokio::time::sleep(after).await;
                        continue;
                    }
                    None => return,
                },
                Err(e) => tracing::debug!(error = %e, "subscribing again after a topology change"),
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// `SSUBSCRIBE` for each shard channel subscribed here (or only `only`) that still has
    /// waiters. Our own `SUNSUBSCRIBE` (its channel no longer in `subscribed`) sends nothing;
    /// subscribing a connection twice to a channel is harmless.
    async fn subscribe_again_once(&self, only: Option<&str>) -> redis::RedisResult<()> {
        let state = self.state.lock().await;
        let Some(conn) = &state.conn else {
            return Ok(());
        };
        let mut conn = conn.clone();
        let again = state.subscribed.iter().filter(|(name, sharded)| {
            *sharded && only.is_none_or(|o| o == name) && self.channels.wanted(name)
        });
        for (name, _) in again {
            subscribe_on(&mut conn, name, true, true).await?;
        }
        Ok(())
    }
}

/// A key in the slot of shard channel `channel`: the content of its hash tag (the lock's
/// name: it holds no `}`, so it is hashed whole, to the channel's slot).
fn slot_key(channel: &str) -> Option<&str> {
    let open = channel.find('{')?;
    let len = channel[open + 1..].find('}')?;
    (len > 0).then(|| &channel[open + 1..open + 1 + len])
}

struct Unsubscribe {
    inner: Arc<Inner>,
    sharded: bool,
    runtime: tokio::runtime::Handle,
}

impl Unsubscriber for Unsubscribe {
    fn unsubscribe(&self, channel: String) {
        let (inner, sharded) = (self.inner.clone(), self.sharded);
        self.runtime.spawn(async move {
            let mut state = inner.state.lock().await;
            let key = (channel, sharded);
            if !inner.channels.wanted(&key.0) && state.subscribed.remove(&key) {
                if let Some(conn) = &state.conn {
                    let mut conn = conn.clone();
                    let _ = if sharded {
                        conn.sunsubscribe(&key.0).await
                    } else {
                        conn.unsubscribe(&key.0).await
                    };
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::slot_key;

    #[test]
    fn a_channel_slot_key_is_its_hash_tag() {
        assert_eq!(slot_key("redisson_lock__channel:{lock:a}"), Some("lock:a"));
        assert_eq!(slot_key("redisson_lock__channel:{{user}:a}"), Some("{user"));
        assert_eq!(slot_key("redisson_sc:{}"), None);
        assert_eq!(slot_key("plain"), None);
    }
}
