//! Multi-lock one-script acquire and release on a real redis-server, through a plain client:
//! all or nothing over lease and reentrant members, a retried request replayed, and errors
//! (a member name that is application data) that are not masked.

mod family;

use family::{Node, Recorder};
use redlatch::protocol::family::multi::{self, AcquireReply, Member, Plan};
use redlatch::protocol::family::PUBLISH;
use redlatch::protocol::reply::OwnershipReply;
use redlatch::protocol::request::Holder;
use redlatch_fleet::RedisServer;
use std::time::Duration;

fn lease(name: &str, token: &str) -> Member {
    Member {
        name: name.into(),
        holder: Some(Holder::Lease { token: token.into() }),
    }
}

fn reentrant(name: &str, owner: &str) -> Member {
    Member {
        name: name.into(),
        holder: Some(Holder::Reentrant { owner: owner.into() }),
    }
}

/// The `multi_release` request over `order`, its members' latches named by `id` (a repeat of
/// the same `id` is the same request, `sent_before` for a repeat: only then are latches read).
fn release_request(
    order: &[&Member],
    lease_ms: u64,
    id: &str,
    sent_before: bool,
) -> redlatch::protocol::request::Request {
    let ids: Vec<String> = (0..order.len()).map(|i| format!("{id}-{i}")).collect();
    let parts: Vec<multi::Releasing<'_>> = order
        .iter()
        .zip(&ids)
        .map(|(member, request_id)| multi::Releasing {
            member,
            request_id,
            latch_ttl_ms: 2_000,
            sent_before,
        })
        .collect();
    multi::release(&parts, lease_ms, PUBLISH).unwrap()
}

fn sorted(members: &[Member]) -> Vec<&Member> {
    match multi::plan(members, false).unwrap() {
        Plan::OneScript(order) => order.into_iter().map(|i| &members[i]).collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn all_or_nothing_over_mixed_members() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let mine = [reentrant("acct:2", "u:1"), lease("acct:1", "tok")];
    let order = sorted(&mine);
    assert_eq!(order[0].name, "acct:1");
    let take = |req: &str| multi::acquire(&order, 10_000, req, 2_000).unwrap();
    assert_eq!(
        multi::decode_acquire(&node.run(&take("r1")).await).unwrap(),
        AcquireReply::Acquired
    );
    assert_eq!(node.cmd::<String>(&["GET", "acct:1"]).await, "tok");
    assert_eq!(
        node.hash("acct:2").await.get("u:1").map(String::as_str),
        Some("1")
    );
    // The same request retried (reply lost): replayed, the reentrant member not counted twice.
    assert_eq!(
        multi::decode_acquire(&node.run(&take("r1")).await).unwrap(),
        AcquireReply::Acquired
    );
    assert_eq!(
        node.hash("acct:2").await.get("u:1").map(String::as_str),
        Some("1")
    );

    // Someone else wants acct:2 and acct:3: acct:2 is busy, so acct:3 is not taken either.
    let theirs = [reentrant("acct:3", "v:1"), reentrant("acct:2", "v:1")];
    let r = multi::acquire(&sorted(&theirs), 10_000, "r2", 2_000).unwrap();
    assert!(matches!(
        multi::decode_acquire(&node.run(&r).await).unwrap(),
        AcquireReply::Busy { index: 0, pttl } if pttl > 9_000
    ));
    assert_eq!(node.cmd::<i64>(&["EXISTS", "acct:3"]).await, 0);

    // `HandedOff`: released, and the message reached a listener (the recorder).
    let release = release_request(&order, 10_000, "rel1", false);
    assert_eq!(
        multi::decode_release(&node.run(&release).await, 2).unwrap(),
        [OwnershipReply::HandedOff, OwnershipReply::HandedOff]
    );
    let channels: Vec<String> = rec.take().await.into_iter().map(|(c, _)| c).collect();
    assert_eq!(
        channels,
        [
            "redisson_lock__channel:{acct:1}",
            "redisson_lock__channel:{acct:2}"
        ]
    );
    // The same request repeated (its reply lost): each member's latch replays the answer.
    let repeat = release_request(&order, 10_000, "rel1", true);
    assert_eq!(
        multi::decode_release(&node.run(&repeat).await, 2).unwrap(),
        [OwnershipReply::HandedOff, OwnershipReply::HandedOff]
    );
    assert!(rec.take().await.is_empty(), "a replay publishes nothing");
    // A new request finds nothing to release.
    assert_eq!(
        multi::decode_release(
            &node.run(&release_request(&order, 10_000, "rel2", false)).await,
            2
        )
        .unwrap(),
        [OwnershipReply::Absent, OwnershipReply::Absent]
    );
    let r = multi::acquire(&sorted(&theirs), 10_000, "r3", 2_000).unwrap();
    assert_eq!(
        multi::decode_acquire(&node.run(&r).await).unwrap(),
        AcquireReply::Acquired
    );
}

#[tokio::test]
async fn a_member_of_another_type_is_an_error_and_nothing_is_taken() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    node.cmd::<i64>(&["HSET", "b", "field", "1"]).await;
    let members = [lease("a", "tok"), lease("b", "tok")];
    let e = node
        .eval(
            &multi::acquire(&sorted(&members), 1_000, "r", 2_000)
                .unwrap()
                .script_only(),
        )
        .await
        .unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
    assert_eq!(node.keys().await, ["b"]);
    // Releasing a set whose second member is application data releases nothing.
    node.cmd::<()>(&["SET", "a", "tok"]).await;
    let e = node
        .eval(&release_request(&sorted(&members), 1_000, "rel", false))
        .await
        .unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
    assert_eq!(node.cmd::<String>(&["GET", "a"]).await, "tok");
}

#[tokio::test]
async fn a_reentrant_member_counts_holds_and_a_partial_release_keeps_the_lease() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    // The owner already holds r once (as an rlock would); the multi-lock re-enters it.
    node.cmd::<i64>(&["HSET", "r", "u:1", "1"]).await;
    node.cmd::<i64>(&["PEXPIRE", "r", "60000"]).await;
    let members = [reentrant("r", "u:1"), lease("l", "tok")];
    let order = sorted(&members);
    let r = multi::acquire(&order, 10_000, "r1", 2_000).unwrap();
    assert_eq!(
        multi::decode_acquire(&node.run(&r).await).unwrap(),
        AcquireReply::Acquired
    );
    assert_eq!(node.hash("r").await.get("u:1").map(String::as_str), Some("2"));
    let release = release_request(&order, 20_000, "rel", false);
    assert_eq!(
        multi::decode_release(&node.run(&release).await, 2).unwrap(),
        [OwnershipReply::HandedOff, OwnershipReply::StillHeld],
        "l goes; r keeps the owner's first hold"
    );
    assert_eq!(node.hash("r").await.get("u:1").map(String::as_str), Some("1"));
    let ttl = node.pttl("r").await;
    assert!(
        ttl > 15_000 && ttl <= 20_000,
        "partial release restores the lease: {ttl}"
    );
    let channels: Vec<String> = rec.take().await.into_iter().map(|(c, _)| c).collect();
    assert_eq!(channels, ["redisson_lock__channel:{l}"], "only l was released");
}

#[tokio::test]
async fn a_member_taken_meanwhile_is_left_alone_and_a_stale_retry_is_not_replayed() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let members = [lease("a", "tok"), lease("b", "tok")];
    let order = sorted(&members);
    // The script form, as a retry sends it.
    let r = multi::acquire(&order, 100, "r1", 5_000).unwrap().script_only();
    node.run(&r).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Both leases ended and another client took b. The same request retried (its first reply
    // lost) must not be answered "acquired" from its latch: b is someone else's now.
    node.cmd::<()>(&["SET", "b", "other", "PX", "60000"]).await;
    assert!(matches!(
        multi::decode_acquire(&node.run(&r).await).unwrap(),
        AcquireReply::Busy { index: 1, pttl } if pttl > 50_000
    ));
    assert_eq!(node.keys().await, ["b"], "a was not taken");
    // We take a again (b is still theirs, so only by hand here) and release the set: a goes,
    // b stays theirs and nothing is published for it.
    node.cmd::<()>(&["SET", "a", "tok", "PX", "60000"]).await;
    rec.take().await;
    let release = release_request(&order, 10_000, "rel", false);
    assert_eq!(
        multi::decode_release(&node.run(&release).await, 2).unwrap(),
        [OwnershipReply::HandedOff, OwnershipReply::Taken]
    );
    assert_eq!(node.cmd::<String>(&["GET", "b"]).await, "other");
    let channels: Vec<String> = rec.take().await.into_iter().map(|(c, _)| c).collect();
    assert_eq!(channels, ["redisson_lock__channel:{a}"]);
    // A member held without TTL (redis-py's Lock without a timeout: a token, no TTL) reports
    // pttl -1; a string without TTL that is no token is application data (conflicts.rs).
    node.cmd::<()>(&["SET", "b", "0123456789abcdef0123456789abcdef"])
        .await;
    let r = multi::acquire(&order, 10_000, "r2", 2_000).unwrap().script_only();
    assert_eq!(
        multi::decode_acquire(&node.run(&r).await).unwrap(),
        AcquireReply::Busy { index: 1, pttl: -1 }
    );
    // The plain form (a first attempt) tells only which member is busy, and what it took
    // (a, to be undone by the caller).
    let r = multi::acquire(&order, 10_000, "r3", 2_000).unwrap();
    assert_eq!(
        multi::decode_acquire(&node.run(&r).await).unwrap(),
        AcquireReply::PartlyBusy {
            index: 1,
            taken: true
        }
    );
    assert_eq!(node.cmd::<String>(&["GET", "a"]).await, "tok");
}
