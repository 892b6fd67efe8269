//! Issue #14 item 3: Sentinel (master resolution, sentinel auth, following a failover) and
//! replication safety (`sync_replicas`), on a master + replica + 3 sentinels started by the
//! harness, with `SENTINEL FAILOVER`.
//!
//! The failover double-ownership is reproduced, not assumed: the replica replicates through a
//! proxy that holds the master's writes back, so a lock acquired meanwhile is lost in the
//! failover. Without `sync_replicas` another client then takes the lock while the holder has
//! not been told; with it, the acquire is refused, or the holder is told first.

mod common;

use common::within;
use redlatch::{Client, ErrorKind, Guard};
use redlatch_fleet::{SentinelGroup, SentinelOptions};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(60);

fn group(replica_via_proxy: bool) -> SentinelGroup {
    SentinelGroup::start(SentinelOptions {
        data_password: Some("data-pw".into()),
        sentinel_password: Some("sentinel-pw".into()),
        replica_via_proxy,
    })
    .expect("start the Sentinel group")
}

async fn client(group: &SentinelGroup, sync_replicas: u32) -> Client {
    let builder = Client::builder(&group.url())
        .sentinel_auth(None, "sentinel-pw")
        .network_timeout(Duration::from_secs(2))
        .watchdog_timeout(Duration::from_secs(3))
        .sync_replicas(sync_replicas)
        .sync_replicas_timeout(Duration::from_millis(300));
    within(BOUND, builder.connect())
        .await
        .expect("connect through the sentinels")
}

/// `SENTINEL FAILOVER` on a thread (the harness is blocking).
async fn failover(group: &Arc<SentinelGroup>) -> usize {
    let g = group.clone();
    tokio::task::spawn_blocking(move || g.failover().expect("failover"))
        .await
        .unwrap()
}

/// Waits (up to 2 s) until data node `replica` has `key` (replication is asynchronous).
async fn until_replica_has(group: &SentinelGroup, replica: usize, key: &str) {
    for _ in 0..100 {
        if group.data_cli(replica, &["EXISTS", key]).unwrap() == "1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (up to 40 s) until the sentinels name data node `replica` master and it answers so.
async fn until_promoted(group: &Arc<SentinelGroup>, replica: usize) {
    let g = group.clone();
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(40);
        while g.master().ok() != Some(replica)
            || !g.data_cli(replica, &["ROLE"]).unwrap().starts_with("master")
        {
            assert!(Instant::now() < deadline, "no failover within 40 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolves_the_master_and_follows_a_failover() {
    let group = Arc::new(group(false));
    let client = client(&group, 0).await;
    let g = client
        .lock("s-lock")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    let master = group.master().unwrap();
    assert_eq!(group.data_cli(master, &["EXISTS", "s-lock"]).unwrap(), "1");
    // Wait until the replica has it, so the failover keeps it.
    let replica = 1 - master;
    until_replica_has(&group, replica, "s-lock").await;
    let new_master = failover(&group).await;
    assert_eq!(new_master, replica);
    // The same client now talks to the new master: it sees its hold and releases it there.
    assert!(within(BOUND, g.owned()).await.unwrap());
    within(BOUND, g.release()).await.unwrap();
    assert_eq!(group.data_cli(new_master, &["EXISTS", "s-lock"]).unwrap(), "0");
    let g2 = within(
        BOUND,
        client.lock("s-lock2").lease(Duration::from_secs(5)).acquire(),
    )
    .await
    .unwrap();
    assert_eq!(group.data_cli(new_master, &["EXISTS", "s-lock2"]).unwrap(), "1");
    g2.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_with_a_wait_rides_out_a_killed_master() {
    // A user trial: waiters failed with "no master" about 3 s into their 40 s wait when the
    // master was killed, while the holder kept the lock through the failover.
    let group = Arc::new(group(false));
    let holder = client(&group, 0).await;
    let waiters = client(&group, 0).await;
    let held = within(
        BOUND,
        holder.lock("s-kill").lease(Duration::from_secs(30)).acquire(),
    )
    .await
    .unwrap();
    let master = group.master().unwrap();
    let replica = 1 - master;
    until_replica_has(&group, replica, "s-kill").await;
    // A fixed lease: the test is about the wait, not these clients' 3 s watchdog.
    let waiter = tokio::spawn(async move {
        waiters
            .lock("s-kill")
            .lease(Duration::from_secs(30))
            .wait(Duration::from_secs(45))
            .acquire()
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    group.data[master].kill().unwrap();
    until_promoted(&group, replica).await;
    common::release_to_the_waiter(&held, waiter, BOUND).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_by_the_release_message_after_a_failover_of_a_paused_master() {
    // A user trial of stop 48: waiters that were subscribed when a paused master was failed
    // over stayed subscribed on the paused node (no push, no reset), and were woken only by
    // their poll (at most 1 s for Redisson's kinds). The waiter's poll here is 30 s, so only
    // the release message can wake it within the test's 10 s.
    let group = Arc::new(group(false));
    let holder = client(&group, 0).await;
    let waiters = Client::builder(&group.url())
        .sentinel_auth(None, "sentinel-pw")
        .network_timeout(Duration::from_secs(2))
        .poll_interval(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    let name = "s-paused";
    let lease = Duration::from_secs(60);
    let held = within(BOUND, holder.rlock(name).lease(lease).acquire())
        .await
        .unwrap();
    let master = group.master().unwrap();
    let replica = 1 - master;
    until_replica_has(&group, replica, name).await;
    let waiter = tokio::spawn(async move {
        let lock = waiters.rlock(name).lease(Duration::from_secs(30));
        lock.wait(Duration::from_secs(90)).acquire().await
    });
    tokio::time::sleep(Duration::from_millis(300)).await; // subscribed and waiting

    group.data[master].pause().unwrap();
    until_promoted(&group, replica).await;
    assert!(
        !waiter.is_finished(),
        "the waiter still waits: {:?}",
        waiter.await
    );
    // The holder's client may send to the paused node first (no answer): retried, as a
    // caller would (the release latch makes the retry exact).
    within(BOUND, async {
        while let Err(e) = held.release().await {
            assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        }
    })
    .await;
    let woken = tokio::time::timeout(Duration::from_secs(10), waiter).await;
    let g = woken
        .expect("the release message woke the waiter")
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
    group.data[master].resume().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_credentials_are_checked_and_not_shown() {
    let group = group(false);
    let e = within(
        BOUND,
        Client::builder(&group.url())
            .sentinel_auth(None, "wrong-sentinel-pw")
            .connect(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.message().contains("Sentinel"), "{e}");
    assert!(
        !e.to_string().contains("wrong-sentinel-pw") && !e.to_string().contains("data-pw"),
        "{e}"
    );
    let e = within(
        BOUND,
        Client::connect(&group.url().replace("redlatch-master", "no-such-master")),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // Refused credentials end a wait at once and say whose they were (a user trial of stop 36
    // found both retried through the whole wait, with one message for both).
    let cases = [
        (group.url(), "wrong-sentinel-pw", "sentinel_password"),
        // No sentinel password at all: that the sentinels require one (a user trial of stop
        // 42 read that the one given was refused).
        (group.url(), "", "require a password and none was given"),
        (
            group.url().replace("data-pw", "wrong-data-pw"),
            "sentinel-pw",
            "the URL's user name or password",
        ),
        // No password for the data nodes at all: that they require one, not that the URL's
        // was refused (a user trial of stop 41: the URL gave none and the master saw no AUTH).
        (
            group.url().replace(":data-pw@", ""),
            "sentinel-pw",
            "requires a password (NOAUTH)",
        ),
    ];
    for (url, sentinel_password, whose) in cases {
        let builder = Client::builder(&url);
        let builder = match sentinel_password {
            "" => builder,
            password => builder.sentinel_auth(None, password),
        };
        let lazy = builder
            .network_timeout(Duration::from_secs(2))
            .build_lazy()
            .unwrap();
        let lock = lazy.lock("creds").wait(Duration::from_secs(60));
        let acquire = lock.acquire();
        let e = within(Duration::from_secs(20), acquire).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        assert!(e.is_permanent() && e.message().contains(whose), "{whose}: {e}");
        assert!(!e.to_string().contains("pw"), "no password shown: {e}");
    }
    // A data-node user denied ROLE and INFO (how the client checks it reached the master,
    // redis-rs falling back to INFO replication): refused at once as NoPermission, whatever
    // the wait (not retried as a connection failure).
    for i in 0..2 {
        let reply = group
            .data_cli(
                i,
                &[
                    "ACL",
                    "SETUSER",
                    "norole",
                    "on",
                    ">norole-pw",
                    "+@all",
                    "-role",
                    "-info",
                    "~*",
                    "&*",
                ],
            )
            .unwrap();
        assert_eq!(reply, "OK");
    }
    let lazy = Client::builder(&group.url().replace(":data-pw@", "norole:norole-pw@"))
        .sentinel_auth(None, "sentinel-pw")
        .network_timeout(Duration::from_secs(2))
        .build_lazy()
        .unwrap();
    let e = within(
        Duration::from_secs(20),
        lazy.lock("norole").wait(Duration::from_secs(60)).acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoPermission, "{e}");
    assert!(!e.to_string().contains("pw"), "no password shown: {e}");
}

/// Watches `guard` and records when it was reported lost.
fn lost_at(guard: &Guard) -> Arc<Mutex<Option<Instant>>> {
    let at = Arc::new(Mutex::new(None));
    let (a, lost) = (at.clone(), guard.lost());
    tokio::spawn(async move {
        lost.await;
        *a.lock().unwrap() = Some(Instant::now());
    });
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_sync_replicas_a_failover_can_give_the_lock_to_two_owners() {
    // Documents the hazard that `sync_replicas` exists for.
    let group = Arc::new(group(true));
    let a = client(&group, 0).await;
    let b = client(&group, 0).await;
    group.hold_replication(true);
    let held = within(BOUND, a.lock("hazard").lease(Duration::from_secs(15)).acquire())
        .await
        .unwrap();
    failover(&group).await; // the promoted replica never received the key
    let taken = within(
        BOUND,
        b.lock("hazard")
            .lease(Duration::from_secs(15))
            .wait(Duration::from_secs(10))
            .acquire(),
    )
    .await
    .expect("the other client acquires on the new master");
    assert!(
        !held.is_lost(),
        "the first holder has not been told: two owners at once"
    );
    // The holder finds out only by asking Redis (the client follows the new master).
    assert!(!within(BOUND, held.owned()).await.unwrap());
    taken.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sync_replicas_an_unreplicated_acquire_is_refused_and_rolled_back() {
    let group = Arc::new(group(true));
    let a = client(&group, 1).await;
    // Replication flowing: granted and confirmed.
    let g = within(BOUND, a.lock("sync-ok").lease(Duration::from_secs(5)).acquire())
        .await
        .unwrap();
    g.release().await.unwrap();
    group.hold_replication(true);
    let e = within(
        BOUND,
        a.lock("sync-held").lease(Duration::from_secs(15)).acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    assert!(e.message().contains("replica(s) confirmed"), "{e}");
    let master = group.master().unwrap();
    // The grant was rolled back on the master (in the background, right after the error).
    let mut rolled_back = false;
    for _ in 0..100 {
        if group.data_cli(master, &["EXISTS", "sync-held"]).unwrap() == "0" {
            rolled_back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(rolled_back, "the unconfirmed grant was not rolled back");
    group.hold_replication(false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sync_replicas_the_holder_is_told_before_another_client_can_take_the_lock() {
    let group = Arc::new(group(true));
    let a = client(&group, 1).await;
    let b = client(&group, 1).await;
    // Watchdog mode (lease 3 s, renewed every second, each renewal confirmed by WAIT).
    let held = within(BOUND, a.lock("sync-wd").acquire()).await.unwrap();
    let lost = lost_at(&held);
    group.hold_replication(true); // renewals stop reaching the replica
    failover(&group).await;
    let attempt = within(
        BOUND,
        b.lock("sync-wd")
            .lease(Duration::from_secs(5))
            .wait(Duration::from_secs(8))
            .acquire(),
    )
    .await;
    let now = Instant::now();
    // Never two owners: either the other client got the lock after the holder was told, or
    // it did not get it (its grants could not be confirmed, or the holder still held it).
    match attempt {
        Ok(taken) => {
            let told = lost
                .lock()
                .unwrap()
                .expect("the other client took the lock before the holder was told");
            assert!(told <= now, "the holder was told only after the takeover");
            assert!(held.is_lost());
            taken.release().await.unwrap();
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::NotAcquired, "the takeover is refused: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_going_away_one_after_another_leave_the_master_in_use() {
    // A user trial of stop 39: the `+switch-master` watcher, moving to the next sentinel as
    // each went away, assumed a missed failover and dropped the healthy master's connection;
    // with no sentinel left to name it again, every call failed and watchdog holds expired.
    let group = group(false);
    let client = client(&group, 0).await;
    let held = within(BOUND, client.lock("s-gone").acquire()).await.unwrap();
    let master = group.master().unwrap();
    for sentinel in &group.sentinels {
        sentinel.kill().unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past the 3 s watchdog timeout: only renewals on the master keep the hold.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!held.is_lost(), "lost: {:?}", held.lost_reason());
    let other = within(BOUND, client.lock("s-gone-2").wait(Duration::ZERO).acquire())
        .await
        .expect("the master is still used");
    within(BOUND, other.release()).await.unwrap();
    within(BOUND, held.release()).await.unwrap();
    assert_eq!(group.data_cli(master, &["EXISTS", "s-gone"]).unwrap(), "0");
}

#[test]
fn sentinel_credentials_for_another_kind_of_url_are_refused() {
    // A user trial of stop 39: accepted and silently unused on a plain URL.
    for url in ["redis://127.0.0.1:1", "redis+cluster://127.0.0.1:1,127.0.0.1:2"] {
        let e = Client::builder(url)
            .sentinel_auth(None, "sentinel-pw")
            .check()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}: {e}");
        assert!(e.message().contains("not redis+sentinel://"), "{e}");
        assert!(!e.message().contains("sentinel-pw"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_name_no_sentinel_knows_says_what_it_may_mean() {
    // A Rust user trial of stop 49 read redis-rs' "Master with given name not found in
    // sentinel" during a failover, with the right name, as a configuration error.
    let group = group(false);
    let url = group.url().replace(redlatch_fleet::MASTER_NAME, "no-such-master");
    let e = within(
        BOUND,
        Client::builder(&url).sentinel_auth(None, "sentinel-pw").connect(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.message().contains("\"no-such-master\""), "{e}");
    assert!(
        e.message()
            .contains("the name may be wrong, or a failover is under way"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_url_at_a_data_node_says_so() {
    // A deployments trial of stop 45: "refused the URL's user name or password (WRONGPASS)",
    // with no password given.
    let node = redlatch_fleet::RedisServer::start().unwrap();
    let url = node.url().replace("redis://", "redis+sentinel://") + "/mymaster";
    let e = within(Duration::from_secs(20), Client::connect(&url))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("does not point to a Redis Sentinel"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_url_at_a_data_node_with_a_password_names_that_mistake() {
    // A deployments trial of stop 45: such a node answers NOAUTH to everything, as a sentinel
    // with a password would, and the message spoke of the sentinels' password only.
    let node = redlatch_fleet::RedisServer::start_with_options(&redlatch_fleet::ServerOptions {
        password: Some("data-pw".into()),
        acl_user: Some(false),
        ..redlatch_fleet::ServerOptions::default()
    })
    .unwrap();
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", node.port());
    let e = within(Duration::from_secs(20), Client::connect(&url))
        .await
        .unwrap_err();
    assert!(e.message().contains("not a Sentinel"), "{e}");
}
