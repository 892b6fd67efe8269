//! Wake-ups on a Redis Cluster: a second cluster connection (RESP3) for subscriptions,
//! `SSUBSCRIBE` to the shard channel of the lock's slot when the cluster has sharded pub/sub,
//! else `SUBSCRIBE`. redis-rs subscribes again after a reconnect or when a slot moves; the
//! server's `SUNSUBSCRIBE` on a slot move also wakes every waiter to poll once.

use super::node::NodeSpec;
use super::pubsub::{ChannelWaker, Channels, Unsubscriber};
use super::redis_calls::map_error;
use super::tls::TlsOptions;
use super::transport::TransportOptions;
use crate::error::{Error, Result};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::OnceCell;

struct Inner {
    client: ClusterClient,
    conn: OnceCell<ClusterConnection>,
    channels: Channels,
    /// Channels subscribed (`true` = sharded); the async mutex serializes the commands.
    subscribed: tokio::sync::Mutex<HashSet<(String, bool)>>,
}

/// The shared subscriber of a cluster client.
pub(crate) struct ClusterSubscriber {
    inner: Arc<Inner>,
}

impl ClusterSubscriber {
    pub(crate) fn new(seeds: &[NodeSpec], tls: &TlsOptions, options: &TransportOptions) -> Result<Self> {
        let channels = Channels::default();
        let client = super::cluster::cluster_client(seeds, tls, options, Some(channels.clone()))?;
        Ok(ClusterSubscriber {
            inner: Arc::new(Inner {
                client,
                conn: OnceCell::new(),
                channels,
                subscribed: tokio::sync::Mutex::default(),
            }),
        })
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
        let mut subscribed = inner.subscribed.lock().await;
        let key = (channel.to_owned(), sharded);
        if !subscribed.contains(&key) {
            let mut conn = inner.connection().await?;
            subscribed.insert(key.clone());
            let done = if sharded {
                conn.ssubscribe(channel).await
            } else {
                conn.subscribe(channel).await
            };
            if let Err(e) = done {
                subscribed.remove(&key);
                return Err(map_error(&e, &[]));
            }
        }
        Ok(waker)
    }
}

impl Inner {
    async fn connection(&self) -> Result<ClusterConnection> {
        let conn = self
            .conn
            .get_or_try_init(|| async {
                self.client.get_async_connection().await.map_err(|e| {
                    Error::connection(format!("cluster subscriber: {}", map_error(&e, &[]).message()))
                })
            })
            .await?;
        Ok(conn.clone())
    }
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
            let mut subscribed = inner.subscribed.lock().await;
            let key = (channel, sharded);
            if !inner.channels.wanted(&key.0) && subscribed.remove(&key) {
                if let Some(conn) = inner.conn.get() {
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
