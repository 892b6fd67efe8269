//! Permit-expirable semaphore scripts on a real redis-server, beyond the basic flow of
//! family_counters.rs: errors that leave every permit in place, the permit ZSET living as long
//! as the count, extends and releases of permits that are no longer held.

mod family;

use family::{now_ms, unhex, Node, Recorder};
use redlatch::protocol::family::permits::{self, ReleaseReply};
use redlatch::protocol::family::semaphore;
use redlatch::protocol::family::{keys as fk, PUBLISH};
use redlatch_fleet::RedisServer;
use std::time::Duration;

/// Sets `name` to `count` permits and takes one permit per id, expiring `lease_ms` from now.
async fn take(node: &Node, name: &str, count: u64, ids: &[String], lease_ms: u64) {
    node.run(&semaphore::try_set_permits(name, count, None, PUBLISH).unwrap())
        .await;
    let now = now_ms();
    let r = permits::acquire(name, ids, now + lease_ms, now, PUBLISH).unwrap();
    assert_eq!(
        permits::decode_acquire(&node.run(&r).await).unwrap(),
        permits::AcquireReply::Acquired {
            left: (count - ids.len() as u64) as i64
        }
    );
}

/// Every permit script, on `name`, for permit `id`.
fn every_script(name: &str, id: &str) -> Vec<redlatch::protocol::request::Request> {
    let now = now_ms();
    let fresh = permits::new_permit_ids(1).unwrap();
    vec![
        permits::acquire(name, &fresh, now + 1_000, now, PUBLISH).unwrap(),
        permits::release(name, id, now, PUBLISH).unwrap(),
        permits::extend(name, id, now + 1_000, now, PUBLISH).unwrap(),
        permits::available(name, now, PUBLISH),
    ]
}

#[tokio::test]
async fn a_count_that_is_application_data_is_an_error_and_no_permit_moves() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let ids = permits::new_permit_ids(2).unwrap();
    take(&node, "p", 2, &ids, 100).await;
    // Both leases end (so every script would reclaim them), then the count key is overwritten
    // with data of another type.
    tokio::time::sleep(Duration::from_millis(150)).await;
    node.cmd::<()>(&["DEL", "p"]).await;
    node.cmd::<i64>(&["HSET", "p", "field", "1"]).await;
    let before = node.zset(&fk::permit_timeouts("p")).await;
    assert_eq!(before.len(), 2);
    let rec = Recorder::start(&server.url()).await;
    for r in every_script("p", &ids[0]) {
        let e = node.eval(&r).await.unwrap_err();
        assert!(e.message().contains("WRONGTYPE"), "{}: {e}", r.script.name());
        assert_eq!(
            node.zset(&fk::permit_timeouts("p")).await,
            before,
            "{} moved a permit before failing",
            r.script.name()
        );
    }
    assert_eq!(node.hash("p").await.len(), 1);
    assert!(rec.take().await.is_empty(), "nothing was published");
}

#[tokio::test]
async fn a_permit_set_that_is_application_data_is_an_error_and_the_count_stays() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    node.run(&semaphore::try_set_permits("q", 3, None, PUBLISH).unwrap())
        .await;
    node.cmd::<()>(&["SET", &fk::permit_timeouts("q"), "data"]).await;
    let id = permits::new_permit_ids(1).unwrap().remove(0);
    for r in every_script("q", &id) {
        let e = node.eval(&r).await.unwrap_err();
        assert!(e.message().contains("WRONGTYPE"), "{}: {e}", r.script.name());
    }
    assert_eq!(node.cmd::<String>(&["GET", "q"]).await, "3");
    assert_eq!(
        node.cmd::<String>(&["GET", &fk::permit_timeouts("q")]).await,
        "data"
    );
}

#[tokio::test]
async fn the_permit_set_expires_with_the_count() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let set = semaphore::try_set_permits("t", 2, Some(60_000), PUBLISH).unwrap();
    node.run(&set).await;
    let now = now_ms();
    let ids = permits::new_permit_ids(1).unwrap();
    let r = permits::acquire("t", &ids, permits::NO_EXPIRY, now, PUBLISH).unwrap();
    node.run(&r).await;
    // Redisson copies the count's TTL to the permit ZSET, so neither outlives the other by
    // more than the copy's rounding: the script's PTTL and PEXPIRE read the clock at
    // different moments, up to a millisecond apart (seen under load).
    let (count_ttl, set_ttl) = (node.pttl("t").await, node.pttl(&fk::permit_timeouts("t")).await);
    assert!(count_ttl > 50_000, "count PTTL {count_ttl}");
    assert!(
        set_ttl > 50_000 && set_ttl <= count_ttl + 1,
        "permit set PTTL {set_ttl}, count PTTL {count_ttl}"
    );
    // Without a TTL on the count, the permit set has none either.
    take(&node, "u", 1, &permits::new_permit_ids(1).unwrap(), 60_000).await;
    assert_eq!(node.pttl(&fk::permit_timeouts("u")).await, -1);
}

#[tokio::test]
async fn permits_no_longer_held_neither_extend_nor_release_and_come_back_once() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let ids = permits::new_permit_ids(1).unwrap();
    take(&node, "e", 1, &ids, 100).await;
    let rec = Recorder::start(&server.url()).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    // The lease ended: extend finds the permit gone, gives it back to the count, says so.
    let now = now_ms();
    let extend = permits::extend("e", &ids[0], now + 60_000, now, PUBLISH).unwrap();
    assert!(!permits::decode_extend(&node.run(&extend).await).unwrap());
    assert_eq!(node.cmd::<String>(&["GET", "e"]).await, "1");
    assert!(node.zset(&fk::permit_timeouts("e")).await.is_empty());
    let channel = fk::semaphore_channel("e");
    assert_eq!(rec.take().await, [(channel.clone(), "1".to_owned())]);
    // Neither the reclaimed permit nor an id never issued can be released: nothing moves.
    for id in [ids[0].clone(), permits::new_permit_ids(1).unwrap().remove(0)] {
        let r = permits::release("e", &id, now_ms(), PUBLISH).unwrap();
        assert_eq!(
            permits::decode_release(&node.run(&r).await).unwrap(),
            ReleaseReply::Unknown
        );
    }
    assert_eq!(node.cmd::<String>(&["GET", "e"]).await, "1");
    assert!(rec.take().await.is_empty(), "an unknown id publishes nothing");
    // A semaphore never set: nothing available, nothing held, nothing created.
    let avail = permits::available("never", now_ms(), PUBLISH);
    assert_eq!(
        permits::decode_available(&node.run(&avail).await).unwrap(),
        (0, 0)
    );
    assert_eq!(node.keys().await, ["e"]);
    // Upper-case hex is the same permit (Redisson's hex decoder takes either case).
    let ids = permits::new_permit_ids(1).unwrap();
    take(&node, "c", 1, &ids, 60_000).await;
    assert_eq!(node.zset(&fk::permit_timeouts("c")).await[0].0, unhex(&ids[0]));
    let r = permits::release("c", &ids[0].to_uppercase(), now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_release(&node.run(&r).await).unwrap(),
        ReleaseReply::Released
    );
}
