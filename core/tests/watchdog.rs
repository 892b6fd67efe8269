//! Watchdog renewal and loss reporting.

mod common;
use common::*;
use redlatch::{Client, ErrorKind};
use std::time::Duration;

async fn short_watchdog(s: &redlatch_fleet::RedisServer) -> Client {
    Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_the_lock_past_three_timeouts_and_stops_after_release() {
    let s = server();
    let client = short_watchdog(&s).await;
    let mut conn = raw(&s).await;
    for lock in [client.lock("wd:lease"), client.rlock("wd:reentrant")] {
        let guard = lock.acquire().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1_200)).await; // 4 x the watchdog timeout
        assert!(!guard.is_lost());
        assert!(
            guard.owned().await.unwrap(),
            "{} expired despite the watchdog",
            lock.name()
        );
        let pttl: i64 = cmd(&mut conn, &["PTTL", lock.name()]).await;
        assert!(
            pttl > 0 && pttl <= 300,
            "renewed back to the watchdog timeout: {pttl}"
        );
        guard.release().await.unwrap();
    }
    assert_eq!(client.tracked_holds(), 0, "release stops renewal");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let keys: i64 = cmd(&mut conn, &["EXISTS", "wd:lease", "wd:reentrant"]).await;
    assert_eq!(keys, 0, "nothing renewed or re-created after release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_fires_when_the_key_is_deleted() {
    let s = server();
    let client = short_watchdog(&s).await;
    let mut conn = raw(&s).await;
    for lock in [client.lock("wd:del"), client.rlock("wd:del-r")] {
        let guard = lock.acquire().await.unwrap();
        let _: () = cmd(&mut conn, &["DEL", lock.name()]).await;
        within(Duration::from_secs(3), guard.lost()).await;
        assert!(guard.is_lost());
        assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_fires_when_someone_else_takes_the_lock() {
    let s = server();
    let client = short_watchdog(&s).await;
    let mut conn = raw(&s).await;
    let guard = client.lock("wd:taken").acquire().await.unwrap();
    let _: () = cmd(&mut conn, &["SET", "wd:taken", "intruder", "PX", "60000"]).await;
    within(Duration::from_secs(3), guard.lost()).await;
    let value: String = cmd(&mut conn, &["GET", "wd:taken"]).await;
    assert_eq!(value, "intruder", "renewal must not touch another holder's key");
    let pttl: i64 = cmd(&mut conn, &["PTTL", "wd:taken"]).await;
    assert!(pttl > 55_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_lease_reports_loss_when_its_validity_runs_out() {
    let s = server();
    let client = client(&s).await;
    let guard = client
        .lock("wd:fixed")
        .lease(Duration::from_millis(200))
        .acquire()
        .await
        .unwrap();
    within(Duration::from_secs(3), guard.lost()).await;
    assert!(guard.release().await.unwrap_err().kind().is_not_owned());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extend_moves_the_validity_deadline() {
    let s = server();
    let client = client(&s).await;
    let guard = client
        .lock("wd:ext")
        .lease(Duration::from_millis(300))
        .acquire()
        .await
        .unwrap();
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        guard.extend(Duration::from_millis(300)).await.unwrap();
    }
    assert!(!guard.is_lost());
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_extend_in_watchdog_mode_is_renewed_before_it_runs_out() {
    let s = server();
    // The default 30 s watchdog timeout: its next renewal would come 10 s after the acquire.
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    for lock in [client.lock("wd:short-extend"), client.rlock("wd:short-extend-r")] {
        let guard = lock.acquire().await.unwrap();
        guard.extend(Duration::from_millis(600)).await.unwrap();
        // Four times the new lease: the renewals (every 200 ms) set the watchdog timeout back.
        tokio::time::sleep(Duration::from_millis(2_400)).await;
        assert!(!guard.is_lost(), "{} lost after a short extend", lock.name());
        let pttl: i64 = cmd(&mut conn, &["PTTL", lock.name()]).await;
        assert!(
            pttl > 20_000,
            "{}: pttl {pttl}, renewed back to 30 s",
            lock.name()
        );
        guard.release().await.unwrap();
    }
}

/// Whether the owner's watchdog-mode hold `outer` on `name` is still held and renewed 2.4 s
/// after `shorten` set the shared hash's TTL to 600 ms through another of the owner's holds
/// (the default 30 s watchdog timeout: its next renewal was 10 s away).
async fn watchdog_hold_kept_after<F, Fut>(
    conn: &mut redis::aio::MultiplexedConnection,
    name: &str,
    outer: &redlatch::Guard,
    shorten: F,
) -> bool
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    shorten().await;
    tokio::time::sleep(Duration::from_millis(2_400)).await;
    let pttl: i64 = cmd(conn, &["PTTL", name]).await;
    !outer.is_lost() && pttl > 20_000
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_shorter_lease_never_outlives_its_watchdog_hold() {
    // A user trial: a watchdog-mode rlock hold expired 500 ms after the same owner re-entered
    // with a 500 ms lease (or extended, or partially released, such a hold), and another
    // client took the lock while the outer hold was still held.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let short = Duration::from_millis(600);

    let lock = client.rlock("wd:owner:reenter");
    let outer = lock.acquire().await.unwrap();
    let kept = watchdog_hold_kept_after(&mut conn, lock.name(), &outer, || async {
        let inner = lock.clone().lease(short).acquire().await.unwrap();
        inner.release().await.unwrap();
    })
    .await;
    assert!(kept, "a re-entry with a shorter lease and its release");
    assert!(client.rlock(lock.name()).try_acquire().await.unwrap().is_none());
    outer.release().await.unwrap();

    let lock = client.rlock("wd:owner:extend");
    let outer = lock.acquire().await.unwrap();
    let inner = lock
        .clone()
        .lease(Duration::from_secs(60))
        .acquire()
        .await
        .unwrap();
    let kept = watchdog_hold_kept_after(&mut conn, lock.name(), &outer, || async {
        inner.extend(short).await.unwrap();
    })
    .await;
    assert!(kept, "an extend of another hold to a shorter lease");
    // The inner hold shares the renewed hash: it lives on with the outer one.
    inner.release().await.unwrap();
    outer.release().await.unwrap();

    let rw = client.rw_lock("wd:owner:write");
    let outer = rw.write().acquire().await.unwrap();
    let kept = watchdog_hold_kept_after(&mut conn, rw.name(), &outer, || async {
        let inner = rw.write().lease(short).acquire().await.unwrap();
        inner.release().await.unwrap();
    })
    .await;
    assert!(kept, "a write lock re-entry with a shorter lease");
    assert!(client
        .rw_lock(rw.name())
        .write()
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    outer.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shorter_lease_set_while_a_renewal_is_in_flight_is_renewed_again() {
    // A user trial of the fix above: the re-entry brought a renewal forward at once, and the
    // inner release (TTL back to 600 ms) landed while that renewal was in flight; its answer
    // then set the next renewal a whole period (10 s) away, and the hold expired (8 of 29).
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let mut outers = Vec::new();
    for i in 0..12 {
        let lock = client.rlock(format!("wd:owner:race:{i}"));
        let outer = lock.acquire().await.unwrap();
        let inner = lock
            .clone()
            .lease(Duration::from_millis(600))
            .acquire()
            .await
            .unwrap();
        inner.release().await.unwrap();
        outers.push((lock, outer));
    }
    tokio::time::sleep(Duration::from_millis(2_400)).await;
    for (lock, outer) in outers {
        let pttl: i64 = cmd(&mut conn, &["PTTL", lock.name()]).await;
        assert!(!outer.is_lost() && pttl > 20_000, "{}: pttl {pttl}", lock.name());
        outer.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_racing_release_never_reports_loss_or_re_extends() {
    // Releases at every phase of the renewal cycle (every 40 ms), so some race a renewal in
    // flight. The lease (120 ms) leaves a stall of the test process up to ~80 ms without a
    // real expiry: with 30 ms (10 ms renewals) a busy 2-core CI machine let a hold expire for
    // real once, and the release said so, rightly.
    let s = server();
    let client = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(120))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    for i in 0..200 {
        let name = format!("wd:race:{}", i % 4);
        let guard = client.lock(name.clone()).acquire().await.unwrap();
        let ended = guard.ended();
        tokio::time::sleep(Duration::from_millis(i % 41)).await;
        guard.release().await.unwrap();
        assert!(!ended.await, "release reported as loss");
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(keys_but_latches(&mut conn).await, Vec::<String>::new());
    assert_eq!(client.tracked_holds(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_survives_transient_errors_then_reports_loss() {
    // Pausing the node stalls renewals; once it is back within the validity the hold lives on.
    let s = server();
    let client = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(900))
        .network_timeout(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    let guard = client.lock("wd:pause").acquire().await.unwrap();
    s.pause().unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    s.resume().unwrap();
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(!guard.is_lost());
    assert!(guard.owned().await.unwrap());
    // Now stall it past the validity: loss is reported even though Redis says nothing.
    s.pause().unwrap();
    within(Duration::from_secs(5), guard.lost()).await;
    s.resume().unwrap();
}

/// Acquires a lease lock and a reentrant lock of `client` on `runtime`, blocks that runtime's
/// one thread for 4 x the watchdog timeout with each held, and returns for each whether the
/// hold was still valid and owned afterwards.
fn held_through_a_blocked_runtime(runtime: &tokio::runtime::Runtime, client: &Client) -> Vec<bool> {
    runtime.block_on(async {
        let mut kept = Vec::new();
        for lock in [client.lock("rt:lease"), client.rlock("rt:reentrant")] {
            let guard = lock.acquire().await.unwrap();
            std::thread::sleep(Duration::from_millis(1_200)); // nothing else runs here meanwhile
            kept.push(!guard.is_lost() && guard.owned().await.unwrap_or(false));
            let _ = guard.release().await;
        }
        // A watchdog-mode permit too (a user trial of stop 38: a blocked Node event loop lost
        // it, and another process got the only permit).
        let permits = client.permit_semaphore("rt:permits");
        permits.try_set_permits(1).await.unwrap();
        let permit = permits.acquire(None).await.unwrap();
        std::thread::sleep(Duration::from_millis(1_200));
        let taken = permits.available().await.unwrap() == 0;
        kept.push(!permit.is_lost() && taken && permit.release().await.is_ok());
        kept
    })
}

// The Node addon's local engine runs on the JavaScript thread and renews through a client on
// its tokio thread (`Client::renew_through`), so a blocked event loop keeps its holds.
#[test]
fn renewals_through_another_runtime_keep_holds_while_this_one_is_blocked() {
    let s = server();
    let blocked = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let renewing = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let connect = |runtime: &tokio::runtime::Runtime| runtime.block_on(short_watchdog(&s));

    // Control: renewing on the blocked runtime itself, the holds expire meanwhile.
    let alone = connect(&blocked);
    assert_eq!(
        held_through_a_blocked_runtime(&blocked, &alone),
        [false, false, false]
    );

    let client = connect(&blocked);
    // A hold acquired before keeps its renewals here; each release stops the right one.
    let early = blocked.block_on(client.lock("rt:early").acquire()).unwrap();
    client.renew_through(connect(&renewing)).unwrap();
    blocked.block_on(async {
        let late = client.lock("rt:late").acquire().await.unwrap();
        assert_eq!(client.tracked_holds(), 2);
        early.release().await.unwrap();
        assert_eq!(client.tracked_holds(), 1);
        late.release().await.unwrap();
    });
    assert_eq!(client.tracked_holds(), 0);
    assert_eq!(
        held_through_a_blocked_runtime(&blocked, &client),
        [true, true, true]
    );
    assert_eq!(client.tracked_holds(), 0, "release stops renewal");

    // A renewer of other nodes, or a second one, is refused.
    let other = server();
    let stranger = renewing.block_on(short_watchdog(&other));
    let err = client.renew_through(stranger).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = client.renew_through(connect(&renewing)).unwrap_err();
    assert!(err.to_string().contains("already has a renewer"), "{err}");
    blocked.block_on(client.close());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_applied_after_the_loss_was_reported_leaves_no_key_behind() {
    // A user trial of stop 43: renewals queued while Redis was paused ran when it resumed, just
    // before the key would have expired on Redis' clock, after the client had reported the
    // loss: the key lived on, held by no one, for another whole watchdog timeout.
    let s = server();
    let watchdog = Duration::from_millis(6000);
    let client = Client::builder(&s.url())
        .watchdog_timeout(watchdog)
        .network_timeout(Duration::from_millis(1000))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let guard = client.lock("wd:late-renewal").acquire().await.unwrap();
    s.pause().unwrap();
    within(Duration::from_secs(15), guard.lost()).await;
    s.resume().unwrap(); // within the drift allowance: the queued renewals extend the key
    let started = std::time::Instant::now();
    let left = exists_after_cleanup(&mut conn, "wd:late-renewal").await;
    assert_eq!(
        left, 0,
        "the key lived on after the loss was reported (its TTL was renewed)"
    );
    assert!(started.elapsed() < watchdog / 2, "gone only by expiry");
    let e = guard.release().await.expect_err("lost");
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lock_lost_to_its_validity_is_deleted_by_its_release() {
    // A grant held up by a paused Redis applies later than the client counts its validity
    // from (the send): the client reports the loss while Redis keeps the key for up to the
    // pause longer. Its release says LockLost, and deletes the key (it sent nothing before).
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(5000))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let lock = client.lock("wd:late-grant").lease(Duration::from_millis(3000));
    s.pause().unwrap();
    let acquire = tokio::spawn(async move { lock.acquire().await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.resume().unwrap();
    let guard = acquire.await.unwrap().expect("granted when Redis resumed");
    within(Duration::from_secs(5), guard.lost()).await;
    let ttl: i64 = cmd(&mut conn, &["PTTL", "wd:late-grant"]).await;
    assert!(
        ttl > 500,
        "the key outlives the reported loss here (PTTL {ttl} ms)"
    );
    let e = guard.release().await.expect_err("lost");
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    let left: i64 = cmd(&mut conn, &["EXISTS", "wd:late-grant"]).await;
    assert_eq!(left, 0, "the release left the key for the rest of its TTL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_that_fail_at_once_are_retried_at_their_pace_not_in_a_loop() {
    // A user trial of stop 43: with Redis answering every renewal with an error at once (a
    // replica now: READONLY; or down: connection refused), the watchdog sent the retry again
    // at once, thousands of times a second per hold, until the loss.
    let s = server();
    let client = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(3000))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let guard = client.lock("wd:readonly").acquire().await.unwrap();
    // A replica of a server that does not exist: writes are refused with READONLY.
    let _: () = cmd(&mut conn, &["REPLICAOF", "127.0.0.1", "1"]).await;
    let before = script_calls(&mut conn).await;
    within(Duration::from_secs(10), guard.lost()).await;
    let sent = script_calls(&mut conn).await - before;
    let _: () = cmd(&mut conn, &["REPLICAOF", "NO", "ONE"]).await;
    // One renewal a second, then one every quarter period (250 ms) until the validity ends.
    assert!(sent < 40, "{sent} renewals sent while Redis refused them");
}
