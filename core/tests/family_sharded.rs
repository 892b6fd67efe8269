//! Every family script that publishes does so with the command it is given: with `spublish`
//! (what Redisson uses on Redis Cluster 7+) its messages reach SSUBSCRIBE listeners, which a
//! PUBLISH never reaches. Redis 7 serves sharded pub/sub on a single node too, so one server
//! shows it for every kind: semaphore, permits, latch, multi-lock, read/write and fair locks.

mod family;

use family::{now_ms, Node, ShardedSubscriber};
use redlatch::protocol::family::fair::{self, Acquire};
use redlatch::protocol::family::multi::{self, Member};
use redlatch::protocol::family::{keys as fk, latch, permits, rwlock, semaphore, PUBLISH, SPUBLISH};
use redlatch::protocol::keys::lock_channel;
use redlatch::protocol::request::Holder;
use redlatch_fleet::RedisServer;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(5);

fn fair_attempt<'a>(owner: &'a str, request_id: &'a str) -> Acquire<'a> {
    Acquire {
        name: "f",
        owner,
        lease_ms: 30_000,
        wait_slot_ms: 5_000,
        now_ms: now_ms(),
        queue: true,
        fenced: false,
        request_id,
        latch_ttl_ms: 2_000,
    }
}

/// The next sharded message is `payload` on `channel`.
fn expect(sub: &mut ShardedSubscriber, channel: &str, payload: &str) {
    assert_eq!(sub.next(WAIT), Some((channel.to_owned(), payload.to_owned())));
}

#[tokio::test(flavor = "multi_thread")]
async fn spublish_given_reaches_sharded_listeners_of_every_kind() {
    let server = RedisServer::start().unwrap();
    let node = Node::connect(&server.url()).await;
    let channels = [
        fk::semaphore_channel("s"),
        fk::semaphore_channel("p"),
        fk::latch_channel("l"),
        lock_channel("m1"),
        lock_channel("m2"),
        fk::rw_channel("rw"),
        fk::fair_waiter_channel("f", "b:1"),
    ];
    let mut sub = ShardedSubscriber::start(&server.url(), &channels);

    // Semaphore: the count set, then a release's new count; a PUBLISH release in between
    // reaches no sharded listener (its reply counts 0 receivers, the SPUBLISH one 1).
    node.run(&semaphore::try_set_permits("s", 1, None, SPUBLISH).unwrap())
        .await;
    expect(&mut sub, &channels[0], "1");
    let plain = semaphore::release("s", 1, PUBLISH).unwrap();
    assert_eq!(
        semaphore::decode_release(&node.run(&plain).await).unwrap(),
        (2, 0)
    );
    let sharded = semaphore::release("s", 1, SPUBLISH).unwrap();
    assert_eq!(
        semaphore::decode_release(&node.run(&sharded).await).unwrap(),
        (3, 1)
    );
    expect(&mut sub, &channels[0], "3");

    // Permits: the count set, an expired permit reclaimed, a permit released by id.
    node.run(&semaphore::try_set_permits("p", 1, None, SPUBLISH).unwrap())
        .await;
    expect(&mut sub, &channels[1], "1");
    let ids = permits::new_permit_ids(1).unwrap();
    let now = now_ms();
    node.run(&permits::acquire("p", &ids, now + 50, now, SPUBLISH).unwrap())
        .await;
    tokio::time::sleep(Duration::from_millis(80)).await;
    node.run(&permits::available("p", now_ms(), SPUBLISH)).await;
    expect(&mut sub, &channels[1], "1");
    let now = now_ms();
    node.run(&permits::acquire("p", &ids, permits::NO_EXPIRY, now, SPUBLISH).unwrap())
        .await;
    node.run(&permits::release("p", &ids[0], now_ms(), SPUBLISH).unwrap())
        .await;
    expect(&mut sub, &channels[1], "1");

    // Latch: set ('1'), then open ('0').
    node.run(&latch::try_set_count("l", 1, SPUBLISH).unwrap()).await;
    expect(&mut sub, &channels[2], "1");
    node.run(&latch::count_down("l", SPUBLISH)).await;
    expect(&mut sub, &channels[2], "0");

    // Multi-lock: each member's release message on its own channel.
    let members: Vec<Member> = ["m1", "m2"]
        .iter()
        .map(|n| Member {
            name: (*n).to_owned(),
            holder: Some(Holder::Lease { token: "t".into() }),
        })
        .collect();
    let sorted: Vec<&Member> = members.iter().collect();
    node.run(&multi::acquire(&sorted, 10_000, "mr", 2_000).unwrap())
        .await;
    node.run(
        &multi::release(
            &sorted
                .iter()
                .map(|member| multi::Releasing {
                    member,
                    request_id: "rel",
                    latch_ttl_ms: 2_000,
                    sent_before: false,
                })
                .collect::<Vec<_>>(),
            10_000,
            SPUBLISH,
        )
        .unwrap(),
    )
    .await;
    expect(&mut sub, &channels[3], "0");
    expect(&mut sub, &channels[4], "0");

    // Read/write lock: a write release wakes everyone with '1'.
    node.run(&rwlock::write_acquire("rw", "a:1", 10_000, false, "wa", 2_000))
        .await;
    node.run(&rwlock::write_release(
        "rw", "a:1", 10_000, SPUBLISH, "wr", 2_000, None,
    ))
    .await;
    expect(&mut sub, &channels[5], "1");

    // Fair lock: the release tells the queue head on its own channel.
    node.run(&fair::acquire(&fair_attempt("a:1", "fa"))).await;
    node.run(&fair::acquire(&fair_attempt("b:1", "fb"))).await;
    let release = fair::release("f", "a:1", 30_000, now_ms(), SPUBLISH, "fr", 2_000);
    node.run(&release).await;
    expect(&mut sub, &channels[6], "0");

    assert_eq!(
        sub.next(Duration::from_millis(200)),
        None,
        "no other sharded message"
    );
}
