//! Read/write lock wire compatibility with Redisson 4.7.0's RedissonReadLock/WriteLock, at the
//! protocol level: our scripts run through a plain client next to Java readers and writers.

mod common;
#[path = "../../../core/tests/family/mod.rs"]
mod family;

use common::{answer, answer_timed, cli_hash, cli_keys, cli_pttl, world, LONG_LEASE_MS, PROMPT};
use family::{Node, Recorder};
use redlatch::protocol::family::rwlock::{self, AcquireReply, ReleaseReply};
use redlatch::protocol::family::{keys as fk, PUBLISH};
use redlatch::protocol::reply::OwnershipReply;
use std::time::{Duration, Instant};

const OURS: &str = "33333333-3333-4333-8333-333333333333:1";

async fn our_read(node: &Node, name: &str, lease: u64, req: &str) -> AcquireReply {
    rwlock::decode_acquire(
        &node
            .run(&rwlock::read_acquire(name, OURS, lease, req, 2_000))
            .await,
    )
    .unwrap()
}

async fn our_write(node: &Node, name: &str, req: &str) -> AcquireReply {
    let r = rwlock::write_acquire(name, OURS, LONG_LEASE_MS as u64, false, req, 2_000);
    rwlock::decode_acquire(&node.run(&r).await).unwrap()
}

async fn our_read_release(node: &Node, name: &str, req: &str) -> ReleaseReply {
    let r = rwlock::read_release(name, OURS, PUBLISH, req, 2_000, None);
    rwlock::decode_release(&node.run(&r).await).unwrap()
}

async fn our_write_release(node: &Node, name: &str, req: &str) -> ReleaseReply {
    let r = rwlock::write_release(name, OURS, LONG_LEASE_MS as u64, PUBLISH, req, 2_000, None);
    rwlock::decode_release(&node.run(&r).await).unwrap()
}

fn granted(r: AcquireReply) -> bool {
    matches!(r, AcquireReply::Acquired { .. })
}

#[tokio::test(flavor = "multi_thread")]
async fn readers_share_across_languages_and_writers_exclude() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    assert_eq!(
        answer(java.lock("read", "rw", 1, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    assert!(
        granted(our_read(&node, "rw", 10_000, "r1").await),
        "readers share"
    );
    // One layout, whoever wrote it: the mode, a field per reader, a timeout key per read hold.
    let mut expected = vec![
        "rw".to_owned(),
        fk::rw_timeout_key("rw", &java.owner(1), 1),
        fk::rw_timeout_key("rw", OURS, 1),
    ];
    expected.sort();
    assert_eq!(cli_keys(&w.server), expected);
    let mut fields = vec![
        (java.owner(1), "1".to_owned()),
        (OURS.to_owned(), "1".to_owned()),
        ("mode".to_owned(), "read".to_owned()),
    ];
    fields.sort();
    assert_eq!(cli_hash(&w.server, "rw"), fields);
    for key in &expected[1..] {
        // The 10 s lease (not a 30 s watchdog default), minus however long a loaded machine took.
        assert!((1..=10_000).contains(&cli_pttl(&w.server, key)), "{key}");
    }
    // Writers on either side wait for both readers.
    assert_eq!(
        answer(java.lock("write", "rw", 2, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    let other = rwlock::write_acquire(
        "rw",
        "44444444-4444-4444-8444-444444444444:1",
        10_000,
        false,
        "w1",
        2_000,
    );
    assert!(matches!(
        rwlock::decode_acquire(&node.run(&other).await).unwrap(),
        AcquireReply::Busy { .. }
    ));
    // Our reader asking to write is refused at once (Redisson would wait for itself forever).
    assert!(matches!(
        our_write(&node, "rw", "w2").await,
        AcquireReply::UpgradeRefused
    ));
    java.unlock("read", "rw", 1).unwrap();
    assert!(matches!(
        our_read_release(&node, "rw", "x1").await,
        ReleaseReply::Released(OwnershipReply::Done)
    ));
    assert!(cli_keys(&w.server).is_empty());

    // A Java writer excludes our readers and writers; its owner's read re-entry is Java's own.
    assert_eq!(
        answer(java.lock("write", "rw", 2, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    assert_eq!(
        cli_hash(&w.server, "rw"),
        [
            (format!("{}:write", java.owner(2)), "1".to_owned()),
            ("mode".to_owned(), "write".to_owned())
        ]
    );
    assert!(matches!(
        our_read(&node, "rw", 10_000, "r2").await,
        AcquireReply::Busy { .. }
    ));
    assert!(matches!(
        our_write(&node, "rw", "w3").await,
        AcquireReply::Busy { .. }
    ));
    java.unlock("write", "rw", 2).unwrap();
    assert!(granted(our_write(&node, "rw", "w4").await));
    assert_eq!(
        answer(java.lock("read", "rw", 3, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    assert_eq!(
        answer(java.lock("write", "rw", 3, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    assert!(matches!(
        our_write_release(&node, "rw", "x2").await,
        ReleaseReply::Released(OwnershipReply::Done)
    ));
    assert!(cli_keys(&w.server).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn releases_wake_the_other_side_and_a_dead_java_readers_hold_expires_alone() {
    let w = world();
    let java = &w.java;
    let node = Node::connect(&w.server.url()).await;
    let rec = Recorder::start(&w.server.url()).await;
    // Our writer holds; a Java reader and a Java writer wait. Our release publishes 1: both
    // Redisson waiters wake (the reader gets it, the writer keeps waiting behind the reader).
    assert!(granted(our_write(&node, "wk", "w1").await));
    let reader = java.lock("read", "wk", 1, 60_000, LONG_LEASE_MS);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(reader.try_answer().is_none());
    let released = Instant::now();
    assert!(matches!(
        our_write_release(&node, "wk", "x1").await,
        ReleaseReply::Released(OwnershipReply::HandedOff)
    ));
    let (got, took) = answer_timed(reader, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java reader woken after {took:?}");
    assert!(rec.take().await.contains(&(fk::rw_channel("wk"), "1".to_owned())));
    // Java's read release publishes 0 on the same channel, which our waiters listen to.
    java.unlock("read", "wk", 1).unwrap();
    assert_eq!(
        rec.wait_for(&fk::rw_channel("wk"), PROMPT).await.as_deref(),
        Some("0")
    );

    // A Java reader dies (short lease, never released) while ours lives on: its hold expires on
    // its own, ours stays, and when ours goes the lock goes with it.
    assert_eq!(
        answer(java.lock("read", "wk", 2, 0, 400), PROMPT).await.unwrap(),
        "true"
    );
    assert!(granted(our_read(&node, "wk", 10_000, "r1").await));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!cli_keys(&w.server).contains(&fk::rw_timeout_key("wk", &java.owner(2), 1)));
    assert!(cli_keys(&w.server).contains(&fk::rw_timeout_key("wk", OURS, 1)));
    assert_eq!(
        answer(java.lock("write", "wk", 3, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    assert!(matches!(
        our_read_release(&node, "wk", "x2").await,
        ReleaseReply::Released(_)
    ));
    assert!(cli_keys(&w.server).is_empty(), "{:?}", cli_keys(&w.server));
    assert_eq!(
        answer(java.lock("write", "wk", 3, 0, 10_000), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    java.unlock("write", "wk", 3).unwrap();
}
