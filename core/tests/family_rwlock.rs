//! Read/write lock scripts on a real redis-server, through a plain client: readers share with
//! per-hold timeout keys, writers exclude, a dead reader's hold expires while others keep
//! theirs, the write-to-read path, the refused upgrade, undo and the messages.

mod family;

use family::{Node, Recorder};
use redlatch::protocol::family::rwlock::{self, AcquireReply, ReleaseReply};
use redlatch::protocol::family::{keys as fk, PUBLISH};
use redlatch::protocol::reply::{self, OwnershipReply};
use redlatch_fleet::RedisServer;
use std::time::Duration;

async fn read(node: &Node, owner: &str, lease: u64, req: &str) -> AcquireReply {
    rwlock::decode_acquire(
        &node
            .run(&rwlock::read_acquire("rw", owner, lease, req, 2_000))
            .await,
    )
    .unwrap()
}

async fn write(node: &Node, owner: &str, lease: u64, req: &str) -> AcquireReply {
    let r = rwlock::write_acquire("rw", owner, lease, false, req, 2_000);
    rwlock::decode_acquire(&node.run(&r).await).unwrap()
}

async fn read_release(node: &Node, owner: &str, req: &str) -> ReleaseReply {
    let r = rwlock::read_release("rw", owner, PUBLISH, req, 2_000, None);
    rwlock::decode_release(&node.run(&r).await).unwrap()
}

async fn write_release(node: &Node, owner: &str, req: &str) -> ReleaseReply {
    let r = rwlock::write_release("rw", owner, 10_000, PUBLISH, req, 2_000, None);
    rwlock::decode_release(&node.run(&r).await).unwrap()
}

fn acquired(holds: u64) -> AcquireReply {
    AcquireReply::Acquired { fence: 0, holds }
}

fn released(r: OwnershipReply) -> ReleaseReply {
    ReleaseReply::Released(r)
}

#[tokio::test]
async fn readers_share_with_one_timeout_key_per_hold_and_writers_wait() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    assert_eq!(read(&node, "a:1", 10_000, "r1").await, acquired(1));
    assert_eq!(read(&node, "b:1", 10_000, "r2").await, acquired(1));
    assert_eq!(read(&node, "a:1", 10_000, "r3").await, acquired(2));
    let hash = node.hash("rw").await;
    assert_eq!(hash.get("mode").map(String::as_str), Some("read"));
    assert_eq!(hash.get("a:1").map(String::as_str), Some("2"));
    assert_eq!(hash.get("b:1").map(String::as_str), Some("1"));
    let mut expected = vec![
        "rw".to_owned(),
        fk::rw_timeout_key("rw", "a:1", 1),
        fk::rw_timeout_key("rw", "a:1", 2),
        fk::rw_timeout_key("rw", "b:1", 1),
    ];
    expected.sort();
    let keys: Vec<String> = node
        .keys()
        .await
        .into_iter()
        .filter(|k| !k.starts_with("redlatch_"))
        .collect();
    assert_eq!(keys, expected);
    assert_eq!(
        node.cmd::<String>(&["GET", &fk::rw_timeout_key("rw", "a:1", 2)])
            .await,
        "1"
    );
    assert!(node.pttl(&fk::rw_timeout_key("rw", "b:1", 1)).await > 9_000);
    assert!(matches!(write(&node, "c:1", 10_000, "w1").await, AcquireReply::Busy { pttl } if pttl > 9_000));

    assert_eq!(
        read_release(&node, "a:1", "x1").await,
        released(OwnershipReply::StillHeld)
    );
    assert!(
        !node.keys().await.contains(&fk::rw_timeout_key("rw", "a:1", 2)),
        "newest hold's key goes"
    );
    assert_eq!(
        read_release(&node, "a:1", "x2").await,
        released(OwnershipReply::Done)
    );
    assert_eq!(
        read_release(&node, "a:1", "x3").await,
        released(OwnershipReply::Taken)
    );
    assert_eq!(
        read_release(&node, "b:1", "x4").await,
        released(OwnershipReply::HandedOff)
    );
    assert_eq!(node.cmd::<i64>(&["EXISTS", "rw"]).await, 0);
    assert_eq!(
        rec.take().await,
        [(fk::rw_channel("rw"), "0".to_owned())],
        "a read release publishes 0 when the lock goes"
    );
}

#[tokio::test]
async fn a_dead_readers_hold_expires_while_other_readers_keep_theirs() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    assert_eq!(read(&node, "dead:1", 300, "r1").await, acquired(1));
    assert_eq!(read(&node, "live:1", 10_000, "r2").await, acquired(1));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        node.cmd::<i64>(&["EXISTS", &fk::rw_timeout_key("rw", "dead:1", 1)])
            .await,
        0
    );
    // The live reader still holds: a writer waits, the live reader renews.
    assert!(matches!(
        write(&node, "w:1", 10_000, "w1").await,
        AcquireReply::Busy { .. }
    ));
    let renew = rwlock::read_extend("rw", "live:1", 20_000);
    assert_eq!(
        reply::decode_extend(&node.run(&renew).await).unwrap(),
        OwnershipReply::Done
    );
    assert!(node.pttl(&fk::rw_timeout_key("rw", "live:1", 1)).await > 19_000);
    let dead = rwlock::read_extend("rw", "nobody:1", 20_000);
    assert_eq!(
        reply::decode_extend(&node.run(&dead).await).unwrap(),
        OwnershipReply::Taken
    );
    // When the live reader leaves, the dead reader's leftover field does not keep the lock.
    assert_eq!(
        read_release(&node, "live:1", "x").await,
        released(OwnershipReply::Done)
    );
    assert_eq!(node.cmd::<i64>(&["EXISTS", "rw"]).await, 0);
    assert_eq!(write(&node, "w:1", 10_000, "w2").await, acquired(1));
}

#[tokio::test]
async fn writer_excludes_may_read_and_downgrades_quietly() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    assert_eq!(write(&node, "w:1", 5_000, "w1").await, acquired(1));
    assert_eq!(
        node.hash("rw").await.get("w:1:write").map(String::as_str),
        Some("1")
    );
    assert!(matches!(
        read(&node, "r:1", 5_000, "r1").await,
        AcquireReply::Busy { .. }
    ));
    assert!(matches!(
        write(&node, "x:1", 5_000, "w2").await,
        AcquireReply::Busy { .. }
    ));
    // Re-entry adds the lease to what is left (Redisson).
    assert_eq!(write(&node, "w:1", 5_000, "w3").await, acquired(2));
    assert!(node.pttl("rw").await > 9_000);
    // The writer's owner may read; releasing the write holds leaves a read lock, unannounced.
    assert_eq!(read(&node, "w:1", 5_000, "r2").await, acquired(1));
    assert_eq!(
        write_release(&node, "w:1", "x1").await,
        released(OwnershipReply::StillHeld)
    );
    assert_eq!(
        write_release(&node, "w:1", "x2").await,
        released(OwnershipReply::Done)
    );
    assert_eq!(
        node.hash("rw").await.get("mode").map(String::as_str),
        Some("read")
    );
    assert!(rec.take().await.is_empty());
    assert_eq!(
        read(&node, "r:1", 5_000, "r3").await,
        acquired(1),
        "other readers join now"
    );
    read_release(&node, "w:1", "x3").await;
    assert_eq!(
        read_release(&node, "r:1", "x4").await,
        released(OwnershipReply::HandedOff)
    );
    // A full write release publishes 1: every waiter wakes.
    write(&node, "w:1", 5_000, "w4").await;
    assert_eq!(
        write_release(&node, "w:1", "x5").await,
        released(OwnershipReply::HandedOff)
    );
    let msgs = rec.take().await;
    assert_eq!(
        msgs.last(),
        Some(&(fk::rw_channel("rw"), "1".to_owned())),
        "{msgs:?}"
    );
}

#[tokio::test]
async fn upgrade_is_refused_undo_is_latch_proven_and_errors_surface() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    assert_eq!(read(&node, "a:1", 5_000, "r1").await, acquired(1));
    let before = node.hash("rw").await;
    assert_eq!(
        write(&node, "a:1", 5_000, "w1").await,
        AcquireReply::UpgradeRefused
    );
    assert_eq!(node.hash("rw").await, before, "a refused upgrade changes nothing");
    // Undo of an acquire that applied (r2), then of one that never did (r9).
    assert_eq!(read(&node, "a:1", 5_000, "r2").await, acquired(2));
    let undo = rwlock::read_release("rw", "a:1", PUBLISH, "u1", 2_000, Some("r2"));
    assert_eq!(
        rwlock::decode_release(&node.run(&undo).await).unwrap(),
        released(OwnershipReply::StillHeld)
    );
    let undo = rwlock::read_release("rw", "a:1", PUBLISH, "u2", 2_000, Some("r9"));
    assert_eq!(
        rwlock::decode_release(&node.run(&undo).await).unwrap(),
        ReleaseReply::NothingToUndo
    );
    assert_eq!(node.hash("rw").await.get("a:1").map(String::as_str), Some("1"));
    // Releasing a lock that is gone still publishes (as Redisson), and says so.
    node.cmd::<i64>(&["DEL", "rw"]).await;
    assert_eq!(
        write_release(&node, "a:1", "x").await,
        released(OwnershipReply::Absent)
    );
    node.cmd::<()>(&["SET", "rw", "app data"]).await;
    // Acquire latches that an undo would consume: an error must leave them too.
    let latches = ["q6", "q7"].map(|id| redlatch::protocol::keys::acquire_latch("rw", id));
    for latch in &latches {
        node.cmd::<()>(&["SET", latch, "1"]).await;
    }
    for r in [
        rwlock::read_acquire("rw", "a:1", 5_000, "q1", 2_000),
        rwlock::write_acquire("rw", "a:1", 5_000, false, "q2", 2_000),
        rwlock::read_release("rw", "a:1", PUBLISH, "q3", 2_000, None),
        rwlock::write_release("rw", "a:1", 5_000, PUBLISH, "q4", 2_000, None),
        rwlock::read_extend("rw", "a:1", 5_000),
        rwlock::read_release("rw", "a:1", PUBLISH, "q5", 2_000, Some("q6")),
        rwlock::write_release("rw", "a:1", 5_000, PUBLISH, "q5", 2_000, Some("q7")),
    ] {
        let e = node.eval(&r).await.unwrap_err();
        assert!(e.message().contains("WRONGTYPE"), "{}: {e}", r.script.name());
        let left: i64 = node.cmd(&["EXISTS", &latches[0], &latches[1]]).await;
        assert_eq!(left, 2, "{} consumed a latch before failing", r.script.name());
    }
    assert_eq!(node.cmd::<String>(&["GET", "rw"]).await, "app data");
}
