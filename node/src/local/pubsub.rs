//! Pub/sub wake-ups for the local engine: one subscriber connection per node, on the
//! JavaScript thread, shared by every waiter of the client. The same rules as the native
//! subscriber (core/src/native/pubsub.rs), so waiters behave alike in both engines:
//!
//! - a lock's message `0` (one lock released) wakes one local waiter, as Redisson's
//!   `LockPubSub` does; a latch's open message and any other message (`1` = wake all) wake
//!   them all (`redlatch::protocol::family::keys::wakes_every_waiter`); a wake-up with nobody
//!   parked is kept as a permit for the next one, so a release is never missed;
//! - channels are reference-counted: the first waiter subscribes, the last one's drop
//!   unsubscribes; (un)subscribe commands are serialized, so an unsubscribe never overtakes
//!   a later subscribe;
//! - when the connection ends (`CLIENT KILL`, a restart) every waiter is woken to poll once,
//!   in case a message was missed, and the channels still wanted are subscribed again on a
//!   new connection (retried while they are wanted).
//!
//! Why not the native subscriber on tokio: a wake-up would cross from a tokio thread to the
//! JavaScript thread (two thread wake-ups per hand-off instead of one), and it needs redis-rs
//! TLS for `rediss://`; here Node's socket does both.

use super::conn::{Conn, MessageHandler};
use super::node::Node;
use futures::future::{select, Either};
use redlatch::protocol::family::keys::wakes_every_waiter;
use redlatch::{BoxFut, Result, Runtime, Subscription};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// How long to wait before subscribing again after the connection ended.
const RESUBSCRIBE_DELAY: Duration = Duration::from_millis(100);

struct Channel {
    notify: Arc<Notify>,
    refs: usize,
}

/// The subscriber connection and the channels subscribed on it.
#[derive(Default)]
struct Subscribed {
    conn: Option<Conn>,
    channels: HashSet<String>,
}

/// The subscriber of one node.
pub(crate) struct Subscriber {
    node: Arc<Node>,
    channels: Mutex<HashMap<String, Channel>>,
    /// The async mutex serializes (un)subscribe commands.
    subscribed: futures::lock::Mutex<Subscribed>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn wake_all(notify: &Notify) {
    notify.notify_waiters();
    notify.notify_one();
}

impl Subscriber {
    pub(crate) fn new(node: Arc<Node>) -> Arc<Subscriber> {
        Arc::new(Subscriber {
            node,
            channels: Mutex::default(),
            subscribed: futures::lock::Mutex::default(),
        })
    }

    /// Subscribes to `channel` (confirmed by the server before this returns).
    pub(crate) async fn subscribe(self: &Arc<Self>, channel: &str) -> Result<Box<dyn Subscription>> {
        let notify = {
            let mut map = lock(&self.channels);
            let entry = map.entry(channel.to_owned()).or_insert_with(|| Channel {
                notify: Arc::default(),
                refs: 0,
            });
            entry.refs += 1;
            entry.notify.clone()
        };
        // From here on the waker's Drop undoes the reference, even if subscribing fails.
        let waker = ChannelWaker {
            subscriber: self.clone(),
            channel: channel.to_owned(),
            notify,
        };
        let mut subscribed = self.subscribed.lock().await;
        self.ensure(&mut subscribed, channel).await?;
        Ok(Box::new(waker))
    }

    /// Subscribes `channel` on the live connection (opening one first if needed).
    async fn ensure(self: &Arc<Self>, subscribed: &mut Subscribed, channel: &str) -> Result<()> {
        if !subscribed.conn.as_ref().is_some_and(Conn::alive) {
            subscribed.conn = None;
            subscribed.channels.clear();
            let conn = self.node.open().await?;
            conn.subscriber(self.on_message(), self.on_end());
            subscribed.conn = Some(conn);
        }
        if subscribed.channels.contains(channel) {
            return Ok(());
        }
        let Some(conn) = subscribed.conn.as_mut() else {
            return Ok(());
        };
        // Recorded before SUBSCRIBE is sent: if this future is dropped mid-way (a cancelled
        // acquire), the waker's drop still sends the UNSUBSCRIBE, after it.
        subscribed.channels.insert(channel.to_owned());
        let sent = self.command(conn, "SUBSCRIBE", channel).await;
        if sent.is_err() {
            subscribed.channels.remove(channel);
        }
        sent
    }

    /// Sends `command channel` and waits for its confirmation, at most the network timeout;
    /// a connection that does not answer in time is closed (its end resubscribes).
    async fn command(&self, conn: &mut Conn, command: &str, channel: &str) -> Result<()> {
        let mut cmd = redis::cmd(command);
        cmd.arg(channel);
        let sent = Box::pin(cmd.query_async::<()>(conn));
        let outcome = match select(sent, self.node.runtime.sleep(self.node.connect_timeout)).await {
            Either::Left((result, _)) => result.map_err(redlatch::RedisTransport::error_from),
            Either::Right(_) => Err(redlatch::Error::connection(format!(
                "{}: no answer to {command} within {} ms",
                self.node.label,
                self.node.connect_timeout.as_millis()
            ))),
        };
        if outcome.is_err() {
            conn.close();
        }
        outcome
    }

    fn on_message(self: &Arc<Self>) -> MessageHandler {
        let me = Arc::downgrade(self);
        Arc::new(move |channel: &[u8], payload: &[u8]| {
            let Some(me) = me.upgrade() else { return };
            let Ok(channel) = std::str::from_utf8(channel) else {
                return;
            };
            let channels = lock(&me.channels);
            if let Some(ch) = channels.get(channel) {
                if wakes_every_waiter(channel, payload) {
                    wake_all(&ch.notify);
                } else {
                    ch.notify.notify_one();
                }
            }
        })
    }

    /// The connection ended: everyone re-polls, and the wanted channels are subscribed again.
    fn on_end(self: &Arc<Self>) -> Box<dyn FnOnce() + Send> {
        let me = Arc::downgrade(self);
        Box::new(move || {
            let Some(me) = me.upgrade() else { return };
            lock(&me.channels).values().for_each(|ch| wake_all(&ch.notify));
            me.node.runtime.spawn(Box::pin(resubscribe(Arc::downgrade(&me))));
        })
    }
}

/// Subscribes the channels still wanted on a new connection, retrying while any are.
async fn resubscribe(subscriber: Weak<Subscriber>) {
    loop {
        let Some(runtime) = subscriber.upgrade().map(|s| s.node.runtime.clone()) else {
            return;
        };
        runtime.sleep(RESUBSCRIBE_DELAY).await;
        let Some(me) = subscriber.upgrade() else { return };
        let mut subscribed = me.subscribed.lock().await;
        if subscribed.conn.as_ref().is_some_and(Conn::alive) {
            // A subscribe since the end opened a new connection; its own end resubscribes.
            return;
        }
        let wanted: Vec<String> = lock(&me.channels).keys().cloned().collect();
        if wanted.is_empty() {
            return;
        }
        let mut ok = true;
        for channel in &wanted {
            if me.ensure(&mut subscribed, channel).await.is_err() {
                ok = false;
                break;
            }
        }
        if ok {
            // Messages may have been missed while resubscribing.
            lock(&me.channels).values().for_each(|ch| wake_all(&ch.notify));
            return;
        }
    }
}

/// One waiter's subscription to one channel.
struct ChannelWaker {
    subscriber: Arc<Subscriber>,
    channel: String,
    notify: Arc<Notify>,
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
            let mut map = lock(&self.subscriber.channels);
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
            let subscriber = self.subscriber.clone();
            let channel = std::mem::take(&mut self.channel);
            let runtime = subscriber.node.runtime.clone();
            runtime.spawn(Box::pin(async move {
                let mut subscribed = subscriber.subscribed.lock().await;
                // Someone may have subscribed again while this task waited for its turn.
                let wanted = lock(&subscriber.channels).contains_key(&channel);
                if !wanted && subscribed.channels.remove(&channel) {
                    if let Some(mut conn) = subscribed.conn.clone() {
                        let _ = subscriber.command(&mut conn, "UNSUBSCRIBE", &channel).await;
                    }
                }
            }));
        }
    }
}
