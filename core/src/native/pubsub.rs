//! The pub/sub waker: one RESP3 subscriber connection per node, shared by every waiter.
//!
//! Each channel has a tokio `Notify`. A message `0` (one lock released) wakes one local waiter,
//! as Redisson's `LockPubSub` does (a count-down latch's `0`, its opening, wakes them all), so the waiters of one process do not stampede Redis on
//! every hand-off; any other message (`1` = wake all) wakes them all. When no waiter is
//! parked at that moment (all busy sending attempts), the wake-up is kept as a permit for
//! the next one, so a release is never missed. Channels are reference-counted: the first
//! waiter subscribes, the last one's drop unsubscribes. Subscribe and unsubscribe commands
//! are serialized so an unsubscribe can never overtake a later subscribe.
//!
//! When the connection drops (`CLIENT KILL`, a restart, a Sentinel failover) every channel is
//! bumped, so waiters poll once in case a message was missed, and the channels still wanted
//! are subscribed again on a new connection (to the new master, for Sentinel). A Sentinel
//! failover of a master that is paused or cut off breaks no connection: the channels move to
//! the new master when the sentinels announce it (the source's generation). [`Channels`]
//! is shared with the Cluster subscriber, whose connection resubscribes by itself.

use super::connection::{Reconnecting, Settings, Source};
use super::redis_calls::map_error;
use crate::driver::{BoxFut, Subscription};
use crate::error::Result;
use crate::protocol::family::keys::wakes_every_waiter;
use redis::{PushInfo, PushKind, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::Notify;

struct Channel {
    notify: Arc<Notify>,
    refs: usize,
}

/// Channel name -> its waiters' `Notify` and reference count.
#[derive(Clone, Default)]
pub(crate) struct Channels(Arc<Mutex<HashMap<String, Channel>>>);

impl Channels {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Channel>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one more waiter on `channel`; its `Notify`.
    pub(crate) fn add(&self, channel: &str) -> Arc<Notify> {
        let mut map = self.map();
        let entry = map.entry(channel.to_owned()).or_insert_with(|| Channel {
            notify: Arc::default(),
            refs: 0,
        });
        entry.refs += 1;
        entry.notify.clone()
    }

    /// Counts one waiter fewer; `true` when it was the last (unsubscribe now).
    pub(crate) fn remove(&self, channel: &str) -> bool {
        let mut map = self.map();
        match map.get_mut(channel) {
            Some(ch) if ch.refs > 1 => {
                ch.refs -= 1;
                false
            }
            Some(_) => {
                map.remove(channel);
                true
            }
            None => false,
        }
    }

    pub(crate) fn wanted(&self, channel: &str) -> bool {
        self.map().contains_key(channel)
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.map().keys().cloned().collect()
    }

    /// Everyone re-polls: messages may have been missed.
    pub(crate) fn wake_all(&self) {
        self.map().values().for_each(|ch| wake_all(&ch.notify));
    }

    /// Routes a push message: a release message wakes its channel's waiters; a
    /// disconnection, or the server dropping a shard channel (its slot moved), wakes all.
    pub(crate) fn on_push(&self, push: &PushInfo) {
        let text = |v: Option<&Value>| match v {
            Some(Value::BulkString(b)) => std::str::from_utf8(b).ok().map(str::to_owned),
            _ => None,
        };
        match push.kind {
            PushKind::Message | PushKind::SMessage => {
                let map = self.map();
                let Some(name) = text(push.data.first()) else {
                    return;
                };
                let Some(ch) = map.get(&name) else {
                    return;
                };
                let payload = match push.data.get(1) {
                    Some(Value::BulkString(b)) => b.as_slice(),
                    _ => &[],
                };
                if wakes_every_waiter(&name, payload) {
                    wake_all(&ch.notify);
                } else {
                    ch.notify.notify_one();
                }
            }
            PushKind::Disconnection | PushKind::SUnsubscribe => self.wake_all(),
            _ => {}
        }
    }
}

fn wake_all(notify: &Notify) {
    notify.notify_waiters();
    notify.notify_one();
}

struct Subscribed {
    /// The connection these subscriptions were made on.
    conn_id: u64,
    names: HashSet<String>,
}

struct Inner {
    conn: Reconnecting,
    channels: Channels,
    /// Channels subscribed on the server; the async mutex serializes (un)subscribe commands.
    subscribed: tokio::sync::Mutex<Subscribed>,
    /// A Sentinel source's failovers, until the first subscription starts following them.
    switches: Mutex<Option<tokio::sync::watch::Receiver<u64>>>,
}

/// Shared subscriber of one node.
pub(crate) struct Subscriber {
    inner: Arc<Inner>,
}

impl Subscriber {
    pub(crate) fn new(source: Source, timeout: Duration) -> Self {
        let switches = match &source {
            Source::Sentinel(s) => Some(s.switches()),
            Source::Fixed(_) => None,
        };
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| {
            let weak = weak.clone();
            let settings = Settings {
                connect_timeout: timeout,
                response_timeout: Some(timeout),
                push: Some(Arc::new(move |id, push: PushInfo| {
                    if let Some(inner) = weak.upgrade() {
                        inner.on_push(id, &push);
                    }
                })),
                checks: None,
                servers: None,
            };
            Inner {
                conn: Reconnecting::new(source, settings),
                channels: Channels::default(),
                subscribed: tokio::sync::Mutex::new(Subscribed {
                    conn_id: 0,
                    names: HashSet::new(),
                }),
                switches: Mutex::new(switches),
            }
        });
        Subscriber { inner }
    }

    /// Subscribes to `channel` (confirmed by the server before this returns).
    pub(crate) async fn subscribe(&self, channel: &str) -> Result<ChannelWaker> {
        let notify = self.inner.channels.add(channel);
        // From here on the waker's Drop undoes the reference, even if subscribing fails.
        let waker = ChannelWaker {
            unsubscribe: Some(Box::new(Unsubscribe(
                self.inner.clone(),
                tokio::runtime::Handle::current(),
            ))),
            channels: self.inner.channels.clone(),
            channel: channel.to_owned(),
            notify,
        };
        self.inner.follow_switches();
        self.inner.ensure(&[channel.to_owned()]).await?;
        Ok(waker)
    }
}

impl Inner {
    fn on_push(self: &Arc<Self>, id: u64, push: &PushInfo) {
        self.channels.on_push(push);
        if push.kind == PushKind::Disconnection {
            self.conn.invalidate(id);
            let inner = self.clone();
            // Push messages are delivered on the connection's task, inside the runtime.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { inner.resubscribe().await });
            }
        }
    }

    /// Makes sure `names` are subscribed on the live connection (connecting, and
    /// subscribing every wanted channel again, when it is a new one). A connection found
    /// dropped (the server closed it while it sat idle: `CLIENT KILL`, an idle `timeout`) is
    /// replaced once, as the command connection's calls are retried once.
    async fn ensure(&self, names: &[String]) -> Result<()> {
        match self.ensure_once(names).await {
            Err((e, true)) => {
                tracing::debug!(error = %e, "subscribing again on a new connection");
                self.ensure_once(names).await.map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    /// [`ensure`](Self::ensure) on the connection there is; the error says whether that
    /// connection was dropped.
    async fn ensure_once(&self, names: &[String]) -> std::result::Result<(), (crate::error::Error, bool)> {
        let mut sub = self.subscribed.lock().await;
        let live = self.conn.get().await.map_err(|e| (e, false))?;
        let mut todo: Vec<String> = names.to_vec();
        if sub.conn_id != live.id {
            sub.conn_id = live.id;
            sub.names.clear();
            todo = self.channels.names();
        }
        let mut conn = live.conn.clone();
        for name in todo {
            if sub.names.contains(&name) || !self.channels.wanted(&name) {
                continue;
            }
            // Recorded before SUBSCRIBE is sent: if this future is dropped mid-way (a
            // cancelled acquire), the waker's drop still sends the UNSUBSCRIBE, after it.
            sub.names.insert(name.clone());
            // `unless_lost`: a SUBSCRIBE alone on a connection whose task just ended would
            // wait out its reply timeout (see connection.rs).
            if let Err(e) = live.unless_lost(conn.subscribe(&name)).await {
                sub.names.remove(&name);
                let dropped = e.is_connection_dropped();
                if e.is_io_error() || dropped || e.is_timeout() {
                    self.conn.invalidate(live.id);
                }
                return Err((map_error(&e, &[]), dropped && !e.is_timeout()));
            }
        }
        Ok(())
    }

    /// From the first subscription on (inside the runtime): after each Sentinel failover,
    /// subscribes the wanted channels on a connection to the new master (the connection of
    /// the old generation is dropped by it), then wakes every waiter to poll once, for a
    /// message missed meanwhile. Without it, waiters subscribed on a paused old master were
    /// woken by their poll only (a user trial of stop 48). Ends with the subscriber.
    fn follow_switches(self: &Arc<Self>) {
        let Some(mut switches) = self.switches.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while switches.changed().await.is_ok() {
                let Some(inner) = weak.upgrade() else { return };
                if !inner.channels.names().is_empty() {
                    tracing::debug!("subscribing again on the master Sentinel names after a failover");
                    inner.resubscribe().await;
                    inner.channels.wake_all();
                }
            }
        });
    }

    /// After a disconnection: subscribes the wanted channels on a new connection, retrying
    /// while some are wanted (waiters poll meanwhile).
    async fn resubscribe(&self) {
        let mut pause = Duration::from_millis(50);
        for _ in 0..20 {
            let wanted = self.channels.names();
            if wanted.is_empty() || self.ensure(&wanted).await.is_ok() {
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }
}

/// What a waker's last drop does on the server (differs for the Cluster subscriber).
pub(crate) trait Unsubscriber: Send + Sync {
    fn unsubscribe(&self, channel: String);
}

struct Unsubscribe(Arc<Inner>, tokio::runtime::Handle);

impl Unsubscriber for Unsubscribe {
    fn unsubscribe(&self, channel: String) {
        let inner = self.0.clone();
        self.1.spawn(async move {
            let mut sub = inner.subscribed.lock().await;
            // Someone may have subscribed again while this task waited for its turn.
            if !inner.channels.wanted(&channel) && sub.names.remove(&channel) {
                if let Some(live) = inner.conn.existing() {
                    // `unless_lost`: it holds the subscriptions' lock, and one alone on a
                    // connection whose task just ended would hold it for a reply timeout.
                    let _ = live.unless_lost(live.conn.clone().unsubscribe(&channel)).await;
                }
            }
        });
    }
}

/// One waiter's subscription to one channel.
pub(crate) struct ChannelWaker {
    pub(crate) unsubscribe: Option<Box<dyn Unsubscriber>>,
    pub(crate) channels: Channels,
    pub(crate) channel: String,
    pub(crate) notify: Arc<Notify>,
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
        if self.channels.remove(&self.channel) {
            if let Some(u) = self.unsubscribe.take() {
                u.unsubscribe(std::mem::take(&mut self.channel));
            }
        }
    }
}
