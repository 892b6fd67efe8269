//! Shared helpers for the integration tests: real redis-server processes from the fleet
//! harness, raw redis-rs connections for inspecting and tampering with keys, and the
//! critical-section workload with its interval log.
#![allow(dead_code)]

pub mod logs;
pub mod relay;

use redlatch::{Client, Lock};
use redlatch_fleet::{check_no_overlap, Interval, RedisServer};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub fn server() -> RedisServer {
    RedisServer::start().expect("start redis-server")
}

pub fn servers(n: usize) -> Vec<RedisServer> {
    (0..n).map(|_| server()).collect()
}

pub async fn client(server: &RedisServer) -> Client {
    Client::connect(&server.url()).await.expect("connect")
}

/// A client of `url` whose calls give up after 300 ms without a reply (the fault tests'
/// network timeout: a pause of a second or two outlasts several).
pub async fn client_with_300ms_timeout(url: &str) -> Client {
    Client::builder(url)
        .network_timeout(std::time::Duration::from_millis(300))
        .connect()
        .await
        .expect("connect")
}

pub async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.admin_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

pub async fn cmd<T: redis::FromRedisValue>(conn: &mut redis::aio::MultiplexedConnection, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(conn).await.unwrap()
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// `EXISTS key` once it reads 0, or after 2 s (100 looks, 20 ms apart): for a key that a
/// background undo or release deletes soon.
pub async fn exists_after_cleanup(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
    let mut left = 1;
    for _ in 0..100 {
        left = cmd::<i64>(conn, &["EXISTS", key]).await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    left
}

/// Script calls the server has run so far (`EVALSHA` and `EVAL`, from `INFO commandstats`).
pub async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = cmd(conn, &["INFO", "commandstats"]).await;
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

pub fn now_ns() -> u64 {
    origin().elapsed().as_nanos() as u64
}

/// The keys in Redis other than idempotency latches (each release leaves one for a short
/// while, so that a retry after a lost reply can tell what its first attempt did).
pub async fn keys_but_latches(conn: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let keys: Vec<String> = cmd(conn, &["KEYS", "*"]).await;
    keys.into_iter()
        .filter(|k| !k.starts_with("redisson_unlock_latch:") && !k.starts_with("redlatch_acquire_latch:"))
        .collect()
}

/// `tasks` tasks each run `sections` critical sections under `lock`: a non-atomic
/// GET / yield / SET on `counter` in Redis. Returns the final counter; panics on an
/// overlapping interval.
pub async fn hammer(
    lock: impl Fn(usize) -> Lock,
    counter_server: &RedisServer,
    tasks: usize,
    sections: usize,
) -> i64 {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for t in 0..tasks {
        let lock = lock(t);
        let log = log.clone();
        let mut conn = raw(counter_server).await;
        handles.push(tokio::spawn(async move {
            for _ in 0..sections {
                let guard = lock.acquire().await.expect("acquire");
                let acquired = now_ns();
                let v: i64 = cmd::<Option<i64>>(&mut conn, &["GET", "counter"])
                    .await
                    .unwrap_or(0);
                tokio::task::yield_now().await;
                let _: () = cmd(&mut conn, &["SET", "counter", &(v + 1).to_string()]).await;
                let released = now_ns();
                guard.release().await.expect("release");
                log.lock().unwrap().push(Interval {
                    acquired_ns: acquired,
                    released_ns: released,
                    token: format!("task{t}"),
                });
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let intervals = log.lock().unwrap().clone();
    assert_eq!(intervals.len(), tasks * sections);
    check_no_overlap(&intervals).expect("mutual exclusion");
    let mut conn = raw(counter_server).await;
    cmd::<i64>(&mut conn, &["GET", "counter"]).await
}

/// `key`'s string value once it is `want`, polled every 20 ms for at most `tries` polls;
/// the last value read otherwise (for the caller's assertion to show).
#[allow(dead_code)]
pub async fn value_once(
    conn: &mut redis::aio::MultiplexedConnection,
    key: &str,
    want: &str,
    tries: u32,
) -> String {
    let mut value = String::new();
    for _ in 0..tries {
        value = cmd::<String>(conn, &["GET", key]).await;
        if value == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    value
}

/// Runs `f` and fails the test if it takes longer than `limit` (a hang guard, not a timing claim).
pub async fn within<T>(limit: Duration, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, f)
        .await
        .expect("call hung past its bound")
}

/// The end of a failover test: `waiter` (an acquire started before the failover) is still
/// waiting; `held` is released once the client reaches the new master (a `NotOwned` answer
/// also frees the lock: it was not replicated before the failover); then the waiter must get
/// the lock, which it releases.
pub async fn release_to_the_waiter(
    held: &redlatch::Guard,
    waiter: tokio::task::JoinHandle<redlatch::Result<redlatch::Guard>>,
    bound: Duration,
) {
    assert!(
        !waiter.is_finished(),
        "the waiter still waits: {:?}",
        waiter.await
    );
    within(bound, async {
        while let Err(e) = held.release().await {
            if e.kind().is_not_owned() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let g = within(bound, waiter)
        .await
        .unwrap()
        .expect("the waiter acquires after the failover and the release");
    g.release().await.unwrap();
}
