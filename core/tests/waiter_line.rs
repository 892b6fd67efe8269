//! One client's waiters for an exclusive lock form a line (core/src/driver/line.rs): a release
//! message wakes the head only, so they get the lock in the order they started waiting and
//! each release costs one attempt, not one per waiter.

mod common;
use common::*;
use redis::aio::MultiplexedConnection;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Waits until the server has run `at_least` scripts. A waiter sleeps after two attempts: the
/// plain `SET NX PX` of its first, and one by script once subscribed (`lease_acquire.lua`,
/// as every attempt after the first is).
async fn until_scripts(conn: &mut MultiplexedConnection, at_least: u64) {
    within(Duration::from_secs(10), async {
        while script_calls(conn).await < at_least {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

/// A client whose waiters poll only every 30-60 s: in these tests only release messages and
/// the line wake them (a poll lets any waiter try, out of order, on a slow machine).
async fn rare_polls(s: &redlatch_fleet::RedisServer) -> redlatch::Client {
    redlatch::Client::builder(&s.url())
        .poll_interval(Duration::from_secs(60))
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn one_clients_waiters_get_the_lock_in_order_and_each_release_wakes_one() {
    const WAITERS: usize = 8;
    let s = server();
    let client = rare_polls(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.lock("line:order").lease(Duration::from_secs(60));
    let holder = lock.acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..WAITERS {
        let before = script_calls(&mut conn).await;
        let (lock, order) = (lock.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            guard.release().await.unwrap();
        }));
        until_scripts(&mut conn, before + 1).await;
    }
    let before = script_calls(&mut conn).await;
    holder.release().await.unwrap();
    for t in tasks {
        within(Duration::from_secs(10), t).await.unwrap();
    }
    // Every script call from here is an attempt or one of the 9 releases.
    let attempts = script_calls(&mut conn).await - before - (WAITERS as u64 + 1);
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
    // One attempt per hand-off, plus at most one by the next waiter when it sees the release
    // message its predecessor acted on only after becoming the head (line.rs): 16 at most.
    // Every waiter trying on every release would be 8 + 7 + ... + 1 = 36.
    assert!(
        (WAITERS as u64..=2 * WAITERS as u64).contains(&attempts),
        "{attempts} attempts for {WAITERS} hand-offs"
    );
}

#[tokio::test]
async fn a_waiter_that_loses_a_race_keeps_its_place() {
    let s = server();
    let client = rare_polls(&s).await;
    let mut conn = raw(&s).await;
    let name = "line:race";
    let channel = "redisson_lock__channel:{line:race}";
    let lock = client.lock(name).lease(Duration::from_secs(60));
    let holder = lock.acquire().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..3 {
        let before = script_calls(&mut conn).await;
        let (lock, order) = (lock.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            guard.release().await.unwrap();
        }));
        until_scripts(&mut conn, before + 1).await;
    }
    // Another process takes the lock between a release and the first waiter's attempt: the
    // holder's key is replaced by a foreign token, then the release message goes out.
    let before = script_calls(&mut conn).await;
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    let _: () = cmd(
        &mut conn,
        &["SET", name, "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0", "PX", "60000"],
    )
    .await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", channel, "0"]).await;
    // The woken waiter's attempt found it busy.
    until_scripts(&mut conn, before + 1).await;
    // The other process releases (without the holder, whose key is gone).
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", channel, "0"]).await;
    for t in tasks {
        within(Duration::from_secs(10), t).await.unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        vec![0, 1, 2],
        "the first waiter kept its place"
    );
    drop(holder);
}

#[tokio::test]
async fn a_head_that_leaves_without_the_lock_lets_the_next_waiter_try_at_once() {
    let s = server();
    // Only the line can wake the second waiter within the test's bound.
    let client = rare_polls(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.lock("line:leave").lease(Duration::from_secs(120));
    let _holder = lock.acquire().await.unwrap();
    let before = script_calls(&mut conn).await;
    let head = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await.map(|_| ()) }
    });
    until_scripts(&mut conn, before + 1).await;
    let before = script_calls(&mut conn).await;
    let next = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await }
    });
    until_scripts(&mut conn, before + 1).await;
    // The lock is freed with no release message (as a holder that does not publish would),
    // then the head gives up its wait: the next waiter must try now, not at its next poll.
    let _: i64 = cmd(&mut conn, &["DEL", "line:leave"]).await;
    head.abort();
    let guard = within(Duration::from_secs(20), next).await.unwrap().unwrap();
    assert!(guard.owned().await.unwrap());
    guard.release().await.unwrap();
}
