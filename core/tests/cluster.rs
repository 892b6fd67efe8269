//! Issue #14 item 2: Redis Cluster (3 masters + 3 replicas started by the harness): slot
//! routing, sharded pub/sub wake-ups, the watchdog across slots, waiters and renewals
//! surviving a slot migration and a `CLUSTER FAILOVER`, and a plain client on a Cluster node
//! failing at once.

mod common;

use common::within;
use redlatch::{Client, ErrorKind};
use redlatch_fleet::RedisCluster;
use std::sync::Arc;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

async fn cluster_client(cluster: &RedisCluster) -> Client {
    cluster_client_with(cluster, Duration::from_millis(900)).await
}

async fn cluster_client_with(cluster: &RedisCluster, watchdog: Duration) -> Client {
    let builder = Client::cluster_builder(&cluster.urls()).watchdog_timeout(watchdog);
    within(BOUND, builder.connect())
        .await
        .expect("connect to the cluster")
}

fn stat(cluster: &RedisCluster, command: &str) -> u64 {
    cluster
        .nodes()
        .iter()
        .map(|n| {
            let stats = n.cli(&["INFO", "commandstats"]).unwrap();
            let prefix = format!("cmdstat_{command}:calls=");
            stats
                .lines()
                .find_map(|l| l.strip_prefix(&prefix)?.split(',').next()?.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// Names whose slots fall on each of the three masters.
fn names_on_every_master(cluster: &RedisCluster) -> Vec<String> {
    let mut by_master = std::collections::BTreeMap::new();
    for i in 0..200 {
        let name = format!("order:{i}");
        let master = cluster.master_of(cluster.slot_of(&name).unwrap()).unwrap().port();
        by_master.entry(master).or_insert(name);
    }
    assert_eq!(by_master.len(), 3);
    by_master.into_values().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_of_every_kind_work_on_every_shard() {
    let cluster = RedisCluster::start().unwrap();
    let client = cluster_client(&cluster).await;
    let url = format!(
        "redis+cluster://{}",
        cluster
            .nodes()
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect::<Vec<_>>()
            .join(",")
    );
    let by_url = within(BOUND, Client::connect(&url))
        .await
        .expect("redis+cluster:// URL");
    for name in names_on_every_master(&cluster) {
        let g = within(BOUND, client.lock(&name).lease(Duration::from_secs(5)).acquire())
            .await
            .unwrap();
        let busy = within(BOUND, by_url.lock(&name).wait(Duration::ZERO).try_acquire())
            .await
            .unwrap();
        assert!(busy.is_none(), "{name} excludes across clients");
        g.extend(Duration::from_secs(6)).await.unwrap();
        assert!(g.owned().await.unwrap());
        g.release().await.unwrap();
        let f1 = client
            .lock(&name)
            .fenced()
            .lease(Duration::from_secs(5))
            .acquire()
            .await
            .unwrap();
        let t1 = f1.fencing_token().unwrap();
        f1.release().await.unwrap();
        let f2 = client
            .lock(&name)
            .fenced()
            .lease(Duration::from_secs(5))
            .acquire()
            .await
            .unwrap();
        assert!(f2.fencing_token().unwrap() > t1);
        f2.release().await.unwrap();
        let rl = client.rlock(format!("r{{{name}}}"));
        let a = rl.clone().acquire().await.unwrap();
        let b = rl.acquire().await.unwrap();
        b.release().await.unwrap();
        a.release().await.unwrap();
        assert!(!client.force_unlock(&name).await.unwrap());
    }
    // A name whose companion keys would land in another slot is refused clearly, before
    // anything is written.
    for name in ["a{}b", "a{b"] {
        let e = within(BOUND, client.lock(name).lease(Duration::from_secs(1)).acquire())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains("slot"), "{e}");
        let owner = cluster.master_of(cluster.slot_of(name).unwrap()).unwrap();
        assert_eq!(owner.cli(&["EXISTS", name]).unwrap(), "0");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_use_sharded_pubsub_and_the_watchdog_renews_across_slots() {
    let cluster = RedisCluster::start().unwrap();
    let client = cluster_client(&cluster).await;
    let names = names_on_every_master(&cluster);
    // Watchdog holds on three shards, renewed for three periods.
    let mut guards = Vec::new();
    for n in &names {
        guards.push(within(BOUND, client.lock(n).acquire()).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        guards.iter().all(|g| !g.is_lost()),
        "renewals reached every shard"
    );
    // A waiter subscribes to the shard channel of its lock and is woken by SPUBLISH.
    let other = cluster_client(&cluster).await;
    let name = names[0].clone();
    let waiter = tokio::spawn(async move { other.lock(&name).wait(Duration::from_secs(20)).acquire().await });
    let channel = format!("redisson_lock__channel:{{{}}}", names[0]);
    let owner = cluster.master_of(cluster.slot_of(&channel).unwrap()).unwrap();
    let mut subscribed = false;
    for _ in 0..200 {
        let reply = owner.cli(&["PUBSUB", "SHARDNUMSUB", &channel]).unwrap();
        if reply.lines().nth(1) == Some("1") {
            subscribed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        subscribed,
        "the waiter SSUBSCRIBEd on the shard that owns the lock"
    );
    let before = stat(&cluster, "spublish");
    for g in guards {
        g.release().await.unwrap();
    }
    let g = within(BOUND, waiter).await.unwrap().unwrap();
    assert!(
        stat(&cluster, "spublish") > before,
        "releases published with SPUBLISH"
    );
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_and_its_waiter_survive_a_slot_migration_and_a_failover() {
    let cluster = Arc::new(RedisCluster::start().unwrap());
    // A manual failover pauses writes on the old master until the replica caught up: the
    // lease must outlast that (in production it is 30 s).
    let client = cluster_client_with(&cluster, Duration::from_secs(6)).await;
    let waiters = cluster_client(&cluster).await;
    let name = "moving-lock".to_owned();
    let slot = cluster.slot_of(&name).unwrap();
    let held = within(BOUND, client.lock(&name).acquire()).await.unwrap();
    let n = name.clone();
    let waiter = tokio::spawn(async move { waiters.lock(&n).wait(Duration::from_secs(40)).acquire().await });

    let c = cluster.clone();
    tokio::task::spawn_blocking(move || {
        let to = c.other_master(slot).unwrap();
        c.migrate_slot(slot, to).unwrap();
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(4500)).await; // two renewal periods on the new owner
    assert!(!held.is_lost(), "renewals followed the slot");
    assert!(within(BOUND, held.owned()).await.unwrap());

    let c = cluster.clone();
    tokio::task::spawn_blocking(move || {
        c.failover(slot).unwrap();
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert!(!held.is_lost(), "renewals followed the failover");
    assert!(within(BOUND, held.owned()).await.unwrap());
    assert!(!waiter.is_finished(), "the waiter still waits");

    within(BOUND, held.release()).await.unwrap();
    let g = within(BOUND, waiter)
        .await
        .unwrap()
        .expect("the waiter acquires after the release");
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_client_on_a_cluster_node_fails_at_once_saying_so() {
    let cluster = RedisCluster::start().unwrap();
    let node = &cluster.nodes()[0];
    // A name served by another node answers MOVED.
    let name = (0..100)
        .map(|i| format!("elsewhere:{i}"))
        .find(|n| cluster.master_of(cluster.slot_of(n).unwrap()).unwrap().port() != node.port())
        .unwrap();
    let plain = Client::builder(&node.url())
        .network_timeout(Duration::from_secs(20))
        .connect()
        .await
        .unwrap();
    // Retrying a MOVED until the wait (60 s) or the errors' bound (20 s) ends would trip the guard.
    let e = within(
        Duration::from_secs(10),
        plain.lock(&name).wait(Duration::from_secs(60)).acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("Cluster"), "{e}");
    assert!(e.message().contains("redis+cluster://"), "{e}");

    // A refused password and a missing permission end a wait at once too (a user trial of
    // stop 36 found both retried through the whole wait on Cluster, as Connection errors).
    let users: [&[&str]; 2] = [
        &["ACL", "SETUSER", "right", "on", ">right-pw", "~*", "&*", "+@all"],
        &[
            "ACL",
            "SETUSER",
            "noslots",
            "on",
            ">right-pw",
            "~*",
            "&*",
            "+@all",
            "-cluster|slots",
        ],
    ];
    for node in cluster.nodes() {
        for user in users {
            assert_eq!(node.cli(user).unwrap(), "OK", "{user:?}");
        }
    }
    // From the ports: under REDLATCH_FLEET_ACL the cluster's URLs carry the ACL user already.
    let seeds = |auth: &str| -> Vec<String> {
        let nodes = cluster.nodes().iter();
        nodes
            .map(|n| format!("redis://{auth}@127.0.0.1:{}", n.port()))
            .collect()
    };
    let cases = [
        ("right:wrong-pw", ErrorKind::Connection),
        ("noslots:right-pw", ErrorKind::NoPermission),
    ];
    for (auth, kind) in cases {
        let lazy = Client::cluster_builder(&seeds(auth))
            .network_timeout(Duration::from_secs(2))
            .build_lazy()
            .unwrap();
        let lock = lazy.lock(&name).wait(Duration::from_secs(60));
        let acquire = lock.acquire();
        let e = within(Duration::from_secs(20), acquire).await.unwrap_err();
        assert_eq!(e.kind(), kind, "{auth}: {e}");
        assert!(e.is_permanent(), "{auth}: {e}");
        assert!(!e.to_string().contains("pw"), "no password shown: {e}");
    }

    // A node that does not answer: the message names the key slot, and the seed as a seed
    // (the user trial read "cluster <seed>: no reply" as naming the node that failed).
    let client = Client::cluster_builder(&cluster.urls())
        .network_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let slot = cluster.slot_of(&name).unwrap();
    let owner = cluster.master_of(slot).unwrap();
    owner.pause().unwrap();
    let lock = client.lock(&name).wait(Duration::ZERO);
    let e = within(Duration::from_secs(10), lock.acquire()).await.unwrap_err();
    owner.resume().unwrap();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(
        e.message()
            .contains(&format!("sent to the node serving key slot {slot}")),
        "{e}"
    );
    assert!(e.message().contains("(seed "), "{e}");
}

/// A call right after the node's server closed its connection (`CLIENT KILL`) gets the
/// truth, not a timeout: the single-node case of redlatch-faults'
/// `lone_calls_after_killed_connections_never_wait_out_their_timeout`, on Cluster's own
/// connections (redis-rs' cluster layer keeps one multiplexed connection per node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lone_calls_after_killed_node_connections_get_the_truth() {
    let cluster = RedisCluster::start().unwrap();
    let client = cluster_client(&cluster).await;
    let name = "kill-loop:order";
    let master = cluster.master_of(cluster.slot_of(name).unwrap()).unwrap();
    let guard = within(BOUND, client.lock(name).lease(Duration::from_secs(600)).acquire())
        .await
        .unwrap();
    for round in 0..400u64 {
        master.cli(&["CLIENT", "KILL", "TYPE", "normal"]).unwrap();
        if round % 3 == 1 {
            tokio::time::sleep(Duration::from_millis(round % 5)).await;
        }
        let started = std::time::Instant::now();
        let owned = within(BOUND, guard.owned()).await;
        assert!(
            owned.as_ref().is_ok_and(|owned| *owned),
            "round {round}: owned() after CLIENT KILL answered {owned:?} after {:?}",
            started.elapsed()
        );
    }
    within(BOUND, guard.release()).await.unwrap();
}

/// Waits until a node other than `old` serves `slot`, for a test that killed `old`.
async fn until_promoted(cluster: &Arc<RedisCluster>, slot: u16, old: u16) {
    let c = cluster.clone();
    let promoted = tokio::task::spawn_blocking(move || c.until_promoted(slot, old));
    promoted.await.unwrap().unwrap();
}

/// Lock `name` held for 120 s through `client`, then its slot's master paused (SIGSTOP: a
/// frozen VM, a long stall) once the replica has the hold, until the replica is promoted.
/// Returns the hold and the paused node (resume it before the test ends).
async fn held_through_a_paused_promotion<'c>(
    cluster: &'c Arc<RedisCluster>,
    client: &Client,
    name: &str,
) -> (redlatch::Guard, &'c redlatch_fleet::RedisServer) {
    let slot = cluster.slot_of(name).unwrap();
    let held = within(BOUND, client.lock(name).lease(Duration::from_secs(120)).acquire())
        .await
        .unwrap();
    let old = cluster.master_of(slot).unwrap();
    cluster.until_replicated(old).unwrap();
    old.pause().unwrap();
    until_promoted(cluster, slot, old.port()).await;
    (held, old)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_with_a_wait_rides_out_a_killed_master() {
    // A user trial: waiters failed with CLUSTERDOWN or a raw MOVED (kind Redis) about 3 s into
    // their 30 s wait when the slot's master was killed, while the holder kept the lock.
    let cluster = Arc::new(RedisCluster::start().unwrap());
    let holder = cluster_client(&cluster).await;
    let waiters = cluster_client(&cluster).await;
    let name = "killed-master-lock".to_owned();
    let slot = cluster.slot_of(&name).unwrap();
    let held = within(BOUND, holder.lock(&name).lease(Duration::from_secs(60)).acquire())
        .await
        .unwrap();
    let n = name.clone();
    // A fixed lease: the test is about the wait, not the 900 ms watchdog of these clients (an
    // attempt slowed by the cluster's topology refresh could outlast it on a loaded machine).
    let waiter = tokio::spawn(async move {
        let lock = waiters.lock(&n).lease(Duration::from_secs(30));
        lock.wait(Duration::from_secs(40)).acquire().await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let old = cluster.master_of(slot).unwrap();
    // The hold must be on the replica that takes over: Redis replicates asynchronously (CI
    // once killed the master before the replica had the key, and the waiter got the lock).
    cluster.until_replicated(old).unwrap();
    let old_port = old.port();
    old.kill().unwrap();
    until_promoted(&cluster, slot, old_port).await;
    common::release_to_the_waiter(&held, waiter, BOUND).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_follows_the_promotion_of_a_paused_master() {
    // A user trial of stop 41: with the slot's master paused (SIGSTOP: a frozen VM, a long
    // stall) and its replica promoted, a client made before the pause kept sending to the
    // frozen node (its connection there was open, only silent) until it was resumed; a new
    // client worked at once. A killed master was followed (a refused connection).
    let cluster = Arc::new(RedisCluster::start().unwrap());
    let client = cluster_client(&cluster).await;
    let (held, old) = held_through_a_paused_promotion(&cluster, &client, "{paused}:held").await;
    let old_port = old.port();
    let other = client
        .lock("{paused}:other")
        .lease(Duration::from_secs(5))
        .wait(Duration::from_secs(30));
    let acquired = within(Duration::from_secs(40), other.acquire()).await;
    let released = within(Duration::from_secs(40), held.release()).await;
    // A client made now, the paused node first among its seeds (a user trial of stop 45: every
    // call of a Python client made so failed at its network timeout while the node was paused;
    // each began the connect, which redis-rs could not finish within that time, and dropped it).
    let paused_first: Vec<String> = {
        let paused = format!(":{old_port}");
        let (first, rest): (Vec<_>, Vec<_>) = cluster.urls().into_iter().partition(|u| u.ends_with(&paused));
        first.into_iter().chain(rest).collect()
    };
    let fresh = Client::cluster_builder(&paused_first).build_lazy().unwrap();
    let lock = fresh.lock("{paused}:fresh").lease(Duration::from_secs(5));
    let fresh_acquired = within(
        Duration::from_secs(40),
        lock.wait(Duration::from_secs(30)).acquire(),
    )
    .await;
    old.resume().unwrap();
    acquired.expect("a lock of the promoted replica's slot, through the client made before the pause");
    released.expect("the hold, replicated to the promoted node, is released there");
    fresh_acquired.expect("a client made during the pause connects past its paused seed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_paused_master_is_promoted_one_call_at_most_goes_unanswered() {
    // A user trial of stop 48: after the promotion, two calls in a row waited out the network
    // timeout, the first on the old route, the second for the new connection, which redis-rs
    // made only once every seed had answered or timed out (the paused one: a whole connect
    // timeout). A holder whose renewals waited so lost a lock with a 6 s watchdog.
    let cluster = Arc::new(RedisCluster::start().unwrap());
    let builder = Client::cluster_builder(&cluster.urls()).network_timeout(Duration::from_secs(1));
    let client = within(BOUND, builder.connect()).await.unwrap();
    let (held, old) = held_through_a_paused_promotion(&cluster, &client, "{unanswered}:held").await;
    let first = within(BOUND, held.owned()).await;
    let second = within(BOUND, held.owned()).await;
    old.resume().unwrap();
    if let Err(e) = &first {
        assert_eq!(e.kind(), ErrorKind::Connection, "the old route: {e}");
    }
    assert!(second.expect("the call after it reaches the promoted replica"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_masters_promotion_is_followed_before_a_call_waits_on_it() {
    // Stop 48 left one call waiting out the network timeout after a paused master's
    // promotion: the slot map was stale until a call sent to the silent node failed. The
    // topology poll (CLUSTER SLOTS once a second, as Redisson's scanInterval) moves the
    // client to the promoted replica before any call is sent there.
    let cluster = Arc::new(RedisCluster::start().unwrap());
    let builder = Client::cluster_builder(&cluster.urls()).network_timeout(Duration::from_secs(5));
    let client = within(BOUND, builder.connect()).await.unwrap();
    let (held, old) = held_through_a_paused_promotion(&cluster, &client, "{polled}:held").await;
    // A poll a second, each asking the silent node at most one second before another.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let first = within(BOUND, held.owned()).await;
    old.resume().unwrap();
    assert!(first.expect("the first call after the promotion reaches the promoted replica"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_client_on_a_single_node_fails_at_once_saying_so() {
    // A user trial of stop 43: redis+cluster:// to a node without cluster support retried
    // "ERR This instance has cluster support disabled" until the wait ran out.
    let single = common::server();
    let url = format!("redis+cluster://127.0.0.1:{}", single.port());
    let client = Client::builder(&url)
        .network_timeout(Duration::from_secs(20))
        .build_lazy()
        .unwrap();
    let e = within(
        Duration::from_secs(10),
        client.lock("single").wait(Duration::from_secs(60)).acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("not a Redis Cluster node"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_waiters_that_hear_the_release_poll_once_a_second() {
    // As elsewhere, a waiter of Redisson's kinds that hears the release messages polls at
    // most once a second (its subscription follows the slot: cluster_resubscribe.rs). Stop
    // 43 kept the 50 ms poll on a Cluster while the subscriptions were lost on a failover.
    let cluster = RedisCluster::start().unwrap();
    let (holder, waiter) = (cluster_client(&cluster).await, cluster_client(&cluster).await);
    let held = holder
        .rlock("poll:r")
        .lease(Duration::from_secs(30))
        .acquire()
        .await
        .unwrap();
    let before = stat(&cluster, "evalsha") + stat(&cluster, "eval");
    let lock = waiter.rlock("poll:r").wait(Duration::from_millis(1500));
    let e = within(BOUND, lock.acquire()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    let tries = stat(&cluster, "evalsha") + stat(&cluster, "eval") - before;
    assert!(tries <= 8, "a Cluster waiter tried {tries} times in 1.5 s");
    held.release().await.unwrap();
}
