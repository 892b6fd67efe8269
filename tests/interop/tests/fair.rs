//! Fair lock wire compatibility with Redisson 4.7.0's RedissonFairLock, at the protocol level:
//! our scripts run through a plain client, interleaved with Java waiters in one queue.

mod common;
#[path = "../../../core/tests/family/mod.rs"]
mod family;

use common::{answer, answer_timed, cli_keys, world, LONG_LEASE_MS, PROMPT};
use family::{now_ms, Node, Recorder};
use redlatch::protocol::family::fair::{self, AbortReply, Acquire, AcquireReply};
use redlatch::protocol::family::{keys as fk, PUBLISH};
use redlatch::protocol::reply::OwnershipReply;
use std::time::{Duration, Instant};

/// The wait every waiter here queues with (Java: `tryLock(60 s, ...)`), so deadlines line up.
const WAIT_MS: u64 = 60_000;

async fn ours(node: &Node, name: &str, owner: &str, request_id: &str) -> AcquireReply {
    let a = Acquire {
        name,
        owner,
        lease_ms: LONG_LEASE_MS as u64,
        wait_slot_ms: WAIT_MS,
        now_ms: now_ms(),
        queue: true,
        fenced: false,
        request_id,
        latch_ttl_ms: 2_000,
    };
    fair::decode_acquire(&node.run(&fair::acquire(&a)).await).unwrap()
}

async fn our_release(node: &Node, name: &str, owner: &str, request_id: &str) -> OwnershipReply {
    let r = fair::release(
        name,
        owner,
        LONG_LEASE_MS as u64,
        now_ms(),
        PUBLISH,
        request_id,
        2_000,
    );
    fair::decode_release(&node.run(&r).await).unwrap()
}

async fn queue(node: &Node, name: &str) -> Vec<String> {
    node.list(&fk::fair_queue(name)).await
}

/// Waits until `owner` is in the queue (a Java waiter's first attempt queues it).
async fn queued(node: &Node, name: &str, owner: &str) {
    let deadline = Instant::now() + PROMPT;
    while !queue(node, name).await.iter().any(|o| o == owner) {
        assert!(
            Instant::now() < deadline,
            "{owner} never queued: {:?}",
            queue(node, name).await
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn java_and_redlatch_waiters_share_one_queue_in_arrival_order() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    let rec = Recorder::start(&w.server.url()).await;
    let (o1, o2) = (
        "11111111-1111-4111-8111-111111111111:1",
        "11111111-1111-4111-8111-111111111111:2",
    );

    assert_eq!(
        answer(java.lock("fair", "q", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    let j2 = java.lock("fair", "q", 2, WAIT_MS as i64, LONG_LEASE_MS);
    queued(&node, "q", &java.owner(2)).await;
    assert!(matches!(
        ours(&node, "q", o1, "o1").await,
        AcquireReply::Waiting { position: 2, .. }
    ));
    let j3 = java.lock("fair", "q", 3, WAIT_MS as i64, LONG_LEASE_MS);
    queued(&node, "q", &java.owner(3)).await;
    assert!(matches!(
        ours(&node, "q", o2, "o2").await,
        AcquireReply::Waiting { position: 4, .. }
    ));
    assert_eq!(
        queue(&node, "q").await,
        [java.owner(2), o1.to_owned(), java.owner(3), o2.to_owned()]
    );
    // Redisson's deadlines and ours follow one arithmetic: one wait slot apart, in queue order.
    let deadlines = node.zset(&fk::fair_timeouts("q")).await;
    let order: Vec<String> = deadlines
        .iter()
        .map(|(m, _)| String::from_utf8(m.clone()).unwrap())
        .collect();
    assert_eq!(order, queue(&node, "q").await);
    for pair in deadlines.windows(2) {
        let gap = pair[1].1 - pair[0].1;
        assert!(
            (WAIT_MS as f64 - 1_000.0..=WAIT_MS as f64 + 1_000.0).contains(&gap),
            "{deadlines:?}"
        );
    }
    assert_eq!(
        cli_keys(&w.server),
        ["q", "redisson_lock_queue:{q}", "redisson_lock_timeout:{q}"]
    );

    // Java releases: Java's head (J2) is told on its own channel and takes it promptly.
    let released = Instant::now();
    java.unlock("fair", "q", 1).unwrap();
    let (got, took) = answer_timed(j2, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "J2 woken after {took:?}");
    // J2 releases: the head is now our waiter O1, told on its channel.
    rec.take().await;
    java.unlock("fair", "q", 2).unwrap();
    let ch = fk::fair_waiter_channel("q", o1);
    assert_eq!(
        rec.wait_for(&ch, PROMPT).await.as_deref(),
        Some("0"),
        "Redisson tells our head"
    );
    assert!(matches!(
        ours(&node, "q", o1, "o1").await,
        AcquireReply::Acquired { holds: 1, .. }
    ));
    assert_eq!(queue(&node, "q").await, [java.owner(3), o2.to_owned()]);
    // Our release tells Java's head (J3), which wakes promptly, not after our 20 s lease.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    assert_eq!(our_release(&node, "q", o1, "r1").await, OwnershipReply::HandedOff);
    let (got, took) = answer_timed(j3, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "J3 woken after {took:?}: our message was missed");
    // And so on to the last waiter, ours.
    java.unlock("fair", "q", 3).unwrap();
    let ch = fk::fair_waiter_channel("q", o2);
    assert_eq!(rec.wait_for(&ch, PROMPT).await.as_deref(), Some("0"));
    assert!(matches!(
        ours(&node, "q", o2, "o2").await,
        AcquireReply::Acquired { .. }
    ));
    assert_eq!(our_release(&node, "q", o2, "r2").await, OwnershipReply::Done);
    assert!(cli_keys(&w.server).is_empty(), "{:?}", cli_keys(&w.server));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_java_waiter_that_gives_up_leaves_the_queue_and_shifts_ours() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    let (holder, o1) = (
        "22222222-2222-4222-8222-222222222222:1",
        "22222222-2222-4222-8222-222222222222:2",
    );
    assert!(matches!(
        ours(&node, "g", holder, "h").await,
        AcquireReply::Acquired { .. }
    ));
    // Java waits 1.5 s, then gives up (Redisson acquireFailedAsync).
    let j = java.lock("fair", "g", 5, 1_500, LONG_LEASE_MS);
    queued(&node, "g", &java.owner(5)).await;
    assert!(matches!(
        ours(&node, "g", o1, "o1").await,
        AcquireReply::Waiting { position: 2, .. }
    ));
    let before = node.zset(&fk::fair_timeouts("g")).await;
    let ours_before = before.iter().find(|(m, _)| m == o1.as_bytes()).unwrap().1;
    assert_eq!(answer(j, PROMPT * 2).await.unwrap(), "false");
    assert_eq!(queue(&node, "g").await, [o1]);
    let after = node.zset(&fk::fair_timeouts("g")).await;
    assert_eq!(after.len(), 1);
    // Redisson 4.7's async tryLock gives up with waitTime -1, i.e. the default slot (5 min),
    // not its own 1.5 s: our deadline lands in the past (a live waiter that looks dead).
    assert_eq!(after[0].1, ours_before - fair::DEFAULT_WAIT_SLOT_MS as f64);
    assert!(after[0].1 < now_ms() as f64);
    // Our next attempt keeps our place and makes the deadline one slot from now again.
    assert!(matches!(
        ours(&node, "g", o1, "o1").await,
        AcquireReply::Waiting { position: 1, .. }
    ));
    assert!(node.zset(&fk::fair_timeouts("g")).await[0].1 >= (now_ms() + WAIT_MS - 1_000) as f64);

    // Ours gives up too, and a Java waiter queued behind it gets the same treatment.
    let j = java.lock("fair", "g", 6, WAIT_MS as i64, LONG_LEASE_MS);
    queued(&node, "g", &java.owner(6)).await;
    let java_before = node.zset(&fk::fair_timeouts("g")).await[1].1;
    let r = fair::abort("g", o1, WAIT_MS, PUBLISH, "o1");
    assert_eq!(
        fair::decode_abort(&node.run(&r).await).unwrap(),
        AbortReply::LeftQueue
    );
    assert_eq!(queue(&node, "g").await, [java.owner(6)]);
    assert_eq!(
        node.zset(&fk::fair_timeouts("g")).await[0].1,
        java_before - WAIT_MS as f64
    );
    let released = Instant::now();
    assert_eq!(
        our_release(&node, "g", holder, "r").await,
        OwnershipReply::HandedOff
    );
    let (got, took) = answer_timed(j, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "{took:?}");
    java.unlock("fair", "g", 6).unwrap();
}
