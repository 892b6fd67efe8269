//! An acquire retried within its wait while Redis is stopped leaves one try per network
//! timeout, each queued on its own connection; when Redis runs again each may apply. The undo
//! must follow every one of them: a user trial of stop 38 (C, C++ and async Rust, Redis
//! stopped 2-4 s, a wait of 1.5 s and a network timeout of 1 s) found the lock held by nobody
//! for its whole 60 s lease, because the undo followed only the latest try.

mod common;
use common::*;
use redlatch::{Client, ErrorKind};
use std::time::{Duration, Instant};

const LEASE: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_millis(500);

async fn gone_soon(server: &redlatch_fleet::RedisServer, key: &str) -> bool {
    let mut conn = raw(server).await;
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if cmd::<i64>(&mut conn, &["EXISTS", key]).await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_acquire_retried_while_redis_is_stopped_leaves_nothing_held() {
    let s = server();
    let client = within(
        Duration::from_secs(10),
        Client::builder(&s.url()).network_timeout(TIMEOUT).connect(),
    )
    .await
    .unwrap();
    // The read and write locks' undo is their release with the acquire's latch: until stop 42
    // the first try's undo wrote a release latch that made a later try's undo replay it
    // instead of undoing that try's grant (a user trial: 2 in 3 left held). Three rounds each.
    let rounds = |name: &'static str| (0..3).map(move |i| format!("{name}:{i}"));
    let mut cases = vec![
        ("undo:lease".to_owned(), client.lock("undo:lease").lease(LEASE)),
        ("undo:rlock".to_owned(), client.rlock("undo:rlock").lease(LEASE)),
    ];
    for name in rounds("undo:read") {
        cases.push((name.clone(), client.rw_lock(name).read().lease(LEASE)));
    }
    for name in rounds("undo:write") {
        cases.push((name.clone(), client.rw_lock(name).write().lease(LEASE)));
    }
    for name in rounds("undo:fair") {
        cases.push((name.clone(), client.fair_lock(name).lease(LEASE)));
    }
    for (name, lock) in cases {
        let name = name.as_str();
        s.pause().unwrap();
        let err = within(
            Duration::from_secs(10),
            lock.wait(Duration::from_millis(800)).acquire(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        s.resume().unwrap();
        assert!(gone_soon(&s, name).await, "{name}: a try's grant was left behind");
    }
}

#[test]
fn a_blocking_acquire_retried_while_redis_is_stopped_leaves_nothing_held() {
    let s = server();
    let builder = Client::builder(&s.url()).network_timeout(TIMEOUT);
    let client = redlatch::blocking::Client::from_builder(builder).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for name in ["undo:b-lease", "undo:b-rlock"] {
        let lock = if name.ends_with("lease") {
            client.lock(name).lease(LEASE)
        } else {
            client.rlock(name).lease(LEASE)
        };
        s.pause().unwrap();
        let err = lock.wait(Duration::from_millis(800)).acquire().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
        std::thread::sleep(Duration::from_millis(300));
        s.resume().unwrap();
        assert!(
            runtime.block_on(gone_soon(&s, name)),
            "{name}: a try's grant was left behind"
        );
    }
}
