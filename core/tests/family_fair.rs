//! Fair lock scripts on a real redis-server, through a plain client: FIFO order, the per-waiter
//! wake-up, dead-waiter purge, give-up shifting the deadlines behind, idempotent retries, and
//! errors that are not masked.

mod family;

use family::{now_ms, Node, Recorder};
use redlatch::protocol::family::fair::{self, AbortReply, Acquire, AcquireReply};
use redlatch::protocol::family::{keys as fk, PUBLISH};
use redlatch::protocol::reply::OwnershipReply;
use redlatch_fleet::RedisServer;

const LEASE: u64 = 30_000;
const SLOT: u64 = 5_000;

fn attempt<'a>(name: &'a str, owner: &'a str, request_id: &'a str, now_ms: u64, queue: bool) -> Acquire<'a> {
    Acquire {
        name,
        owner,
        lease_ms: LEASE,
        wait_slot_ms: SLOT,
        now_ms,
        queue,
        fenced: false,
        request_id,
        latch_ttl_ms: 2_000,
    }
}

async fn try_lock(node: &Node, name: &str, owner: &str, request_id: &str, now: u64) -> AcquireReply {
    fair::decode_acquire(
        &node
            .run(&fair::acquire(&attempt(name, owner, request_id, now, true)))
            .await,
    )
    .unwrap()
}

async fn release(node: &Node, name: &str, owner: &str, request_id: &str) -> OwnershipReply {
    let r = fair::release(name, owner, LEASE, now_ms(), PUBLISH, request_id, 2_000);
    fair::decode_release(&node.run(&r).await).unwrap()
}

fn granted(reply: AcquireReply) -> bool {
    matches!(reply, AcquireReply::Acquired { .. })
}

#[tokio::test]
async fn waiters_are_served_in_queue_order_and_only_the_head_is_told() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let now = now_ms();
    assert!(granted(try_lock(&node, "f", "a:1", "ra", now).await));
    for (i, w) in ["b:1", "c:1", "d:1"].iter().enumerate() {
        match try_lock(&node, "f", w, &format!("r{w}"), now).await {
            AcquireReply::Waiting { position, .. } => assert_eq!(position, i as u64 + 1),
            other => panic!("{w}: {other:?}"),
        }
    }
    assert_eq!(node.list(&fk::fair_queue("f")).await, ["b:1", "c:1", "d:1"]);
    // Deadlines: the holder's lease, then one wait slot per waiter (Redisson's arithmetic).
    let deadlines = node.zset(&fk::fair_timeouts("f")).await;
    let scores: Vec<i64> = deadlines.iter().map(|(_, s)| *s as i64 - now as i64).collect();
    assert!(
        (LEASE + SLOT - 100..=LEASE + SLOT).contains(&(scores[0] as u64)),
        "{scores:?}"
    );
    assert_eq!(scores[1] - scores[0], SLOT as i64);
    assert_eq!(scores[2] - scores[1], SLOT as i64);
    // Asking again keeps the place.
    assert!(matches!(
        try_lock(&node, "f", "c:1", "rc:1", now).await,
        AcquireReply::Waiting { position: 2, .. }
    ));

    assert_eq!(
        release(&node, "f", "a:1", "rel-a").await,
        OwnershipReply::HandedOff
    );
    assert_eq!(
        rec.take().await,
        [(fk::fair_waiter_channel("f", "b:1"), "0".to_owned())],
        "only the queue head is told"
    );
    // Not C's turn while B has not taken it, even though the lock is free.
    assert_eq!(
        try_lock(&node, "f", "c:1", "rc:1", now).await,
        AcquireReply::Waiting {
            pttl: -2,
            position: 2
        }
    );
    assert!(granted(try_lock(&node, "f", "b:1", "rb:1", now).await));
    assert_eq!(node.list(&fk::fair_queue("f")).await, ["c:1", "d:1"]);
    // The grant used up one slot: everyone behind is due one slot earlier.
    let after: Vec<i64> = node
        .zset(&fk::fair_timeouts("f"))
        .await
        .iter()
        .map(|(_, s)| *s as i64)
        .collect();
    assert_eq!(after[0], deadlines[1].1 as i64 - SLOT as i64);
    assert_eq!(after[1], deadlines[2].1 as i64 - SLOT as i64);
    assert_eq!(node.hash("f").await.get("b:1").map(String::as_str), Some("1"));
}

#[tokio::test]
async fn dead_heads_are_purged_and_a_waiter_that_gives_up_shifts_those_behind() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let now = now_ms();
    assert!(granted(try_lock(&node, "g", "a:1", "ra", now).await));
    for w in ["b:1", "c:1", "d:1"] {
        try_lock(&node, "g", w, w, now).await;
    }
    let before = node.zset(&fk::fair_timeouts("g")).await;
    // C gives up: D is due one slot earlier, B untouched, C gone from both keys.
    let r = fair::abort("g", "c:1", SLOT, PUBLISH, "c:1");
    assert_eq!(
        fair::decode_abort(&node.run(&r).await).unwrap(),
        AbortReply::LeftQueue
    );
    assert_eq!(node.list(&fk::fair_queue("g")).await, ["b:1", "d:1"]);
    let after = node.zset(&fk::fair_timeouts("g")).await;
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1].1, before[2].1 - SLOT as f64);
    assert_eq!(
        fair::decode_abort(&node.run(&r).await).unwrap(),
        AbortReply::Nothing
    );

    // A live waiter whose deadline passed is not dropped by its own attempt: it is due one
    // slot from now again (another client's attempt would drop it, see the next step).
    let b_due = after[0].1 as u64;
    assert!(matches!(
        try_lock(&node, "g", "b:1", "b:1", b_due + 10).await,
        AcquireReply::Waiting { position: 1, .. }
    ));
    let refreshed = node.zset(&fk::fair_timeouts("g")).await;
    let b_now = refreshed.iter().find(|(m, _)| m == b"b:1").unwrap().1;
    assert_eq!(b_now, (b_due + 10 + SLOT) as f64);

    // The holder's lease ends without a release, and B died in the queue: once B's deadline
    // has passed, D's next attempt drops B and takes the lock.
    node.cmd::<i64>(&["DEL", "g"]).await;
    let late = b_now as u64 + 1;
    assert!(granted(try_lock(&node, "g", "d:1", "d:1", late).await));
    assert_eq!(node.list(&fk::fair_queue("g")).await, Vec::<String>::new());
    assert_eq!(node.zset(&fk::fair_timeouts("g")).await, vec![]);

    // A head that gives up while the lock is free tells the next waiter.
    try_lock(&node, "g", "e:1", "e:1", now).await;
    try_lock(&node, "g", "f:1", "f:1", now).await;
    rec.take().await;
    release(&node, "g", "d:1", "rel-d").await;
    assert_eq!(
        rec.take().await,
        [(fk::fair_waiter_channel("g", "e:1"), "0".to_owned())]
    );
    let r = fair::abort("g", "e:1", SLOT, PUBLISH, "e:1");
    assert_eq!(
        fair::decode_abort(&node.run(&r).await).unwrap(),
        AbortReply::LeftQueue
    );
    assert_eq!(
        rec.take().await,
        [(fk::fair_waiter_channel("g", "f:1"), "0".to_owned())]
    );
    assert!(granted(try_lock(&node, "g", "f:1", "f:1", now).await));
}

#[tokio::test]
async fn reentry_retries_undo_and_release_outcomes() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let now = now_ms();
    assert_eq!(
        try_lock(&node, "h", "a:1", "r1", now).await,
        AcquireReply::Acquired { fence: 0, holds: 1 }
    );
    // A retry of the same request (its reply was lost) does not count the hold twice.
    assert_eq!(
        try_lock(&node, "h", "a:1", "r1", now).await,
        AcquireReply::Acquired { fence: 0, holds: 1 }
    );
    assert_eq!(
        try_lock(&node, "h", "a:1", "r2", now).await,
        AcquireReply::Acquired { fence: 0, holds: 2 }
    );
    // Undo of r2 (cancelled after it applied) takes back that hold only.
    let undo = fair::abort("h", "a:1", SLOT, PUBLISH, "r2");
    assert_eq!(
        fair::decode_abort(&node.run(&undo).await).unwrap(),
        AbortReply::Undone
    );
    assert_eq!(node.hash("h").await.get("a:1").map(String::as_str), Some("1"));
    assert_eq!(release(&node, "h", "b:1", "x").await, OwnershipReply::Taken);
    assert_eq!(release(&node, "h", "a:1", "rel").await, OwnershipReply::Done);
    // A retried release replays its answer instead of releasing someone else's hold.
    assert!(granted(try_lock(&node, "h", "b:1", "rb", now).await));
    assert_eq!(release(&node, "h", "a:1", "rel").await, OwnershipReply::Done);
    assert!(node.hash("h").await.contains_key("b:1"));
    node.cmd::<i64>(&["DEL", "h"]).await;
    // Releasing a lock that expired still tells the head (nobody else will).
    try_lock(&node, "h", "c:1", "rc", now).await;
    let c_queued_behind = node.list(&fk::fair_queue("h")).await.is_empty();
    assert!(c_queued_behind, "a free lock is granted, not queued");
    node.cmd::<i64>(&["DEL", "h"]).await;
    // Another owner's hold (a fair lock's hash always has a TTL: one without is application
    // data, refused as a key conflict).
    node.cmd::<i64>(&["HSET", "h", "z:1", "1"]).await;
    node.cmd::<i64>(&["PEXPIRE", "h", "60000"]).await;
    try_lock(&node, "h", "d:1", "rd", now).await;
    node.cmd::<i64>(&["DEL", "h"]).await;
    rec.take().await;
    assert_eq!(release(&node, "h", "z:1", "rz").await, OwnershipReply::Absent);
    assert_eq!(
        rec.take().await,
        [(fk::fair_waiter_channel("h", "d:1"), "0".to_owned())]
    );
    // One-try attempts never queue.
    node.cmd::<i64>(&["HSET", "h", "z:1", "1"]).await;
    node.cmd::<i64>(&["PEXPIRE", "h", "60000"]).await;
    let once = fair::acquire(&attempt("h", "e:1", "re", now, false));
    let reply = fair::decode_acquire(&node.run(&once).await).unwrap();
    assert!(
        matches!(reply, AcquireReply::Waiting { pttl, position: 0 } if pttl > 0),
        "{reply:?}"
    );
    assert_eq!(node.list(&fk::fair_queue("h")).await, ["d:1"]);
}

#[tokio::test]
async fn fenced_grants_count_and_type_errors_are_not_masked() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let mut a = attempt("k", "a:1", "r1", now_ms(), true);
    a.fenced = true;
    assert_eq!(
        fair::decode_acquire(&node.run(&fair::acquire(&a)).await).unwrap(),
        AcquireReply::Acquired { fence: 1, holds: 1 }
    );
    a.request_id = "r2";
    assert_eq!(
        fair::decode_acquire(&node.run(&fair::acquire(&a)).await).unwrap(),
        AcquireReply::Acquired { fence: 2, holds: 2 }
    );
    // A lock name that is application data: the error comes back, the data stays.
    node.cmd::<()>(&["SET", "data", "42"]).await;
    let e = node
        .eval(&fair::acquire(&attempt("data", "a:1", "r3", now_ms(), true)))
        .await
        .unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
    let e = node
        .eval(&fair::release(
            "data",
            "a:1",
            LEASE,
            now_ms(),
            PUBLISH,
            "r4",
            2_000,
        ))
        .await
        .unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
    assert_eq!(node.cmd::<String>(&["GET", "data"]).await, "42");
    assert!(
        !node.keys().await.iter().any(|k| k.contains("data}")),
        "{:?}",
        node.keys().await
    );
}

#[tokio::test]
async fn a_lock_key_of_another_type_fails_before_the_queue_is_touched() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let (queue, deadlines) = (fk::fair_queue("data"), fk::fair_timeouts("data"));
    // A dead waiter at the head (every script would purge it) and a grant latch (abort would
    // consume it), while the lock's name holds application data.
    node.cmd::<()>(&["SET", "data", "42"]).await;
    node.cmd::<i64>(&["RPUSH", &queue, "dead:1", "a:1"]).await;
    let past = (now_ms() - 1_000).to_string();
    let later = (now_ms() + 60_000).to_string();
    node.cmd::<i64>(&["ZADD", &deadlines, &past, "dead:1", &later, "a:1"])
        .await;
    let latch = redlatch::protocol::keys::acquire_latch("data", "r5");
    node.cmd::<()>(&["SET", &latch, "0:1"]).await;
    let keys_before = node.keys().await;
    for r in [
        fair::acquire(&attempt("data", "a:1", "r3", now_ms(), true)),
        fair::release("data", "a:1", LEASE, now_ms(), PUBLISH, "r4", 2_000),
        fair::abort("data", "a:1", SLOT, PUBLISH, "r5"),
    ] {
        let e = node.eval(&r).await.unwrap_err();
        assert!(e.message().contains("WRONGTYPE"), "{}: {e}", r.script.name());
        assert_eq!(
            node.list(&queue).await,
            ["dead:1", "a:1"],
            "{} changed the queue before failing",
            r.script.name()
        );
        assert_eq!(node.zset(&deadlines).await.len(), 2, "{}", r.script.name());
        assert_eq!(node.keys().await, keys_before, "{}", r.script.name());
    }
    assert_eq!(node.cmd::<String>(&["GET", "data"]).await, "42");
}

#[tokio::test]
async fn a_queue_entry_without_a_deadline_is_dead() {
    // A user trial: an entry whose deadline was gone (the deadline set deleted or evicted while
    // the list stayed) was a head that never expired: the free lock was refused to everyone,
    // for good, and a release told no one. It is dropped like a head whose deadline passed.
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let queue = fk::fair_queue("h");
    let _: i64 = node.cmd(&["RPUSH", &queue, "orphan:1"]).await;
    assert!(granted(try_lock(&node, "h", "a:1", "ra", now_ms()).await));
    assert!(node.list(&queue).await.is_empty(), "the orphan was dropped");
    // Behind a holder: a release wakes the live waiter, not the orphan before it.
    try_lock(&node, "h", "b:1", "rb", now_ms()).await;
    let _: i64 = node.cmd(&["LPUSH", &queue, "orphan:2"]).await;
    assert_eq!(node.list(&queue).await, ["orphan:2", "b:1"]);
    let _ = rec.take().await;
    assert_eq!(
        release(&node, "h", "a:1", "rel-a").await,
        OwnershipReply::HandedOff
    );
    assert_eq!(
        rec.take().await,
        [(fk::fair_waiter_channel("h", "b:1"), "0".to_owned())],
        "the live waiter is told"
    );
    assert_eq!(node.list(&queue).await, ["b:1"]);
}
