//! The semaphore, the latch and the multi-lock on a Redis Cluster (3 masters + 3 replicas
//! started by the harness): waiters woken by sharded pub/sub, a multi-lock whose names are on
//! different shards taken member by member (one script may not cross slots), and one whose
//! names share a hash tag taken by one script.

mod common;

use common::within;
use redlatch::Client;
use redlatch_fleet::RedisCluster;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

/// Two names on different masters.
fn names_on_two_masters(cluster: &RedisCluster) -> [String; 2] {
    let first = "acct:0".to_owned();
    let master = cluster
        .master_of(cluster.slot_of(&first).unwrap())
        .unwrap()
        .port();
    let other = (1..200)
        .map(|i| format!("acct:{i}"))
        .find(|n| cluster.master_of(cluster.slot_of(n).unwrap()).unwrap().port() != master)
        .unwrap();
    [first, other]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn family_kinds_work_on_a_cluster() {
    let cluster = RedisCluster::start().unwrap();
    let connect = || within(BOUND, Client::cluster_builder(&cluster.urls()).connect());
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());

    // Semaphore: a release on one client wakes a waiter on the other.
    let sem = a.semaphore("sem:c");
    sem.try_set_permits(1).await.unwrap();
    sem.acquire(1).await.unwrap();
    let waiter = b.semaphore("sem:c");
    let waiting = tokio::spawn(async move { waiter.acquire(1).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished());
    sem.release(1).await.unwrap();
    within(BOUND, waiting).await.unwrap().unwrap();

    // Latch.
    let latch = a.count_down_latch("latch:c");
    latch.try_set_count(1).await.unwrap();
    let l = b.count_down_latch("latch:c");
    let waiting = tokio::spawn(async move { l.wait(None).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    latch.count_down().await.unwrap();
    assert!(within(BOUND, waiting).await.unwrap().unwrap());

    // Multi-lock across shards: member by member, and exclusive.
    let [x, y] = names_on_two_masters(&cluster);
    let multi = a.multi_lock_names([y.clone(), x.clone()]).unwrap();
    let guard = multi.acquire().await.unwrap();
    assert!(b.lock(x.clone()).try_acquire().await.unwrap().is_none());
    assert!(b.lock(y.clone()).try_acquire().await.unwrap().is_none());
    let theirs = b.multi_lock_names([x.clone(), y.clone()]).unwrap();
    assert!(theirs.try_acquire().await.unwrap().is_none());
    guard.release().await.unwrap();
    theirs
        .try_acquire()
        .await
        .unwrap()
        .expect("free after release")
        .release()
        .await
        .unwrap();

    // One hash tag: one script on its shard.
    let tagged = a.multi_lock_names(["{acct}:1", "{acct}:2"]).unwrap();
    let guard = tagged.acquire().await.unwrap();
    assert!(b.lock("{acct}:2").try_acquire().await.unwrap().is_none());
    guard.release().await.unwrap();
    assert!(b.lock("{acct}:1").try_acquire().await.unwrap().is_some());
}
