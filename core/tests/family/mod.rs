//! Shared helpers of the family script tests (and of the Java interop tests, which include this
//! file by path): run a protocol [`Request`] on a real redis-server through a plain client (our
//! native transport, not the driver), read keys the way `redis-cli` shows them, and record
//! every pub/sub message published on the server.
#![allow(dead_code)]

use futures::StreamExt;
use redlatch::protocol::reply::Reply;
use redlatch::protocol::request::Request;
use redlatch::{RedisTransport, Transport};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The caller's wall clock in ms since the Unix epoch, as Redisson passes it to its scripts.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// A plain connection to one server.
pub struct Node {
    transport: RedisTransport,
    conn: redis::aio::MultiplexedConnection,
}

impl Node {
    pub async fn connect(url: &str) -> Node {
        let transport = RedisTransport::new(url, Duration::from_secs(5)).unwrap();
        let conn = redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        Node { transport, conn }
    }

    /// Runs `request` (EVALSHA, EVAL on NOSCRIPT); error replies come back as `Err`.
    pub async fn eval(&self, request: &Request) -> redlatch::Result<Reply> {
        self.transport.eval(request).await
    }

    /// Runs `request`, panicking on an error reply.
    pub async fn run(&self, request: &Request) -> Reply {
        self.eval(request)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", request.script.name()))
    }

    pub async fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut c = redis::cmd(args[0]);
        for a in &args[1..] {
            c.arg(*a);
        }
        c.query_async(&mut self.conn.clone()).await.unwrap()
    }

    pub async fn bytes_cmd<T: redis::FromRedisValue>(&self, args: &[&[u8]]) -> T {
        let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
        for a in &args[1..] {
            c.arg(*a);
        }
        c.query_async(&mut self.conn.clone()).await.unwrap()
    }

    /// Every key, sorted.
    pub async fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.cmd(&["KEYS", "*"]).await;
        keys.sort();
        keys
    }

    pub async fn pttl(&self, key: &str) -> i64 {
        self.cmd(&["PTTL", key]).await
    }

    pub async fn hash(&self, key: &str) -> std::collections::BTreeMap<String, String> {
        self.cmd(&["HGETALL", key]).await
    }

    /// ZSET members with scores, in score order.
    pub async fn zset(&self, key: &str) -> Vec<(Vec<u8>, f64)> {
        self.bytes_cmd(&[b"ZRANGE", key.as_bytes(), b"0", b"-1", b"WITHSCORES"])
            .await
    }

    pub async fn list(&self, key: &str) -> Vec<String> {
        self.cmd(&["LRANGE", key, "0", "-1"]).await
    }
}

/// Every message published on a server (PSUBSCRIBE `*`), in order.
pub struct Recorder {
    messages: Arc<Mutex<Vec<(String, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Recorder {
    pub async fn start(url: &str) -> Recorder {
        let mut pubsub = redis::Client::open(url)
            .unwrap()
            .get_async_pubsub()
            .await
            .unwrap();
        pubsub.psubscribe("*").await.unwrap();
        let messages = Arc::new(Mutex::new(Vec::new()));
        let sink = messages.clone();
        let task = tokio::spawn(async move {
            let mut stream = pubsub.into_on_message();
            while let Some(msg) = stream.next().await {
                let payload = String::from_utf8_lossy(msg.get_payload_bytes()).into_owned();
                sink.lock()
                    .unwrap()
                    .push((msg.get_channel_name().to_owned(), payload));
            }
        });
        Recorder { messages, task }
    }

    /// The messages so far (and forgets them). Waits a moment first: a message published by a
    /// script that already replied may still be on its way to this subscriber.
    pub async fn take(&self) -> Vec<(String, String)> {
        tokio::time::sleep(Duration::from_millis(50)).await;
        std::mem::take(&mut *self.messages.lock().unwrap())
    }

    /// Waits (at most `timeout`) for a message on `channel`; returns its payload.
    pub async fn wait_for(&self, channel: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let mut all = self.messages.lock().unwrap();
                if let Some(i) = all.iter().position(|(c, _)| c == channel) {
                    return Some(all.remove(i).1);
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A client subscribed with SSUBSCRIBE (sharded pub/sub, which Redis 7 serves on a single node
/// too): it receives what SPUBLISH sends and never what PUBLISH sends, so it shows which of the
/// two a script used. Reads block the calling thread (briefly: bounded by their timeout).
pub struct ShardedSubscriber {
    conn: redis::Connection,
}

impl ShardedSubscriber {
    pub fn start(url: &str, channels: &[String]) -> ShardedSubscriber {
        let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for channel in channels {
            let cmd = redis::cmd("SSUBSCRIBE").arg(channel).get_packed_command();
            conn.send_packed_command(&cmd).unwrap();
            let confirmation = strings(conn.recv_response().unwrap());
            assert_eq!(confirmation[..2], ["ssubscribe".to_owned(), channel.clone()]);
        }
        ShardedSubscriber { conn }
    }

    /// The next sharded message as (channel, payload), or `None` when none came in `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<(String, String)> {
        self.conn.set_read_timeout(Some(timeout)).unwrap();
        match self.conn.recv_response() {
            Ok(value) => match strings(value).as_slice() {
                [kind, channel, payload] if kind == "smessage" => Some((channel.clone(), payload.clone())),
                other => panic!("not a sharded message: {other:?}"),
            },
            Err(e) if e.is_timeout() => None,
            Err(e) => panic!("sharded subscriber: {e}"),
        }
    }
}

/// The items of a pub/sub reply (an array in RESP2, a push in RESP3) as text.
fn strings(value: redis::Value) -> Vec<String> {
    let items = match value {
        redis::Value::Array(items) => items,
        redis::Value::Push { kind, data } => {
            let mut items = vec![redis::Value::SimpleString(kind.to_string())];
            items.extend(data);
            items
        }
        other => panic!("not a pub/sub reply: {other:?}"),
    };
    items
        .into_iter()
        .map(|item| match item {
            redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            redis::Value::SimpleString(s) => s,
            redis::Value::Int(i) => i.to_string(),
            other => panic!("unexpected pub/sub item {other:?}"),
        })
        .collect()
}

/// Decodes a hex permit id into the 16 bytes Redisson stores.
pub fn unhex(id: &str) -> Vec<u8> {
    (0..id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&id[i..i + 2], 16).unwrap())
        .collect()
}

pub fn ints(reply: &Reply) -> Vec<i64> {
    match reply {
        Reply::Array(items) => items.iter().map(|r| r.as_int().unwrap()).collect(),
        other => vec![other.as_int().unwrap()],
    }
}
