//! The count-down latch through the driver on a real redis-server: waiters on several clients
//! all wake at zero, timeouts, a latch that is not set, bad input refused.

mod common;
use common::*;
use redlatch::ErrorKind;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_several_clients_all_wake() {
    let s = server();
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client(&s).await);
    }
    let latch = clients[0].count_down_latch("latch:go");
    assert!(latch.try_set_count(3).await.unwrap());
    assert!(!latch.try_set_count(7).await.unwrap(), "set once");
    assert_eq!(latch.count().await.unwrap(), 3);
    let mut waiters = Vec::new();
    for i in 0..12 {
        let l = clients[i % 4].count_down_latch("latch:go");
        waiters.push(tokio::spawn(async move { l.wait(None).await.unwrap() }));
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(waiters.iter().all(|w| !w.is_finished()), "closed until zero");
    clients[1]
        .count_down_latch("latch:go")
        .count_down()
        .await
        .unwrap();
    clients[2]
        .count_down_latch("latch:go")
        .count_down()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(waiters.iter().all(|w| !w.is_finished()), "one count left");
    assert_eq!(latch.count().await.unwrap(), 1);
    clients[3]
        .count_down_latch("latch:go")
        .count_down()
        .await
        .unwrap();
    for w in waiters {
        assert!(tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .unwrap()
            .unwrap());
    }
    assert_eq!(latch.count().await.unwrap(), 0);
    let mut conn = raw(&s).await;
    let exists: i64 = cmd(&mut conn, &["EXISTS", "latch:go"]).await;
    assert_eq!(exists, 0, "an opened latch is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiter_of_one_client_wakes_at_zero_by_the_message() {
    // A user trial of stop 44: the latch's open message ('0') woke one waiter per client, as
    // a lock's unlock message does; the others waited for their poll. With a poll longer
    // than the bound below, only the message can wake them in time.
    let s = server();
    let poll = Duration::from_secs(30);
    let c = redlatch::Client::builder(&s.url())
        .poll_interval(poll)
        .connect()
        .await
        .unwrap();
    let latch = c.count_down_latch("latch:all");
    assert!(latch.try_set_count(1).await.unwrap());
    let mut waiters = Vec::new();
    for _ in 0..5 {
        let l = c.count_down_latch("latch:all");
        waiters.push(tokio::spawn(async move { l.wait(None).await.unwrap() }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    client(&s)
        .await
        .count_down_latch("latch:all")
        .count_down()
        .await
        .unwrap();
    for w in waiters {
        let woken = tokio::time::timeout(Duration::from_secs(5), w).await;
        assert!(woken.expect("woken by the open message").unwrap());
    }
}

#[tokio::test]
async fn wait_times_out_and_an_unset_latch_is_open() {
    let s = server();
    let c = client(&s).await;
    let latch = c.count_down_latch("latch:t");
    assert!(latch.wait(Some(Duration::ZERO)).await.unwrap(), "not set: open");
    latch.count_down().await.unwrap();
    let mut conn = raw(&s).await;
    let keys = keys_but_latches(&mut conn).await;
    assert!(
        keys.is_empty(),
        "count_down of an unset latch creates nothing: {keys:?}"
    );
    latch.try_set_count(1).await.unwrap();
    let started = Instant::now();
    assert!(!latch.wait(Some(Duration::from_millis(200))).await.unwrap());
    assert!(started.elapsed() >= Duration::from_millis(200));
    latch.count_down().await.unwrap();
    assert!(latch.wait(Some(Duration::from_secs(1))).await.unwrap());
}

#[tokio::test]
async fn bad_input_is_refused_with_redis_untouched() {
    let s = server();
    let c = client(&s).await;
    for err in [
        c.count_down_latch("l").try_set_count(0).await.unwrap_err(),
        c.count_down_latch("l")
            .try_set_count(i32::MAX as u64 + 1)
            .await
            .unwrap_err(),
        c.count_down_latch("").count_down().await.unwrap_err(),
        c.count_down_latch("").wait(None).await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    let mut conn = raw(&s).await;
    let keys: Vec<String> = cmd(&mut conn, &["KEYS", "*"]).await;
    assert!(keys.is_empty(), "{keys:?}");
    // A key of another type: the error it is, nothing changed.
    let _: i64 = cmd(&mut conn, &["HSET", "latch:h", "f", "1"]).await;
    let err = c.count_down_latch("latch:h").count_down().await.unwrap_err();
    assert!(err.message().contains("WRONGTYPE"), "{err}");
    let kind: String = cmd(&mut conn, &["TYPE", "latch:h"]).await;
    assert_eq!(kind, "hash");
}

#[tokio::test]
async fn close_stops_a_wait() {
    let s = server();
    let c = client(&s).await;
    let latch = c.count_down_latch("latch:close");
    latch.try_set_count(1).await.unwrap();
    let l = latch.clone();
    let waiting = tokio::spawn(async move { l.wait(None).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    c.close().await;
    let err = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
}
