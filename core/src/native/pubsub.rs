//! The pub/sub waker: one RESP3 subscriber connection per node, shared by every waiter.
//!
//! Each channel has a tokio `Notify`. A message `0` (one lock released) wakes one local waiter,
//! as Redisson's `LockPubSub` does, so the waiters of one process do not stampede Redis on
//! every hand-off; any other message (`1` = wake all) wakes them all. When no waiter is
//! parked at that moment (all busy sending attempts), the wake-up is kept as a permit for
//! the next one, so a release is never missed. Channels are reference-counted: the first
//! waiter subscribes, the last one's drop unsubscribes. Subscribe and unsubscribe commands
//! are serialized so an unsubscribe can never overtake a later subscribe.
//!
//! The connection is a `ConnectionManager` with automatic resubscription, so `CLIENT KILL`
//! or a restart only interrupts it: on a disconnection every channel is bumped and waiters
//! poll once, in case a message was missed.

use crate::driver::{BoxFut, Subscription};
use crate::error::Result;
use crate::native::transport::map_error;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ProtocolVersion, PushInfo, PushKind, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OnceCell};

struct Channel {
    notify: Arc<Notify>,
    refs: usize,
}

type Channels = Arc<Mutex<HashMap<String, Channel>>>;

fn lock(channels: &Channels) -> std::sync::MutexGuard<'_, HashMap<String, Channel>> {
    channels.lock().unwrap_or_else(|p| p.into_inner())
}

struct Inner {
    client: redis::Client,
    connect_timeout: Duration,
    conn: OnceCell<ConnectionManager>,
    channels: Channels,
    /// Channels subscribed on the server; the async mutex serializes (un)subscribe commands.
    subscribed: tokio::sync::Mutex<HashSet<String>>,
}

/// Shared subscriber of one node.
pub(crate) struct Subscriber {
    inner: Arc<Inner>,
}

impl Subscriber {
    pub(crate) fn new(client: redis::Client, connect_timeout: Duration) -> Self {
        let info = client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
        let client = redis::Client::open(info.set_redis_settings(settings)).unwrap_or(client);
        Subscriber {
            inner: Arc::new(Inner {
                client,
                connect_timeout,
                conn: OnceCell::new(),
                channels: Arc::default(),
                subscribed: tokio::sync::Mutex::default(),
            }),
        }
    }

    /// Subscribes to `channel` (confirmed by the server before this returns).
    pub(crate) async fn subscribe(&self, channel: &str) -> Result<ChannelWaker> {
        let notify = {
            let mut map = lock(&self.inner.channels);
            let entry = map.entry(channel.to_owned()).or_insert_with(|| Channel {
                notify: Arc::default(),
                refs: 0,
            });
            entry.refs += 1;
            entry.notify.clone()
        };
        // From here on the waker's Drop undoes the reference, even if subscribing fails.
        let waker = ChannelWaker {
            inner: self.inner.clone(),
            channel: channel.to_owned(),
            notify,
            runtime: tokio::runtime::Handle::current(),
        };
        let mut subscribed = self.inner.subscribed.lock().await;
        if !subscribed.contains(channel) {
            let mut conn = self.inner.connection().await?;
            // Recorded before SUBSCRIBE is sent: if this future is dropped mid-way (a
            // cancelled acquire), the waker's drop still sends the UNSUBSCRIBE, after it.
            subscribed.insert(channel.to_owned());
            if let Err(e) = conn.subscribe(channel).await {
                subscribed.remove(channel);
                return Err(map_error(e));
            }
        }
        Ok(waker)
    }
}

impl Inner {
    async fn connection(&self) -> Result<ConnectionManager> {
        let channels = self.channels.clone();
        let conn = self
            .conn
            .get_or_try_init(|| async move {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(self.connect_timeout))
                    .set_response_timeout(None)
                    .set_number_of_retries(1)
                    .set_max_delay(Duration::from_millis(500))
                    .set_push_sender(move |push: PushInfo| {
                        on_push(&channels, push);
                        Ok::<(), std::convert::Infallible>(())
                    })
                    .set_automatic_resubscription();
                ConnectionManager::new_with_config(self.client.clone(), config)
                    .await
                    .map_err(map_error)
            })
            .await?;
        Ok(conn.clone())
    }
}

fn on_push(channels: &Channels, push: PushInfo) {
    let map = lock(channels);
    match push.kind {
        PushKind::Message => {
            let text = |v: Option<&Value>| match v {
                Some(Value::BulkString(b)) => std::str::from_utf8(b).ok().map(str::to_owned),
                _ => None,
            };
            let Some(ch) = text(push.data.first()).and_then(|n| map.get(&n)) else {
                return;
            };
            if text(push.data.get(1)).as_deref() == Some("0") {
                ch.notify.notify_one();
            } else {
                wake_all(&ch.notify);
            }
        }
        // Messages may have been missed while the connection was down: everyone re-polls.
        PushKind::Disconnection => map.values().for_each(|ch| wake_all(&ch.notify)),
        _ => {}
    }
}

fn wake_all(notify: &Notify) {
    notify.notify_waiters();
    notify.notify_one();
}

/// One waiter's subscription to one channel.
pub(crate) struct ChannelWaker {
    inner: Arc<Inner>,
    channel: String,
    notify: Arc<Notify>,
    runtime: tokio::runtime::Handle,
}

impl Subscription for ChannelWaker {
    fn mark_seen(&mut self) {
        // Permits are consumed by `changed`; a stale one only causes one extra attempt.
    }

    fn changed(&mut self) -> BoxFut<'_, ()> {
        Box::pin(self.notify.notified())
    }
}

impl Drop for ChannelWaker {
    fn drop(&mut self) {
        let last = {
            let mut map = lock(&self.inner.channels);
            match map.get_mut(&self.channel) {
                Some(ch) if ch.refs > 1 => {
                    ch.refs -= 1;
                    false
                }
                Some(_) => {
                    map.remove(&self.channel);
                    true
                }
                None => false,
            }
        };
        if last {
            let inner = self.inner.clone();
            let channel = std::mem::take(&mut self.channel);
            self.runtime.spawn(async move {
                let mut subscribed = inner.subscribed.lock().await;
                // Someone may have subscribed again while this task waited for its turn.
                let wanted = lock(&inner.channels).contains_key(&channel);
                if !wanted && subscribed.remove(&channel) {
                    if let Some(conn) = inner.conn.get() {
                        let _ = conn.clone().unsubscribe(&channel).await;
                    }
                }
            });
        }
    }
}
