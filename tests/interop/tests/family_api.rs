//! The semaphores, the count-down latch and the multi-lock against Redisson 4.7.0 at the API
//! level: redlatch's `Client` (the driver, its waits and wake-ups) next to a Java client.

mod common;

use common::{answer, answer_timed, cli_keys, world, PROMPT};
use redlatch::{Client, ErrorKind, Reason};
use std::time::{Duration, Instant};

async fn client(url: &str) -> Client {
    Client::connect(url).await.expect("connect")
}

#[tokio::test(flavor = "multi_thread")]
async fn semaphore_permits_flow_both_ways_and_releases_wake_the_other_side() {
    let w = world();
    let java = &w.java;
    let c = client(&w.server.url()).await;
    let sem = c.semaphore("s");
    assert_eq!(java.call("sem-set", "s 2").unwrap(), "true");
    assert!(!sem.try_set_permits(5).await.unwrap(), "Java set it");
    assert_eq!(sem.available().await.unwrap(), 2);
    assert!(
        sem.try_acquire(2).await.unwrap(),
        "permits set by Java are ours to take"
    );
    assert_eq!(java.call("sem-avail", "s").unwrap(), "0");
    // A Java release wakes our waiter (on the count Redisson publishes).
    let waiter = c.semaphore("s");
    let waiting = tokio::spawn(async move {
        waiter.acquire(1).await.unwrap();
        Instant::now()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished());
    let released = Instant::now();
    java.call("sem-release", "s 1").unwrap();
    let woken = tokio::time::timeout(PROMPT, waiting)
        .await
        .expect("woken")
        .unwrap();
    assert!(woken - released < PROMPT, "woken after {:?}", woken - released);
    // Our release wakes a Java waiter.
    let java_waiter = java.send("sem-acquire", "s 2 60000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(java_waiter.try_answer().is_none());
    let released = Instant::now();
    sem.release(2).await.unwrap();
    let (got, took) = answer_timed(java_waiter, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java woken after {took:?}");
    java.call("sem-release", "s 3").unwrap();
    assert_eq!(sem.available().await.unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn permit_ids_work_across_redlatch_and_redisson() {
    let w = world();
    let java = &w.java;
    let c = client(&w.server.url()).await;
    let ps = c.permit_semaphore("p");
    assert!(ps.try_set_permits(1).await.unwrap());
    assert_eq!(java.call("pes-avail", "p").unwrap(), "1");
    // Java releases our permit by its id, and our waiter is woken by that release.
    let ours = ps.acquire(Some(Duration::from_secs(20))).await.unwrap();
    let lease: i64 = java
        .call("pes-lease", &format!("p {}", ours.id()))
        .unwrap()
        .parse()
        .unwrap();
    assert!((10_000..=20_000).contains(&lease), "Java reads {lease} ms");
    let waiter = c.permit_semaphore("p");
    let waiting = tokio::spawn(async move { waiter.acquire(Some(Duration::from_secs(20))).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished());
    java.call("pes-release", &format!("p {}", ours.id())).unwrap();
    let second = tokio::time::timeout(PROMPT, waiting)
        .await
        .expect("woken")
        .unwrap();
    // Ours is gone (released by Java): `deleted`, as a lock whose key another client deleted.
    let err = ours.release().await.unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::NotOwned, Some(Reason::Deleted)),
        "{err}"
    );
    second.release().await.unwrap();
    // We release a Java permit by its id, which wakes a Java waiter.
    let java_id = answer(java.send("pes-acquire", "p 0 20000"), PROMPT)
        .await
        .unwrap();
    assert_eq!(java_id.len(), 32, "{java_id}");
    let java_waiter = java.send("pes-acquire", "p 60000 20000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(java_waiter.try_answer().is_none());
    let released = Instant::now();
    ps.release(&java_id).await.unwrap();
    let (got, took) = answer_timed(java_waiter, released, PROMPT * 2).await;
    let next = got.unwrap();
    assert_eq!(next.len(), 32);
    assert!(took < PROMPT, "Java woken after {took:?}");
    let e = java.call("pes-release", &format!("p {java_id}")).unwrap_err();
    assert!(e.to_string().contains("IllegalArgumentException"), "{e}");
    ps.release(&next.to_uppercase()).await.unwrap();
    assert_eq!(ps.available().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn count_down_opens_a_java_await_and_back() {
    let w = world();
    let java = &w.java;
    let c = client(&w.server.url()).await;
    let latch = c.count_down_latch("l");
    assert_eq!(java.call("latch-set", "l 2").unwrap(), "true");
    assert_eq!(latch.count().await.unwrap(), 2);
    let java_waiter = java.send("latch-await", "l 60000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    latch.count_down().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(java_waiter.try_answer().is_none(), "one to go");
    let opened = Instant::now();
    latch.count_down().await.unwrap();
    let (got, took) = answer_timed(java_waiter, opened, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java await opened after {took:?}");
    // Back: our wait opens on Java's countDown.
    let latch = c.count_down_latch("m");
    assert!(latch.try_set_count(1).await.unwrap());
    assert_eq!(java.call("latch-count", "m").unwrap(), "1");
    let l = latch.clone();
    let waiting = tokio::spawn(async move {
        (
            l.wait(Some(Duration::from_secs(30))).await.unwrap(),
            Instant::now(),
        )
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished());
    let opened = Instant::now();
    java.call("latch-down", "m").unwrap();
    let (open, at) = tokio::time::timeout(PROMPT, waiting)
        .await
        .expect("opened")
        .unwrap();
    assert!(open);
    assert!(at - opened < PROMPT);
}

#[tokio::test(flavor = "multi_thread")]
async fn java_and_redlatch_multi_locks_on_overlapping_names_exclude() {
    let w = world();
    let java = &w.java;
    let c = client(&w.server.url()).await;
    // Reentrant members: Redisson's multi-lock is over RLocks (the same HASH layout).
    let ours = c.multi_lock(vec![c.rlock("m3"), c.rlock("m2")]).unwrap();
    assert_eq!(
        answer(java.send("multi", "1 0 20000 m2,m1"), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    assert!(ours.try_acquire().await.unwrap().is_none());
    assert_eq!(cli_keys(&w.server), ["m1", "m2"], "nothing of ours left behind");
    // Our waiter takes the set once Java unlocks.
    let o = ours.clone().wait(Duration::from_secs(30));
    let waiting = tokio::spawn(async move { o.acquire().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished());
    java.call("multi-unlock", "1 m2,m1").unwrap();
    let guard = tokio::time::timeout(PROMPT, waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(guard.names(), ["m2", "m3"]);
    // Held by us: Java's multi-lock over m1, m2 fails and rolls back its m1.
    assert_eq!(
        answer(java.send("multi", "1 0 20000 m1,m2"), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    assert_eq!(cli_keys(&w.server), ["m2", "m3"]);
    // A Java waiter gets it when we release.
    let java_waiter = java.send("multi", "1 60000 20000 m1,m2");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(java_waiter.try_answer().is_none());
    guard.release().await.unwrap();
    assert_eq!(answer(java_waiter, PROMPT * 2).await.unwrap(), "true");
    java.call("multi-unlock", "1 m1,m2").unwrap();
    assert!(cli_keys(&w.server).is_empty());
}
