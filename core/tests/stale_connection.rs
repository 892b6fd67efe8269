//! A connection Redis closed while idle (`timeout`), or that `CLIENT KILL` cut, is noticed by
//! the client library only on the next request, which fails with "broken pipe". Every
//! single-try call retries that once, so none of them fails (issue #10, item 1).

mod common;
use common::*;
use redlatch::Client;
use std::time::Duration;

/// Every single-try call of the API, run once each after `break_connections` cut the
/// client's connection; each must succeed.
async fn every_single_try_call_survives(client: &Client, break_connections: impl AsyncFn()) {
    let lease = client.lock("stale:lease").lease(Duration::from_secs(60));
    let rlock = client.rlock("stale:rlock").lease(Duration::from_secs(60));

    break_connections().await;
    let g = lease.try_acquire().await.expect("try_acquire").expect("free");
    break_connections().await;
    assert!(lease.locked().await.expect("locked"));
    break_connections().await;
    assert!(lease.ttl().await.expect("ttl").is_some());
    break_connections().await;
    assert!(g.owned().await.expect("owned"));
    break_connections().await;
    g.extend(Duration::from_secs(60)).await.expect("extend");
    break_connections().await;
    g.release().await.expect("release");

    break_connections().await;
    let r = rlock
        .try_acquire()
        .await
        .expect("rlock try_acquire")
        .expect("free");
    break_connections().await;
    assert_eq!(rlock.hold_count().await.expect("hold_count"), 1);
    break_connections().await;
    let again = rlock.try_acquire().await.expect("re-entry").expect("re-entered");
    break_connections().await;
    again.release().await.expect("inner release");
    break_connections().await;
    assert_eq!(
        rlock.hold_count().await.expect("hold_count"),
        1,
        "decremented once"
    );
    break_connections().await;
    r.release().await.expect("outer release");
    break_connections().await;
    assert!(!rlock.locked().await.expect("locked"));

    let _held = lease.try_acquire().await.expect("try_acquire").expect("free");
    break_connections().await;
    assert!(client.force_unlock("stale:lease").await.expect("force_unlock"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_after_redis_closed_the_idle_connection_succeed() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["CONFIG", "SET", "timeout", "1"]).await;
    // Redis checks idle clients about every 100 ms (hz 10): 1 s idle + margin.
    let idle = || async { tokio::time::sleep(Duration::from_millis(2_300)).await };
    every_single_try_call_survives(&client, idle).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_after_client_kill_succeed() {
    let s = server();
    let client = client(&s).await;
    let killer = raw(&s).await;
    let kill = || {
        let mut conn = killer.clone();
        async move {
            let killed: i64 = cmd(&mut conn, &["CLIENT", "KILL", "TYPE", "normal"]).await;
            assert!(killed >= 1, "the client's connection was killed");
            // Let the client's reader see the close before the next call.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    every_single_try_call_survives(&client, kill).await;
}
