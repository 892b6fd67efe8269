//! Today's reentrant lock (`rlock`, Redisson RLock layout) against a real Redisson 4.7.0 client:
//! the harness's proof. Java and redlatch holders exclude each other, a release on either side
//! wakes a waiter on the other by its message (both waiters would otherwise sleep for most of
//! the holder's 20 s lease), and `redis-cli` shows the same keys whichever side wrote them.

mod common;

use common::{
    answer, answer_timed, cli_hash, cli_keys, cli_pttl, cli_type, is_latch, latches_expire, world,
    LONG_LEASE_MS, PROMPT,
};
use redlatch::Client;
use std::time::{Duration, Instant};

/// A redlatch client whose waiters only poll every minute: a prompt wake-up is the message's.
async fn client(url: &str) -> Client {
    Client::builder(url)
        .poll_interval(Duration::from_secs(60))
        .connect()
        .await
        .expect("connect")
}

#[tokio::test(flavor = "multi_thread")]
async fn holders_exclude_each_other_and_write_the_same_keys() {
    let w = world();
    let ours = client(&w.server.url()).await;
    let lock = ours
        .rlock("rl")
        .lease(Duration::from_secs(10))
        .wait(Duration::ZERO);

    // Java holds: our attempt fails and leaves the hash alone.
    let java = &w.java;
    assert_eq!(
        answer(java.lock("rlock", "rl", 7, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    let java_keys = cli_keys(&w.server);
    let java_hash = cli_hash(&w.server, "rl");
    assert_eq!(java_keys, ["rl"]);
    assert_eq!(cli_type(&w.server, "rl"), "hash");
    assert_eq!(java_hash, [(java.owner(7), "1".to_owned())]);
    // The 10 s lease given (not a 30 s watchdog default), minus however long a loaded machine took.
    assert!((1..=10_000).contains(&cli_pttl(&w.server, "rl")));
    assert!(
        lock.try_acquire().await.unwrap().is_none(),
        "redlatch must not get a lock Java holds"
    );
    assert_eq!(cli_hash(&w.server, "rl"), java_hash);
    java.unlock("rlock", "rl", 7).unwrap();
    assert!(cli_keys(&w.server).is_empty());

    // redlatch holds: Java's attempt fails, and the keys look exactly as Java's did.
    let guard = lock.try_acquire().await.unwrap().expect("free lock");
    let owner = lock.owner_id().unwrap();
    assert_eq!(cli_keys(&w.server), java_keys);
    assert_eq!(cli_type(&w.server, "rl"), "hash");
    assert_eq!(cli_hash(&w.server, "rl"), [(owner, "1".to_owned())]);
    // The 10 s lease given (not a 30 s watchdog default), minus however long a loaded machine took.
    assert!((1..=10_000).contains(&cli_pttl(&w.server, "rl")));
    assert_eq!(
        answer(java.lock("rlock", "rl", 7, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    // What the Java client itself lists (RKeys) agrees with redis-cli.
    let seen_by_java: Vec<String> = java.keys().into_iter().filter(|k| !is_latch(k)).collect();
    assert_eq!(seen_by_java, ["rl"]);
    // Java cannot release our hold (not its owner), and the hold survives the attempt.
    let e = java.unlock("rlock", "rl", 7).unwrap_err();
    assert!(e.to_string().contains("IllegalMonitorStateException"), "{e}");
    guard.release().await.unwrap();
    assert!(cli_keys(&w.server).is_empty());
    // A reentrant release's latch lives as long as the hold could have (here the 10 s lease),
    // so that a retried release can never decrement twice; Redisson's own lives ~10 s too.
    latches_expire(&w.server, 10_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_release_on_either_side_wakes_the_other_sides_waiter_promptly() {
    let w = world();
    let ours = client(&w.server.url()).await;
    let lock = ours
        .rlock("wake")
        .lease(Duration::from_millis(LONG_LEASE_MS as u64))
        .wait(Duration::from_secs(60));

    // Java holds, redlatch waits.
    assert_eq!(
        answer(w.java.lock("rlock", "wake", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move {
            let guard = lock.acquire().await;
            (guard, Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiter.is_finished(), "Java holds the lock");
    let released = Instant::now();
    w.java.unlock("rlock", "wake", 1).unwrap();
    let (guard, woke) = tokio::time::timeout(PROMPT * 2, waiter)
        .await
        .expect("waiter hung")
        .unwrap();
    let guard = guard.expect("redlatch acquires after the Java release");
    assert!(
        woke - released < PROMPT,
        "woken after {:?}: the message was missed",
        woke - released
    );

    // redlatch holds, Java waits (Redisson sleeps up to the holder's TTL unless told).
    let java_waiter = w.java.lock("rlock", "wake", 2, 60_000, LONG_LEASE_MS);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(java_waiter.try_answer().is_none(), "redlatch holds the lock");
    let released = Instant::now();
    guard.release().await.unwrap();
    let (got, took) = answer_timed(java_waiter, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(
        took < PROMPT,
        "Java woken after {took:?}: our release message was missed"
    );
    assert_eq!(cli_hash(&w.server, "wake"), [(w.java.owner(2), "1".to_owned())]);
    w.java.unlock("rlock", "wake", 2).unwrap();
}
