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

    let release = multi::release(&order, 10_000, PUBLISH).unwrap();
    assert_eq!(
        multi::decode_release(&node.run(&release).await, 2).unwrap(),
        [OwnershipReply::Done, OwnershipReply::Done]
    );
    let channels: Vec<String> = rec.take().await.into_iter().map(|(c, _)| c).collect();
    assert_eq!(
        channels,
        [
            "redisson_lock__channel:{acct:1}",
            "redisson_lock__channel:{acct:2}"
        ]
    );
    assert_eq!(
        multi::decode_release(&node.run(&release).await, 2).unwrap(),
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
        .eval(&multi::acquire(&sorted(&members), 1_000, "r", 2_000).unwrap())
        .await
        .unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
    assert_eq!(node.keys().await, ["b"]);
    // Releasing a set whose second member is application data releases nothing.
    node.cmd::<()>(&["SET", "a", "tok"]).await;
    let e = node
        .eval(&multi::release(&sorted(&members), 1_000, PUBLISH).unwrap())
        .await
        .unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
    assert_eq!(node.cmd::<String>(&["GET", "a"]).await, "tok");
}
