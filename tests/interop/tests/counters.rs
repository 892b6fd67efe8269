//! Semaphore, permit-expirable semaphore and count-down latch wire compatibility with Redisson
//! 4.7.0, at the protocol level: our scripts through a plain client, next to Java clients.

mod common;
#[path = "../../../core/tests/family/mod.rs"]
mod family;

use common::{answer, answer_timed, world, PROMPT};
use family::{now_ms, unhex, Node, Recorder};
use redlatch::protocol::family::latch::{self, CountDownReply};
use redlatch::protocol::family::permits::{self, ReleaseReply};
use redlatch::protocol::family::semaphore::{self, AcquireReply};
use redlatch::protocol::family::{keys as fk, PUBLISH};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn semaphore_permits_flow_both_ways_and_releases_wake_the_other_side() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    let rec = Recorder::start(&w.server.url()).await;
    assert_eq!(java.call("sem-set", "s 2").unwrap(), "true");
    let take = semaphore::acquire("s", 1).unwrap();
    assert_eq!(
        semaphore::decode_acquire(&node.run(&take).await).unwrap(),
        AcquireReply::Acquired { left: 1 },
        "permits set by Java are ours to take"
    );
    assert_eq!(
        answer(java.send("sem-acquire", "s 1 0"), PROMPT).await.unwrap(),
        "true"
    );
    assert_eq!(java.call("sem-avail", "s").unwrap(), "0");
    assert_eq!(
        semaphore::decode_acquire(&node.run(&take).await).unwrap(),
        AcquireReply::NotEnough { available: Some(0) }
    );
    // A Java waiter wakes on our release's message (Redisson reads the count from it).
    let waiter = java.send("sem-acquire", "s 1 60000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(waiter.try_answer().is_none());
    let released = Instant::now();
    let give = semaphore::release("s", 1, PUBLISH).unwrap();
    assert_eq!(semaphore::decode_release(&node.run(&give).await).unwrap().0, 1);
    let (got, took) = answer_timed(waiter, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java woken after {took:?}");
    // Java's release publishes the new count on the channel our waiters listen to.
    rec.take().await;
    java.call("sem-release", "s 2").unwrap();
    assert_eq!(
        rec.wait_for(&fk::semaphore_channel("s"), PROMPT).await.as_deref(),
        Some("2")
    );
    assert_eq!(
        semaphore::decode_acquire(&node.run(&semaphore::acquire("s", 2).unwrap()).await).unwrap(),
        AcquireReply::Acquired { left: 0 }
    );
    // Set by us, seen and taken by Java.
    let set = semaphore::try_set_permits("t", 3, None, PUBLISH).unwrap();
    assert!(semaphore::decode_try_set(&node.run(&set).await).unwrap());
    assert_eq!(java.call("sem-set", "t 9").unwrap(), "false");
    assert_eq!(
        answer(java.send("sem-acquire", "t 3 0"), PROMPT).await.unwrap(),
        "true"
    );
    assert_eq!(
        semaphore::decode_available(&node.run(&semaphore::available("t")).await).unwrap(),
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn permit_ids_are_interchangeable_with_redisson() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    assert_eq!(java.call("pes-set", "p 1").unwrap(), "true");
    let java_id = answer(java.send("pes-acquire", "p 0 10000"), PROMPT)
        .await
        .unwrap();
    assert_eq!(java_id.len(), 32, "{java_id}");
    permits::validate_permit_id(&java_id).unwrap();
    let held = node.zset(&fk::permit_timeouts("p")).await;
    assert_eq!(held.len(), 1);
    assert_eq!(
        held[0].0,
        unhex(&java_id),
        "Redisson stores the id's raw bytes, as we do"
    );
    let ours = permits::new_permit_ids(1).unwrap();
    let r = permits::acquire(
        "p",
        &ours,
        permits::expiry(now_ms(), Some(10_000)),
        now_ms(),
        PUBLISH,
    )
    .unwrap();
    match permits::decode_acquire(&node.run(&r).await).unwrap() {
        permits::AcquireReply::NotEnough {
            earliest_expiry: Some(at),
        } => assert_eq!(at as f64, held[0].1),
        other => panic!("{other:?}"),
    }
    // We release Java's permit by its id.
    let rel = permits::release("p", &java_id, now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_release(&node.run(&rel).await).unwrap(),
        ReleaseReply::Released
    );
    assert_eq!(java.call("pes-avail", "p").unwrap(), "1");
    let e = java.call("pes-release", &format!("p {java_id}")).unwrap_err();
    assert!(e.to_string().contains("IllegalArgumentException"), "{e}");
    // Java releases ours by its id.
    let r = permits::acquire(
        "p",
        &ours,
        permits::expiry(now_ms(), Some(10_000)),
        now_ms(),
        PUBLISH,
    )
    .unwrap();
    assert_eq!(
        permits::decode_acquire(&node.run(&r).await).unwrap(),
        permits::AcquireReply::Acquired { left: 0 }
    );
    // A Java waiter on a permit wakes when Java releases ours (the message is the count).
    let waiter = java.send("pes-acquire", "p 60000 10000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(waiter.try_answer().is_none());
    java.call("pes-release", &format!("p {}", ours[0])).unwrap();
    let second = answer(waiter, PROMPT * 2).await.unwrap();
    assert_eq!(second.len(), 32);
    let rel = permits::release("p", &ours[0], now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_release(&node.run(&rel).await).unwrap(),
        ReleaseReply::Unknown
    );
    // Our release of Java's second permit wakes another Java waiter by its message.
    let waiter = java.send("pes-acquire", "p 60000 10000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(waiter.try_answer().is_none());
    let released = Instant::now();
    let rel = permits::release("p", &second, now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_release(&node.run(&rel).await).unwrap(),
        ReleaseReply::Released
    );
    let (third, took) = answer_timed(waiter, released, PROMPT * 2).await;
    assert_eq!(third.unwrap().len(), 32);
    assert!(took < PROMPT, "Java woken after {took:?}");
    assert_eq!(java.call("pes-avail", "p").unwrap(), "0");
}

#[tokio::test(flavor = "multi_thread")]
async fn our_count_down_opens_a_java_await_and_back() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    let rec = Recorder::start(&w.server.url()).await;
    assert_eq!(java.call("latch-set", "l 2").unwrap(), "true");
    assert_eq!(
        latch::decode_count(&node.run(&latch::count("l")).await).unwrap(),
        2
    );
    let waiter = java.send("latch-await", "l 60000");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let down = latch::count_down("l", PUBLISH);
    assert_eq!(
        latch::decode_count_down(&node.run(&down).await).unwrap(),
        CountDownReply::Left(1)
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(waiter.try_answer().is_none(), "still one to go");
    let opened = Instant::now();
    assert_eq!(
        latch::decode_count_down(&node.run(&down).await).unwrap(),
        CountDownReply::Left(0)
    );
    let (got, took) = answer_timed(waiter, opened, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java await opened after {took:?}");
    // Back: set by us, counted down by Java, and the messages our waiters read.
    rec.take().await;
    assert!(latch::decode_try_set(&node.run(&latch::try_set_count("m", 1, PUBLISH).unwrap()).await).unwrap());
    assert_eq!(java.call("latch-count", "m").unwrap(), "1");
    java.call("latch-down", "m").unwrap();
    let channel = fk::latch_channel("m");
    assert_eq!(
        rec.take().await,
        [(channel.clone(), "1".to_owned()), (channel, "0".to_owned())],
        "trySetCount publishes 1, the last countDown 0, on Redisson's channel"
    );
    assert_eq!(
        latch::decode_count(&node.run(&latch::count("m")).await).unwrap(),
        0
    );
}

/// The lease of a permit whose holder "dies" (is never released).
const SHORT_LEASE_MS: u64 = 1_500;

/// Sleeps until the wall clock is past `at_ms` (ms since the epoch).
async fn sleep_past(at_ms: u64) {
    let now = now_ms();
    if now <= at_ms {
        tokio::time::sleep(Duration::from_millis(at_ms - now + 50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn leases_read_the_same_and_a_dead_holders_permit_comes_back_to_the_other_side() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    assert_eq!(java.call("pes-set", "q 1").unwrap(), "true");
    let acquire = |ids: &[String], lease_ms: Option<u64>| {
        let now = now_ms();
        permits::acquire("q", ids, permits::expiry(now, lease_ms), now, PUBLISH).unwrap()
    };
    // Java reads the lease of our permit as we wrote it, and "no lease" as Redisson's -1.
    let ours = permits::new_permit_ids(1).unwrap();
    node.run(&acquire(&ours, Some(60_000))).await;
    let left: i64 = java
        .call("pes-lease", &format!("q {}", ours[0]))
        .unwrap()
        .parse()
        .unwrap();
    assert!((50_000..=60_000).contains(&left), "Java reads {left} ms left");
    let rel = permits::release("q", &ours[0], now_ms(), PUBLISH).unwrap();
    node.run(&rel).await;
    node.run(&acquire(&ours, None)).await;
    assert_eq!(java.call("pes-lease", &format!("q {}", ours[0])).unwrap(), "-1");
    node.run(&rel).await;

    // Our holder dies with a short lease (long enough that Java's first try surely falls
    // inside it on a loaded machine): Java's next acquire takes the permit back.
    let ends = now_ms() + SHORT_LEASE_MS;
    node.run(&acquire(&ours, Some(SHORT_LEASE_MS))).await;
    assert_eq!(
        answer(java.send("pes-acquire", "q 0 10000"), PROMPT)
            .await
            .unwrap(),
        "none"
    );
    sleep_past(ends).await;
    let java_id = answer(java.send("pes-acquire", &format!("q 0 {SHORT_LEASE_MS}")), PROMPT)
        .await
        .unwrap();
    assert_eq!(java_id.len(), 32, "Java reclaimed our expired permit: {java_id}");
    let held = node.zset(&fk::permit_timeouts("q")).await;
    assert_eq!(held.len(), 1, "ours is gone, Java's is held");
    let ends = held[0].1 as u64; // the expiry Java wrote
                                 // And back: the Java holder's lease ends, our next acquire takes the permit.
    let next = permits::new_permit_ids(1).unwrap();
    assert!(matches!(
        permits::decode_acquire(&node.run(&acquire(&next, Some(60_000))).await).unwrap(),
        permits::AcquireReply::NotEnough {
            earliest_expiry: Some(_)
        }
    ));
    sleep_past(ends).await;
    assert_eq!(
        permits::decode_acquire(&node.run(&acquire(&next, Some(60_000))).await).unwrap(),
        permits::AcquireReply::Acquired { left: 0 }
    );
    let e = java.call("pes-release", &format!("q {java_id}")).unwrap_err();
    assert!(e.to_string().contains("IllegalArgumentException"), "{e}");
    let held: Vec<Vec<u8>> = node
        .zset(&fk::permit_timeouts("q"))
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(held, [unhex(&next[0])], "only our new permit is held");
}
