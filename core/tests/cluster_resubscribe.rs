//! Waiters on a Redis Cluster stay subscribed to their lock's shard channel when the slot
//! changes hands: a slot migration, a `CLUSTER FAILOVER` and a killed master. The server
//! drops a shard channel's subscribers when their slot leaves it (`SUNSUBSCRIBE` push), and
//! redis-rs forgets them then; a user trial of stop 43 saw `PUBSUB SHARDNUMSUB` at 0 on the
//! new master, with its waiters woken by their poll only.

mod common;

use common::within;
use redlatch::{Client, Guard};
use redlatch_fleet::RedisCluster;
use std::sync::Arc;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

/// The waiter's poll: longer than the time a test gives it to be woken by the release
/// message, so that only the message can wake it in time.
const WAITER_POLL: Duration = Duration::from_secs(30);
const WOKEN_WITHIN: Duration = Duration::from_secs(10);

async fn cluster_client(cluster: &RedisCluster, poll: Duration) -> Client {
    let builder = Client::cluster_builder(&cluster.urls())
        .watchdog_timeout(Duration::from_secs(6))
        .poll_interval(poll);
    within(BOUND, builder.connect())
        .await
        .expect("connect to the cluster")
}

/// Whether the master that serves `slot` now has a subscriber of `channel` (asked for up to
/// 10 s: the subscription is made again in the background). Its replicas accept
/// `SSUBSCRIBE` too, but one was not seen to pass on the master's messages.
async fn subscribed_on_the_master(cluster: &Arc<RedisCluster>, slot: u16, channel: &str) -> bool {
    let (c, channel) = (cluster.clone(), channel.to_owned());
    tokio::task::spawn_blocking(move || {
        for _ in 0..100 {
            let count = c
                .master_of(slot)
                .and_then(|m| m.cli(&["PUBSUB", "SHARDNUMSUB", &channel]));
            if count.is_ok_and(|reply| reply.lines().nth(1) == Some("1")) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    })
    .await
    .unwrap()
}

/// A reentrant lock held for 60 s and a waiter of it with a 60 s wait, polling every `poll`.
async fn held_and_waited(
    cluster: &Arc<RedisCluster>,
    name: &str,
    poll: Duration,
) -> (Guard, tokio::task::JoinHandle<redlatch::Result<Guard>>) {
    let holder = cluster_client(cluster, Duration::from_millis(50)).await;
    let waiters = cluster_client(cluster, poll).await;
    let lease = Duration::from_secs(60);
    let held = within(BOUND, holder.rlock(name).lease(lease).acquire())
        .await
        .unwrap();
    let n = name.to_owned();
    let waiter = tokio::spawn(async move {
        let lock = waiters.rlock(&n).lease(Duration::from_secs(30));
        lock.wait(Duration::from_secs(60)).acquire().await
    });
    (held, waiter)
}

/// The waiter still waits when `held` is released, and the release message wakes it well
/// before its own poll would.
async fn woken_by_the_release(held: Guard, waiter: tokio::task::JoinHandle<redlatch::Result<Guard>>) {
    assert!(
        !waiter.is_finished(),
        "the waiter still waits: {:?}",
        waiter.await
    );
    // The holder's client has sent nothing since the failover (a fixed lease): its release
    // may go to the paused old master first and get no answer, as any call would; it is
    // retried then, as the contract says (the release latch makes the retry exact).
    for attempt in 1.. {
        match within(BOUND, held.release()).await {
            Err(e) if e.kind() == redlatch::ErrorKind::Connection && attempt < 5 => continue,
            done => {
                done.unwrap();
                break;
            }
        }
    }
    let woken = tokio::time::timeout(WOKEN_WITHIN, waiter).await;
    let g = woken
        .expect("the release message woke the waiter")
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_subscribed_again_after_a_migration_and_a_failover() {
    let cluster = Arc::new(RedisCluster::start().unwrap());
    let name = "resubscribed";
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let slot = cluster.slot_of(name).unwrap();
    let (held, waiter) = held_and_waited(&cluster, name, WAITER_POLL).await;
    assert!(
        subscribed_on_the_master(&cluster, slot, &channel).await,
        "subscribed at first"
    );

    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.migrate_slot(slot, c.other_master(slot)?))
        .await
        .unwrap()
        .unwrap();
    assert!(
        subscribed_on_the_master(&cluster, slot, &channel).await,
        "subscribed on the master the slot migrated to"
    );

    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.failover(slot).map(|_| ()))
        .await
        .unwrap()
        .unwrap();
    assert!(
        subscribed_on_the_master(&cluster, slot, &channel).await,
        "subscribed on the promoted replica"
    );
    woken_by_the_release(held, waiter).await;
}

/// How a test takes the master of a lock's slot away: killed (its connections reset, so
/// redis-rs reports a disconnection) or paused (no push and no reset: the connections stay
/// open, unanswered, while its replica takes over).
#[derive(Clone, Copy)]
enum MasterLost {
    Killed,
    Paused,
}

async fn a_waiter_is_subscribed_again_after_its_master_is(lost: MasterLost, name: &str) {
    let cluster = Arc::new(RedisCluster::start().unwrap());
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let slot = cluster.slot_of(name).unwrap();
    // A paused master tells the subscriber nothing: the waiter's poll, getting no answer from
    // it, is what has the client connect again; so that poll comes within the test's time.
    let poll = match lost {
        MasterLost::Killed => WAITER_POLL,
        MasterLost::Paused => Duration::from_secs(1),
    };
    let (held, waiter) = held_and_waited(&cluster, name, poll).await;
    assert!(
        subscribed_on_the_master(&cluster, slot, &channel).await,
        "subscribed at first"
    );

    let old = cluster.master_of(slot).unwrap();
    // The hold must reach the replica that takes over (replication is asynchronous).
    cluster.until_replicated(old).unwrap();
    let old_port = old.port();
    match lost {
        MasterLost::Killed => old.kill().unwrap(),
        MasterLost::Paused => old.pause().unwrap(),
    }
    let c = cluster.clone();
    tokio::task::spawn_blocking(move || c.until_promoted(slot, old_port))
        .await
        .unwrap()
        .unwrap();
    assert!(
        subscribed_on_the_master(&cluster, slot, &channel).await,
        "subscribed on the promoted replica"
    );
    woken_by_the_release(held, waiter).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_subscribed_again_after_its_master_was_killed() {
    a_waiter_is_subscribed_again_after_its_master_is(MasterLost::Killed, "resubscribed-after-kill").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_subscribed_again_after_its_master_was_paused() {
    a_waiter_is_subscribed_again_after_its_master_is(MasterLost::Paused, "resubscribed-after-pause").await;
}
