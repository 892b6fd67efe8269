//! Issue #14 item 4: the least-privilege user exactly as docs/deployments.md prints it (lock
//! names `lock:*`, `tests/fleet/src/acl.rs`) runs every operation a client makes: lease and
//! fenced locks, reentrant locks, watchdog renewal, a waiter woken through pub/sub, inspection,
//! force unlock, the `EVAL` fallback after `SCRIPT FLUSH`, and `WAIT` for `sync_replicas`.
//! (The rest of the suite runs under the same user with `~*` when `REDLATCH_FLEET_ACL=1`.)

mod common;

use common::{cmd, raw, within};
use redlatch::{Client, ErrorKind, Warning};
use redlatch_fleet::{RedisServer, ServerOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

fn server() -> RedisServer {
    let server = RedisServer::start_with_options(&ServerOptions {
        acl_user: Some(false),
        ..ServerOptions::default()
    })
    .unwrap();
    server.create_acl_user("lock:*").unwrap();
    server
}

async fn user_client(server: &RedisServer) -> Client {
    let builder = Client::builder(&server.user_url()).watchdog_timeout(Duration::from_millis(600));
    within(BOUND, builder.connect())
        .await
        .expect("connect as the ACL user")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_user_can_do_everything_a_client_does() {
    let server = server();
    let client = user_client(&server).await;
    let lease = Duration::from_secs(5);

    let fenced = within(BOUND, client.lock("lock:fenced").lease(lease).fenced().acquire())
        .await
        .unwrap();
    assert!(fenced.fencing_token().is_some());
    within(BOUND, fenced.extend(lease)).await.unwrap();
    assert!(within(BOUND, client.lock("lock:fenced").locked()).await.unwrap());
    assert!(within(BOUND, client.lock("lock:fenced").ttl())
        .await
        .unwrap()
        .is_some());
    within(BOUND, fenced.release()).await.unwrap();

    // Reentrant, in watchdog mode: renewed across two watchdog timeouts.
    let rlock = client.rlock("lock:re");
    let outer = within(BOUND, rlock.acquire()).await.unwrap();
    let inner = within(BOUND, rlock.acquire()).await.unwrap();
    assert_eq!(within(BOUND, rlock.hold_count()).await.unwrap(), 2);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(!outer.is_lost() && within(BOUND, outer.owned()).await.unwrap());
    within(BOUND, inner.release()).await.unwrap();
    within(BOUND, outer.release()).await.unwrap();

    // A waiter parked on the unlock channel, woken by the release's publish.
    let held = within(
        BOUND,
        client.lock("lock:wake").lease(Duration::from_secs(30)).acquire(),
    )
    .await
    .unwrap();
    let other = user_client(&server).await;
    let waiter = tokio::spawn(async move {
        other
            .lock("lock:wake")
            .lease(lease)
            .wait(Duration::from_secs(20))
            .acquire()
            .await
    });
    let mut admin = raw(&server).await;
    let channel = redlatch::protocol::keys::lock_channel("lock:wake");
    for _ in 0..500 {
        let subs: Vec<(String, i64)> = cmd(&mut admin, &["PUBSUB", "NUMSUB", &channel]).await;
        if subs[0].1 > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    within(BOUND, held.release()).await.unwrap();
    let woken = within(BOUND, waiter)
        .await
        .unwrap()
        .expect("the waiter got the lock");
    within(BOUND, woken.release()).await.unwrap();

    // After SCRIPT FLUSH the scripts come back through EVAL.
    let _: () = cmd(&mut admin, &["SCRIPT", "FLUSH"]).await;
    let again = within(BOUND, client.rlock("lock:re").acquire()).await.unwrap();
    within(BOUND, again.release()).await.unwrap();
    let _taken = within(BOUND, client.lock("lock:forced").lease(lease).acquire())
        .await
        .unwrap();
    assert!(within(BOUND, client.force_unlock("lock:forced")).await.unwrap());

    // Outside the granted names: refused by Redis, with the permission error as its message.
    let err = within(BOUND, client.lock("elsewhere").lease(lease).try_acquire())
        .await
        .unwrap_err();
    assert!(err.message().to_lowercase().contains("perm"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_replicas_may_wait_under_the_documented_user() {
    let server = server();
    // No replica: WAIT runs (it is granted) and counts 0 acknowledgements.
    let builder = Client::builder(&server.user_url())
        .sync_replicas(1)
        .sync_replicas_timeout(Duration::from_millis(100));
    let client = within(BOUND, builder.connect()).await.unwrap();
    let lock = client.lock("lock:sync").lease(Duration::from_secs(5));
    let err = within(BOUND, lock.acquire()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired, "{err}");
    assert!(!err.message().to_lowercase().contains("perm"), "{err}");
    // The last attempt's grant is undone in the background once the acquire has returned
    // (rollback.rs `UndoOnDrop`): gone well before its 5 s lease would end it.
    let mut admin = raw(&server).await;
    let mut exists: i64 = 1;
    for _ in 0..100 {
        exists = cmd(&mut admin, &["EXISTS", "lock:sync"]).await;
        if exists == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(exists, 0, "the unconfirmed grant was not rolled back within 2 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_denied_subscribe_is_warned_and_its_waiters_poll() {
    // (Denied the channels themselves, a user cannot release either: the release scripts
    // publish. Denied only SUBSCRIBE, waits fall back to polling, with this warning.)
    let server = server();
    let reply = server
        .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "-subscribe"])
        .unwrap();
    assert_eq!(reply, "OK");
    let seen: Arc<Mutex<Vec<Warning>>> = Arc::default();
    let handler = {
        let seen = seen.clone();
        move |w: &Warning| seen.lock().unwrap().push(w.clone())
    };
    let builder = Client::builder(&server.user_url()).on_warning(handler);
    let client = within(BOUND, builder.connect()).await.unwrap();
    let lease = Duration::from_secs(30);
    let held = within(BOUND, client.lock("lock:nochan").lease(lease).acquire())
        .await
        .unwrap();
    let waiter = {
        let lock = client
            .lock("lock:nochan")
            .lease(lease)
            .wait(Duration::from_secs(20));
        tokio::spawn(async move { lock.acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    within(BOUND, held.release()).await.unwrap();
    let woken = within(BOUND, waiter)
        .await
        .unwrap()
        .expect("the waiter got the lock by polling");
    within(BOUND, woken.release()).await.unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one warning: {seen:?}");
    assert_eq!(seen[0].kind, "pubsub");
    assert_eq!(seen[0].node, format!("127.0.0.1:{}", server.port()));
    assert!(seen[0].message.contains("NOPERM"), "{}", seen[0].message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_refused_for_permissions_keeps_the_hold_renewed() {
    // A user trial of stop 38: the refused release (NoPermission: the release scripts publish
    // on a channel this user was denied) stopped the watchdog, so the lock expired within the
    // watchdog timeout although the docs say the hold is kept for a second release.
    let server = server();
    let client = user_client(&server).await;
    let mut conn = raw(&server).await;
    for lock in [client.lock("lock:refused"), client.rlock("lock:refused-r")] {
        let guard = within(BOUND, lock.acquire()).await.unwrap();
        let denied = server
            .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "resetchannels"])
            .unwrap();
        assert_eq!(denied, "OK");
        let err = within(BOUND, guard.release()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
        // Three watchdog timeouts (600 ms): without renewals the key would be gone.
        tokio::time::sleep(Duration::from_millis(1_800)).await;
        assert!(!guard.is_lost(), "{}", lock.name());
        let pttl: i64 = cmd(&mut conn, &["PTTL", lock.name()]).await;
        assert!(pttl > 0, "{}: renewed, pttl {pttl}", lock.name());
        let allowed = server
            .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "allchannels"])
            .unwrap();
        assert_eq!(allowed, "OK");
        within(BOUND, guard.release()).await.unwrap();
        let exists: i64 = cmd(&mut conn, &["EXISTS", lock.name()]).await;
        assert_eq!(exists, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_refused_for_permissions_keeps_the_permit_renewed() {
    // As a lock's (above): a watchdog-mode permit whose release was refused stays renewed.
    let server = server();
    let client = user_client(&server).await;
    let permits = client.permit_semaphore("lock:refused-permits");
    within(BOUND, permits.try_set_permits(1)).await.unwrap();
    let permit = within(BOUND, permits.acquire(None)).await.unwrap();
    let denied = server
        .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "resetchannels"])
        .unwrap();
    assert_eq!(denied, "OK");
    let err = within(BOUND, permit.release()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    tokio::time::sleep(Duration::from_millis(1_800)).await;
    assert!(!permit.is_lost());
    assert_eq!(
        within(BOUND, permits.available()).await.unwrap(),
        0,
        "still taken"
    );
    let allowed = server
        .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "allchannels"])
        .unwrap();
    assert_eq!(allowed, "OK");
    within(BOUND, permit.release()).await.unwrap();
    assert_eq!(within(BOUND, permits.available()).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_release_that_took_most_of_a_lease_still_keeps_the_hold_renewed() {
    // CI of stop 38 lost a hold whose release was refused: renewals began again a whole
    // period after the refusal, while the last one was up to a period older than the release.
    // Here Redis holds the release (CLIENT PAUSE WRITE) for 80 % of the watchdog timeout
    // right after the acquire, so a renewal a period after the refusal comes after the key's
    // TTL and the hold's validity ran out; renewing at once keeps it.
    let server = server();
    let timeout = Duration::from_millis(3_000);
    let pause = "2400";
    let builder = Client::builder(&server.user_url())
        .watchdog_timeout(timeout)
        .network_timeout(Duration::from_secs(10));
    let client = within(BOUND, builder.connect()).await.unwrap();
    let mut conn = raw(&server).await;
    let set_channels = |rule: &str| {
        let reply = server
            .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, rule])
            .unwrap();
        assert_eq!(reply, "OK");
    };
    let permits = client.permit_semaphore("lock:paused-permits");
    within(BOUND, permits.try_set_permits(1)).await.unwrap();
    set_channels("resetchannels");

    let lock = client.lock("lock:paused");
    let rlock = client.rlock("lock:paused-r");
    let lease_guard = within(BOUND, lock.acquire()).await.unwrap();
    let reentrant_guard = within(BOUND, rlock.acquire()).await.unwrap();
    let permit = within(BOUND, permits.acquire(None)).await.unwrap();
    let _: String = cmd(&mut conn, &["CLIENT", "PAUSE", pause, "WRITE"]).await;
    let (a, b, c) = tokio::join!(
        within(BOUND, lease_guard.release()),
        within(BOUND, reentrant_guard.release()),
        within(BOUND, permit.release()),
    );
    for err in [a.unwrap_err(), b.unwrap_err(), c.unwrap_err()] {
        assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    }
    // Past the old first renewal (pause + a period), the acquire's validity and key TTL.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    for (guard, name) in [(&lease_guard, lock.name()), (&reentrant_guard, rlock.name())] {
        assert!(!guard.is_lost(), "{name}");
        let pttl: i64 = cmd(&mut conn, &["PTTL", name]).await;
        assert!(pttl > 0, "{name}: renewed, pttl {pttl}");
    }
    assert!(!permit.is_lost());
    assert_eq!(within(BOUND, permits.available()).await.unwrap(), 0);

    set_channels("allchannels");
    within(BOUND, lease_guard.release()).await.unwrap();
    within(BOUND, reentrant_guard.release()).await.unwrap();
    within(BOUND, permit.release()).await.unwrap();
    assert_eq!(within(BOUND, permits.available()).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_guard_whose_release_is_refused_is_not_renewed_for_ever() {
    // A user trial of stop 43: a watchdog-mode guard dropped by a user denied PUBLISH: its
    // background release was refused (it gives up on a permission error), but the hold stayed
    // registered for renewal, which kept the lock for the life of the process.
    let server = server();
    let client = user_client(&server).await; // watchdog 600 ms
    let guard = within(BOUND, client.lock("lock:dropped-refused").acquire())
        .await
        .unwrap();
    let denied = server
        .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "resetchannels"])
        .unwrap();
    assert_eq!(denied, "OK");
    drop(guard);
    let mut admin = raw(&server).await;
    let mut left = 1;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = cmd::<i64>(&mut admin, &["EXISTS", "lock:dropped-refused"]).await;
        if left == 0 {
            break;
        }
    }
    assert_eq!(left, 0, "still renewed 4 s (6 watchdog timeouts) after the drop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_denied_evalsha_runs_every_call_by_source() {
    // A deployments trial of stop 45: the first call of each script on a connection went by
    // source and passed, the next went by digest and was NoPermission.
    let server = server();
    server
        .cli(&["ACL", "SETUSER", redlatch_fleet::acl::USER, "-evalsha"])
        .unwrap();
    let client = user_client(&server).await;
    for _ in 0..3 {
        let held = within(BOUND, client.rlock("lock:by-source").acquire())
            .await
            .unwrap();
        within(BOUND, held.release()).await.unwrap();
    }
    // The blocking client sends from the calling thread on connections of its own.
    let url = server.user_url();
    tokio::task::spawn_blocking(move || {
        let blocking = redlatch::blocking::Client::connect(&url).unwrap();
        for _ in 0..3 {
            let held = blocking.rlock("lock:by-source").acquire().unwrap();
            held.release().unwrap();
        }
    })
    .await
    .unwrap();
}
