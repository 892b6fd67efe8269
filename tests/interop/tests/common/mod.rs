//! Helpers of the interop tests: a fleet server per test, the shared Java peer, async waits on
//! peer answers, and what `redis-cli` shows.
#![allow(dead_code)]

use redlatch_fleet::RedisServer;
use redlatch_interop::{JavaClient, JavaPeer, PeerError, Pending};
use std::time::{Duration, Instant};

/// A bound that only catches hangs and missed wake-ups: a Redisson or redlatch waiter that
/// missed the release message sleeps for the holder's whole lease (20 s in these tests).
pub const PROMPT: Duration = Duration::from_secs(5);
/// The lease of holds whose release must wake the other side (4x [`PROMPT`]).
pub const LONG_LEASE_MS: i64 = 20_000;

pub struct World {
    pub server: RedisServer,
    pub java: JavaClient,
}

pub fn world() -> World {
    let server = RedisServer::start().expect("start redis-server");
    let java = JavaPeer::shared().connect(&server.url());
    World { server, java }
}

/// Waits for a peer answer without blocking the async runtime.
pub async fn answer(pending: Pending, timeout: Duration) -> Result<String, PeerError> {
    tokio::task::spawn_blocking(move || pending.wait(timeout))
        .await
        .unwrap()
}

/// Waits for a peer answer and returns it with the time it took from `since`.
pub async fn answer_timed(
    pending: Pending,
    since: Instant,
    timeout: Duration,
) -> (Result<String, PeerError>, Duration) {
    let r = answer(pending, timeout).await;
    (r, since.elapsed())
}

/// Runs a blocking peer call off the async runtime.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// Idempotency latches: redlatch's acquire latch (private; Redisson ignores it) and the unlock
/// latch both sides write. Redisson deletes its unlock latch right after the unlock; redlatch
/// lets both expire (two network timeouts, at least 1 s; a reentrant release's latch at least
/// the hold's lease, so a retried release never decrements twice), so they are left out of
/// comparisons and checked for a bounded TTL instead ([`latches_expire`]).
pub fn is_latch(key: &str) -> bool {
    key.starts_with("redlatch_acquire_latch:") || key.starts_with("redisson_unlock_latch:")
}

/// `redis-cli KEYS *`, sorted, without idempotency latches ([`is_latch`]).
pub fn cli_keys(server: &RedisServer) -> Vec<String> {
    let out = server.cli(&["KEYS", "*"]).expect("redis-cli");
    let mut keys: Vec<String> = out
        .lines()
        .map(str::to_owned)
        .filter(|k| !k.is_empty() && !is_latch(k))
        .collect();
    keys.sort();
    keys
}

/// Every idempotency latch on the server has a TTL of at most `max_ms` (none lingers).
pub fn latches_expire(server: &RedisServer, max_ms: i64) {
    let out = server.cli(&["KEYS", "*"]).expect("redis-cli");
    for key in out.lines().filter(|k| is_latch(k)) {
        let pttl = cli_pttl(server, key);
        assert!((0..=max_ms).contains(&pttl), "{key} has PTTL {pttl}");
    }
}

/// `redis-cli TYPE key`.
pub fn cli_type(server: &RedisServer, key: &str) -> String {
    server.cli(&["TYPE", key]).expect("redis-cli")
}

/// `redis-cli HGETALL key` as (field, value) pairs, sorted.
pub fn cli_hash(server: &RedisServer, key: &str) -> Vec<(String, String)> {
    let out = server.cli(&["HGETALL", key]).expect("redis-cli");
    let lines: Vec<&str> = out.lines().collect();
    let mut pairs: Vec<(String, String)> = lines
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (c[0].to_owned(), c[1].to_owned()))
        .collect();
    pairs.sort();
    pairs
}

/// `redis-cli PTTL key`.
pub fn cli_pttl(server: &RedisServer, key: &str) -> i64 {
    server
        .cli(&["PTTL", key])
        .expect("redis-cli")
        .parse()
        .expect("PTTL is an integer")
}
