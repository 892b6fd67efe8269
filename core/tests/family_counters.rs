//! Semaphore, permit-expirable semaphore and count-down latch scripts on a real redis-server,
//! through a plain client: Redisson's keys, values and messages, lazy reclaim of expired
//! permits, permit ids stored as raw bytes, and errors that are not masked.

mod family;

use family::{now_ms, unhex, Node, Recorder};
use redlatch::protocol::family::latch::{self, CountDownReply};
use redlatch::protocol::family::permits::{self, ReleaseReply, NO_EXPIRY};
use redlatch::protocol::family::semaphore::{self, AcquireReply};
use redlatch::protocol::family::{keys as fk, PUBLISH};
use redlatch_fleet::RedisServer;
use std::time::Duration;

#[tokio::test]
async fn semaphore_counts_and_publishes_like_redisson() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let acquire = |n| semaphore::acquire("s", n).unwrap();
    assert_eq!(
        semaphore::decode_acquire(&node.run(&acquire(1)).await).unwrap(),
        AcquireReply::NotEnough { available: None }
    );
    let set = semaphore::try_set_permits("s", 2, None, PUBLISH).unwrap();
    assert!(semaphore::decode_try_set(&node.run(&set).await).unwrap());
    assert!(!semaphore::decode_try_set(&node.run(&set).await).unwrap());
    assert_eq!(node.cmd::<String>(&["GET", "s"]).await, "2");
    assert_eq!(node.pttl("s").await, -1);
    assert_eq!(
        semaphore::decode_acquire(&node.run(&acquire(1)).await).unwrap(),
        AcquireReply::Acquired { left: 1 }
    );
    assert_eq!(
        semaphore::decode_acquire(&node.run(&acquire(2)).await).unwrap(),
        AcquireReply::NotEnough { available: Some(1) }
    );
    let release = semaphore::release("s", 1, PUBLISH).unwrap();
    assert_eq!(
        semaphore::decode_release(&node.run(&release).await).unwrap(),
        (2, 1)
    );
    let avail = semaphore::available("s");
    assert_eq!(semaphore::decode_available(&node.run(&avail).await).unwrap(), 2);
    let channel = fk::semaphore_channel("s");
    assert_eq!(
        rec.take().await,
        [(channel.clone(), "2".to_owned()), (channel, "2".to_owned())],
        "trySetPermits and release publish the count"
    );
    let with_ttl = semaphore::try_set_permits("t", 1, Some(5_000), PUBLISH).unwrap();
    node.run(&with_ttl).await;
    assert!(node.pttl("t").await > 4_000);
    node.cmd::<i64>(&["HSET", "h", "f", "1"]).await;
    for r in [
        semaphore::acquire("h", 1).unwrap(),
        semaphore::release("h", 1, PUBLISH).unwrap(),
    ] {
        assert!(node.eval(&r).await.unwrap_err().message().contains("WRONGTYPE"));
    }
    assert_eq!(node.hash("h").await.len(), 1);
}

#[tokio::test]
async fn permits_carry_redisson_ids_and_come_back_when_their_lease_ends() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let set = semaphore::try_set_permits("p", 1, None, PUBLISH).unwrap();
    node.run(&set).await;
    let now = now_ms();
    let first = permits::new_permit_ids(1).unwrap();
    let r = permits::acquire("p", &first, permits::expiry(now, Some(300)), now, PUBLISH).unwrap();
    assert_eq!(
        permits::decode_acquire(&node.run(&r).await).unwrap(),
        permits::AcquireReply::Acquired { left: 0 }
    );
    // The id is stored as its 16 raw bytes, scored with its expiry.
    let held = node.zset(&fk::permit_timeouts("p")).await;
    assert_eq!(held, vec![(unhex(&first[0]), (now + 300) as f64)]);
    let second = permits::new_permit_ids(1).unwrap();
    let r = permits::acquire("p", &second, NO_EXPIRY, now, PUBLISH).unwrap();
    assert_eq!(
        permits::decode_acquire(&node.run(&r).await).unwrap(),
        permits::AcquireReply::NotEnough {
            earliest_expiry: Some(now + 300)
        }
    );
    rec.take().await;
    // The first holder dies: once its lease has ended, the next acquire reclaims the permit.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let r = permits::acquire("p", &second, NO_EXPIRY, now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_acquire(&node.run(&r).await).unwrap(),
        permits::AcquireReply::Acquired { left: 0 }
    );
    assert_eq!(rec.take().await, [(fk::semaphore_channel("p"), "1".to_owned())]);
    assert_eq!(
        node.zset(&fk::permit_timeouts("p")).await,
        vec![(unhex(&second[0]), NO_EXPIRY as f64)]
    );
    let third = permits::new_permit_ids(1).unwrap();
    let r = permits::acquire("p", &third, NO_EXPIRY, now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_acquire(&node.run(&r).await).unwrap(),
        permits::AcquireReply::NotEnough {
            earliest_expiry: None
        },
        "a permit without lease never comes back by itself"
    );
    let release = |id: &str| permits::release("p", id, now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_release(&node.run(&release(&first[0])).await).unwrap(),
        ReleaseReply::Unknown,
        "a reclaimed permit cannot be released twice"
    );
    assert_eq!(
        permits::decode_release(&node.run(&release(&second[0])).await).unwrap(),
        ReleaseReply::Released
    );
    assert_eq!(rec.take().await, [(fk::semaphore_channel("p"), "1".to_owned())]);
    let avail = permits::available("p", now_ms(), PUBLISH);
    assert_eq!(
        permits::decode_available(&node.run(&avail).await).unwrap(),
        (1, 0)
    );
}

#[tokio::test]
async fn permit_leases_extend_and_late_releases_say_so() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    node.run(&semaphore::try_set_permits("q", 2, None, PUBLISH).unwrap())
        .await;
    let now = now_ms();
    let ids = permits::new_permit_ids(2).unwrap();
    let r = permits::acquire("q", &ids, now + 200, now, PUBLISH).unwrap();
    node.run(&r).await;
    let extend = permits::extend("q", &ids[0], now + 60_000, now, PUBLISH).unwrap();
    assert!(permits::decode_extend(&node.run(&extend).await).unwrap());
    tokio::time::sleep(Duration::from_millis(250)).await;
    // ids[1] expired but nobody reclaimed it yet: its release gives it back and says it was late.
    let late = permits::release("q", &ids[1], now_ms(), PUBLISH).unwrap();
    assert_eq!(
        permits::decode_release(&node.run(&late).await).unwrap(),
        ReleaseReply::Expired
    );
    let avail = permits::available("q", now_ms(), PUBLISH);
    assert_eq!(
        permits::decode_available(&node.run(&avail).await).unwrap(),
        (1, 1)
    );
    assert!(
        permits::release("q", "not-an-id", now, PUBLISH).is_err(),
        "refused before Redis"
    );
}

#[tokio::test]
async fn latch_opens_at_zero_with_redisson_messages() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    let down = latch::count_down("l", PUBLISH);
    assert_eq!(
        latch::decode_count_down(&node.run(&down).await).unwrap(),
        CountDownReply::NotSet
    );
    assert!(
        node.keys().await.is_empty(),
        "counting down an unset latch leaves nothing"
    );
    let set = latch::try_set_count("l", 2, PUBLISH).unwrap();
    assert!(latch::decode_try_set(&node.run(&set).await).unwrap());
    assert!(!latch::decode_try_set(&node.run(&set).await).unwrap());
    assert_eq!(
        latch::decode_count(&node.run(&latch::count("l")).await).unwrap(),
        2
    );
    assert_eq!(
        latch::decode_count_down(&node.run(&down).await).unwrap(),
        CountDownReply::Left(1)
    );
    assert_eq!(
        latch::decode_count_down(&node.run(&down).await).unwrap(),
        CountDownReply::Left(0)
    );
    assert!(node.keys().await.is_empty());
    assert_eq!(
        latch::decode_count(&node.run(&latch::count("l")).await).unwrap(),
        0
    );
    let channel = "redisson_countdownlatch__channel__{l}".to_owned();
    assert_eq!(
        rec.take().await,
        [(channel.clone(), "1".to_owned()), (channel, "0".to_owned())]
    );
    node.cmd::<i64>(&["LPUSH", "x", "1"]).await;
    let e = node.eval(&latch::count_down("x", PUBLISH)).await.unwrap_err();
    assert!(e.message().contains("WRONGTYPE"), "{e}");
}

#[tokio::test]
async fn unset_semaphores_create_nothing_and_an_open_latch_stays_open_until_set_again() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let rec = Recorder::start(&server.url()).await;
    // Asking about or acquiring from a semaphore that was never set writes nothing.
    let avail = semaphore::available("none");
    assert_eq!(semaphore::decode_available(&node.run(&avail).await).unwrap(), 0);
    node.run(&semaphore::acquire("none", 1).unwrap()).await;
    assert!(node.keys().await.is_empty());
    // Zero permits: the semaphore exists with none available.
    let zero = semaphore::try_set_permits("z", 0, None, PUBLISH).unwrap();
    assert!(semaphore::decode_try_set(&node.run(&zero).await).unwrap());
    assert_eq!(
        semaphore::decode_acquire(&node.run(&semaphore::acquire("z", 1).unwrap()).await).unwrap(),
        AcquireReply::NotEnough { available: Some(0) }
    );
    // A release keeps the semaphore's TTL (INCRBY, as Redisson).
    node.run(&semaphore::try_set_permits("t", 1, Some(60_000), PUBLISH).unwrap())
        .await;
    node.run(&semaphore::release("t", 2, PUBLISH).unwrap()).await;
    assert_eq!(node.cmd::<String>(&["GET", "t"]).await, "3");
    assert!(node.pttl("t").await > 50_000);
    rec.take().await;

    // An opened latch is gone: counting down again changes and publishes nothing.
    node.run(&latch::try_set_count("l", 1, PUBLISH).unwrap()).await;
    node.run(&latch::count_down("l", PUBLISH)).await;
    let down = latch::count_down("l", PUBLISH);
    assert_eq!(
        latch::decode_count_down(&node.run(&down).await).unwrap(),
        CountDownReply::NotSet
    );
    assert_eq!(node.cmd::<i64>(&["EXISTS", "l"]).await, 0);
    let channel = fk::latch_channel("l");
    assert_eq!(
        rec.take().await,
        [
            (channel.clone(), "1".to_owned()),
            (channel.clone(), "0".to_owned())
        ]
    );
    // It can be set again: waiters re-arm on '1'.
    let again = latch::try_set_count("l", 3, PUBLISH).unwrap();
    assert!(latch::decode_try_set(&node.run(&again).await).unwrap());
    assert_eq!(
        latch::decode_count(&node.run(&latch::count("l")).await).unwrap(),
        3
    );
    assert_eq!(rec.take().await, [(channel, "1".to_owned())]);
}

#[tokio::test]
async fn an_undone_acquire_takes_nothing_whichever_reaches_redis_first() {
    // The undo of an abandoned acquire may reach Redis before the acquire itself (queued
    // behind a stall on another connection): it leaves the request's latch at 0, so the late
    // acquire takes nothing; after the acquire, it gives back once, however often repeated.
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    node.run(&semaphore::try_set_permits("u", 2, None, PUBLISH).unwrap())
        .await;
    let undo = |id| semaphore::undo("u", id, PUBLISH, 30_000);
    let acquire = |id| semaphore::acquire_once("u", 1, id, 30_000).unwrap();
    assert_eq!(
        semaphore::decode_undo(&node.run(&undo("early")).await).unwrap(),
        0
    );
    node.run(&acquire("early")).await;
    assert_eq!(
        node.cmd::<String>(&["GET", "u"]).await,
        "2",
        "the late acquire took nothing"
    );

    node.run(&acquire("late")).await;
    assert_eq!(node.cmd::<String>(&["GET", "u"]).await, "1");
    assert_eq!(semaphore::decode_undo(&node.run(&undo("late")).await).unwrap(), 1);
    assert_eq!(semaphore::decode_undo(&node.run(&undo("late")).await).unwrap(), 0);
    node.run(&acquire("late")).await;
    assert_eq!(
        node.cmd::<String>(&["GET", "u"]).await,
        "2",
        "given back once, taken no more"
    );
    assert!(node.pttl("redlatch_acquire_latch:{u}:early").await > 20_000);
}
