//! The semaphore (RSemaphore) and the permit-expirable semaphore through the driver, on a real
//! redis-server: at most `permits` holders at any sampled moment across several clients,
//! waiters woken by releases, permits that come back after their holder dies, cancellation
//! that leaves nothing taken, and bad input refused with Redis untouched.

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Reason};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

async fn get(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Option<String> {
    cmd(conn, &["GET", key]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_most_permits_holders_at_any_moment() {
    const PERMITS: u64 = 3;
    let s = server();
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(client(&s).await);
    }
    assert!(clients[0]
        .semaphore("sem:pool")
        .try_set_permits(PERMITS)
        .await
        .unwrap());
    assert!(
        !clients[0].semaphore("sem:pool").try_set_permits(9).await.unwrap(),
        "set once"
    );
    let inside = Arc::new(AtomicI64::new(0));
    let most = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for t in 0..12 {
        let sem = clients[t % clients.len()].semaphore("sem:pool");
        let (inside, most) = (inside.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..15 {
                sem.acquire(1).await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                sem.release(1).await.unwrap();
            }
            assert_eq!(sem.held(), 0);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= PERMITS as i64,
        "{most} holders at once with {PERMITS} permits"
    );
    assert!(most >= 2, "the permits were shared ({most} at most at once)");
    assert_eq!(
        clients[0].semaphore("sem:pool").available().await.unwrap(),
        PERMITS
    );
}

#[tokio::test]
async fn a_release_wakes_a_waiter_on_another_client() {
    let s = server();
    let (a, b) = (client(&s).await, client(&s).await);
    let sem = a.semaphore("sem:wake");
    sem.try_set_permits(1).await.unwrap();
    sem.acquire(1).await.unwrap();
    let waiter = b.semaphore("sem:wake");
    let started = Instant::now();
    let waiting = tokio::spawn(async move {
        waiter.acquire(1).await.unwrap();
        (started.elapsed(), waiter.held())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "waits while no permit is free");
    sem.release(1).await.unwrap();
    let (waited, held) = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(held, 1);
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert_eq!(sem.available().await.unwrap(), 0);
}

#[tokio::test]
async fn wait_runs_out_and_try_acquire_never_waits() {
    let s = server();
    let c = client(&s).await;
    let sem = c.semaphore("sem:out").wait(Duration::from_millis(150));
    // Never set: 0 permits.
    assert!(!sem.try_acquire(1).await.unwrap());
    let err = sem.acquire(1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired, "{err}");
    sem.try_set_permits(2).await.unwrap();
    assert!(!sem.try_acquire(3).await.unwrap());
    assert!(sem.try_acquire(2).await.unwrap());
    assert_eq!(sem.held(), 2);
    let mut conn = raw(&s).await;
    assert_eq!(get(&mut conn, "sem:out").await.as_deref(), Some("0"));
}

#[tokio::test]
async fn a_cancelled_acquire_leaves_no_permit_taken() {
    let s = server();
    let c = client(&s).await;
    let sem = c.semaphore("sem:cancel");
    sem.try_set_permits(1).await.unwrap();
    sem.acquire(1).await.unwrap();
    let other = c.semaphore("sem:cancel");
    // Cancelled while waiting.
    let pending = tokio::time::timeout(Duration::from_millis(100), other.acquire(1)).await;
    assert!(pending.is_err(), "still waiting");
    sem.release(1).await.unwrap();
    // Cancelled with the attempt in flight, many times: whatever the attempts took is given
    // back in the background.
    for i in 0..120u64 {
        let attempt = other.acquire(1);
        let cut = Duration::from_micros(20 + (i * 37) % 900);
        if tokio::time::timeout(cut, attempt).await.is_ok() {
            other.release(1).await.unwrap();
        }
    }
    assert_eq!(other.held(), 0);
    // The undo runs in the background: give it a moment.
    let mut conn = raw(&s).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while get(&mut conn, "sem:cancel").await.as_deref() != Some("1") {
        assert!(
            Instant::now() < deadline,
            "permits leaked: {:?} in Redis",
            get(&mut conn, "sem:cancel").await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(sem.available().await.unwrap(), 1);
}

#[tokio::test]
async fn bad_input_is_refused_with_redis_untouched() {
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let sem = c.semaphore("sem:bad");
    sem.try_set_permits(2).await.unwrap();
    let mut before: Vec<String> = cmd(&mut conn, &["KEYS", "*"]).await;
    // try_set_permits leaves a short-lived request latch: latches are not compared.
    before.retain(|k| !k.starts_with("redisson_unlock_latch:") && !k.starts_with("redlatch_acquire_latch:"));
    let too_many = i32::MAX as u64 + 1;
    for err in [
        sem.try_set_permits(0).await.unwrap_err(),
        sem.try_set_permits(too_many).await.unwrap_err(),
        sem.acquire(0).await.unwrap_err(),
        sem.try_acquire(too_many).await.unwrap_err(),
        sem.release(0).await.unwrap_err(),
        c.semaphore("").acquire(1).await.unwrap_err(),
        c.permit_semaphore("").try_set_permits(1).await.unwrap_err(),
        c.permit_semaphore("p").try_set_permits(0).await.unwrap_err(),
        c.permit_semaphore("p").release("not-an-id").await.unwrap_err(),
        c.permit_semaphore("p")
            .acquire(Some(Duration::ZERO))
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(!err.message().contains("not-an-id"), "ids are not echoed: {err}");
    }
    // Releasing more than this handle holds: NotOwned, nothing sent.
    let err = sem.release(1).await.unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::NotOwned, Some(Reason::NeverHeld)),
        "{err}"
    );
    sem.acquire(1).await.unwrap();
    let err = sem.release(2).await.unwrap_err();
    assert_eq!(err.reason(), Some(Reason::NeverHeld), "{err}");
    assert_eq!(get(&mut conn, "sem:bad").await.as_deref(), Some("1"));
    sem.release(1).await.unwrap();
    let mut after: Vec<String> = cmd(&mut conn, &["KEYS", "*"]).await;
    after.retain(|k| !k.starts_with("redisson_unlock_latch:") && !k.starts_with("redlatch_acquire_latch:"));
    assert_eq!(after, before);
    assert_eq!(get(&mut conn, "sem:bad").await.as_deref(), Some("2"));
}

#[tokio::test]
async fn quorum_clients_are_refused() {
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let q = Client::quorum(&urls).await.unwrap();
    for err in [
        q.semaphore("s").try_set_permits(1).await.unwrap_err(),
        q.permit_semaphore("p").available().await.map(|_| ()).unwrap_err(),
        q.count_down_latch("l").count_down().await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(
            err.message().contains("single-node, Cluster or Sentinel"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn permits_have_redisson_ids_and_are_released_by_id() {
    let s = server();
    let (a, b) = (client(&s).await, client(&s).await);
    let ps = a.permit_semaphore("ps:ids");
    assert!(ps.try_set_permits(2).await.unwrap());
    let p1 = ps.acquire(Some(Duration::from_secs(30))).await.unwrap();
    let p2 = ps.acquire(None).await.unwrap();
    for p in [&p1, &p2] {
        assert_eq!(p.id().len(), 32);
        assert!(p
            .id()
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
    assert!(!format!("{p1:?}").contains(p1.id()), "Debug hides the id");
    assert!(p2.is_renewed() && !p1.is_renewed());
    assert_eq!(p1.lease(), Duration::from_secs(30));
    assert!(ps.try_acquire(None).await.unwrap().is_none());
    // Another client releases p1 by its id; p1's own release then finds it gone (`deleted`,
    // as a lock whose key another client deleted; `never_held` until stop 35).
    b.permit_semaphore("ps:ids").release(p1.id()).await.unwrap();
    let err = p1.release().await.unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::NotOwned, Some(Reason::Deleted)),
        "{err}"
    );
    let err = b
        .permit_semaphore("ps:ids")
        .release(&"0".repeat(32))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Some(Reason::NeverHeld), "{err}");
    p2.release().await.unwrap();
    let err = p2.release().await.unwrap_err();
    assert_eq!(err.reason(), Some(Reason::NeverHeld), "{err}");
    assert_eq!(ps.available().await.unwrap(), 2);
}

#[tokio::test]
async fn a_permit_comes_back_when_its_lease_ends_and_wakes_a_waiter() {
    let s = server();
    let c = client(&s).await;
    let ps = c.permit_semaphore("ps:lease");
    ps.try_set_permits(1).await.unwrap();
    let held = ps.acquire(Some(Duration::from_millis(300))).await.unwrap();
    let started = Instant::now();
    // The waiter sleeps until the earliest expiry (nobody publishes a lapse).
    let next = ps.acquire(Some(Duration::from_secs(5))).await.unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    let err = held.release().await.unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::LockLost, Some(Reason::Expired)),
        "{err}"
    );
    next.release().await.unwrap();
    assert_eq!(ps.available().await.unwrap(), 1);
}

#[tokio::test]
async fn the_watchdog_keeps_a_permit_past_its_timeout_until_release() {
    let s = server();
    let c = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(600))
        .connect()
        .await
        .unwrap();
    let ps = c.permit_semaphore("ps:watchdog");
    ps.try_set_permits(1).await.unwrap();
    let permit = ps.acquire(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(!permit.is_lost());
    assert_eq!(ps.available().await.unwrap(), 0, "renewed: not given back");
    permit.release().await.unwrap();
    assert_eq!(ps.available().await.unwrap(), 1);
}

/// A holder that dies: its client and every task of it end without releasing (a runtime
/// shut down with the permits forgotten).
fn die_holding(url: String, name: &'static str, count: usize, lease: Option<Duration>) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let c = Client::builder(&url)
                .watchdog_timeout(Duration::from_millis(600))
                .connect()
                .await
                .unwrap();
            let ps = c.permit_semaphore(name);
            for _ in 0..count {
                std::mem::forget(ps.acquire(lease).await.unwrap());
            }
        });
        rt.shutdown_background();
    })
    .join()
    .unwrap();
}

#[tokio::test]
async fn a_dead_holders_permits_come_back() {
    let s = server();
    let c = client(&s).await;
    let ps = c.permit_semaphore("ps:dead");
    ps.try_set_permits(3).await.unwrap();
    die_holding(s.url(), "ps:dead", 2, None);
    die_holding(s.url(), "ps:dead", 1, Some(Duration::from_millis(400)));
    assert_eq!(ps.available().await.unwrap(), 0, "all taken by the dead");
    // Watchdog-mode permits stop being renewed: back within the watchdog timeout.
    let started = Instant::now();
    let mut taken = Vec::new();
    for _ in 0..3 {
        taken.push(
            ps.acquire_with_wait(None, Some(Duration::from_secs(5)))
                .await
                .unwrap(),
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    for p in taken {
        p.release().await.unwrap();
    }
    assert_eq!(ps.available().await.unwrap(), 3);
}

#[tokio::test]
async fn close_releases_permits_and_stops_waits() {
    let s = server();
    let c = client(&s).await;
    let ps = c.permit_semaphore("ps:close");
    ps.try_set_permits(1).await.unwrap();
    let permit = ps.acquire(None).await.unwrap();
    let sem = c.semaphore("sem:close");
    let waiting = tokio::spawn(async move { sem.acquire(1).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    c.close().await;
    let err = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert_eq!(permit.release().await.unwrap_err().kind(), ErrorKind::Connection);
    let other = client(&s).await;
    assert_eq!(
        other.permit_semaphore("ps:close").available().await.unwrap(),
        1,
        "released by close"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_release_whose_outcome_is_unknown_goes_on_in_the_background() {
    // `Permit::release_final` (a binding's scope end, which cannot call again): the permit is
    // given back once Redis is reachable again, not left taken for its whole lease.
    let s = server();
    let relay = common::relay::Relay::start(s.port()).await;
    let through = Client::builder(&relay.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .expect("connect");
    let sem = through.permit_semaphore("psem:final");
    assert!(sem.try_set_permits(1).await.unwrap());
    let permit = sem.acquire(Some(Duration::from_secs(30))).await.unwrap();
    let direct = client(&s).await.permit_semaphore("psem:final");
    assert_eq!(direct.available().await.unwrap(), 0);

    relay.blackhole();
    let e = permit.release_final().await.expect_err("no reply");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    relay.restore();
    let end = Instant::now() + Duration::from_secs(5);
    while direct.available().await.unwrap() == 0 {
        assert!(Instant::now() < end, "the permit stayed taken");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_final_release_whose_outcome_is_unknown_is_settled_once() {
    // `Semaphore::release_final` (a binding's scope end): the permits leave the handle's
    // count at once, and the release is settled in the background by its own request id, so
    // a release that applied is never applied twice and one that did not reach Redis still
    // does. Before, the scope end kept the permits counted while its release applied late,
    // and the handle's next release (a C++ destructor) gave them back again: 4 of 3.
    let s = server();
    let relay = common::relay::Relay::start(s.port()).await;
    let through = Client::builder(&relay.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .expect("connect");
    let direct = client(&s).await.semaphore("sem:final");
    let sem = through.semaphore("sem:final");
    assert!(sem.try_set_permits(3).await.unwrap());

    // Applied, its reply too late: given back once. (Its script cached first: an EVALSHA's
    // NOSCRIPT answer would come too late, and it would not apply at all.)
    sem.acquire(1).await.unwrap();
    sem.release(1).await.unwrap();
    sem.acquire(1).await.unwrap();
    relay.delay_replies(Duration::from_millis(600));
    let e = sem.release_final(1).await.expect_err("the reply came too late");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert_eq!(sem.held(), 0, "the scope gave its permit up");
    // The background retries time out on the delayed replies (their latch lives 31 s) until
    // the delay ends; the first answered one ends them. A reply delayed before that still
    // comes 600 ms late, ahead of any later call on the connection (an acquire timed out
    // behind one in a CI run), so the calls below wait for it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    relay.delay_replies(Duration::ZERO);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(direct.available().await.unwrap(), 3);
    let e = sem.release(1).await.expect_err("nothing held");
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::NeverHeld))
    );
    assert_eq!(direct.available().await.unwrap(), 3, "given back once");

    // Lost on the way: given back by the background retry.
    sem.acquire(1).await.unwrap();
    relay.blackhole();
    let e = sem.release_final(1).await.expect_err("no reply");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    relay.restore();
    let end = Instant::now() + Duration::from_secs(5);
    while direct.available().await.unwrap() < 3 {
        assert!(Instant::now() < end, "the permit stayed taken");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(direct.available().await.unwrap(), 3, "given back once");
    assert_eq!(sem.held(), 0);
}

#[tokio::test]
async fn close_gives_back_the_permits_a_handle_still_holds() {
    // Found by a user trial (stop 35, Node): close() left a semaphore handle's permits taken
    // for good (the count has no TTL), and the closed client could no longer release them.
    let s = server();
    let closing = client(&s).await;
    let sem = closing.semaphore("sem:close");
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(2).await.unwrap();
    let kept = sem.clone();
    let direct = client(&s).await.semaphore("sem:close");
    assert_eq!(direct.available().await.unwrap(), 1);
    closing.close().await;
    assert_eq!(direct.available().await.unwrap(), 3, "given back at close");
    assert_eq!(kept.held(), 0);
    let e = kept.release(1).await.expect_err("closed");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert_eq!(direct.available().await.unwrap(), 3);
}

#[tokio::test]
async fn close_gives_back_the_permits_of_handles_dropped_while_holding() {
    // A Node user trial (stop 44): a handle collected while it counted permits (as a dropped
    // Rust or collected Python handle) left them taken even after close(), and no other handle
    // could release them (each counts only what it acquired).
    let s = server();
    let closing = client(&s).await;
    let direct = client(&s).await.semaphore("sem:dropped");
    assert!(direct.try_set_permits(5).await.unwrap());
    for n in [1, 2] {
        let sem = closing.semaphore("sem:dropped");
        sem.acquire(n).await.unwrap();
        drop(sem);
    }
    let released = closing.semaphore("sem:dropped");
    released.acquire(1).await.unwrap();
    released.release(1).await.unwrap();
    drop(released);
    assert_eq!(
        direct.available().await.unwrap(),
        2,
        "taken while the client lives"
    );
    closing.close().await;
    assert_eq!(direct.available().await.unwrap(), 5, "given back at close, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_deleted_while_held_is_not_released_fine_by_a_retry_after_a_lost_connection() {
    // A Python user trial of stop 46: the release's first try met a killed connection, and the
    // retry that found no such id took that for the first try's release: "released", for a
    // permit whose entry a restart without persistence had deleted. Its latch tells now.
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let sem = c.permit_semaphore("psem:killed");
    assert!(sem.try_set_permits(2).await.unwrap());
    for round in 0..3 {
        let held = sem.acquire(Some(Duration::from_secs(30))).await.unwrap();
        let _: i64 = cmd(&mut conn, &["DEL", "psem:killed", "{psem:killed}:timeout"]).await;
        let _: i64 = cmd(&mut conn, &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]).await;
        let e = within(Duration::from_secs(10), held.release())
            .await
            .expect_err("gone");
        assert_eq!(
            (e.kind(), e.reason()),
            (ErrorKind::NotOwned, Some(Reason::Deleted)),
            "round {round}: {e}"
        );
        assert!(sem.try_set_permits(2).await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_known_lost_is_refused_at_once_even_by_a_paused_redis_and_comes_back() {
    // A Node family trial of stop 46: with `lost` already true, release() went to Redis and,
    // Redis paused, failed with `Connection` after a network timeout instead of `LockLost`.
    let s = server();
    let c = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(2000))
        .connect()
        .await
        .unwrap();
    let sem = c.permit_semaphore("psem:known-lost");
    assert!(sem.try_set_permits(1).await.unwrap());
    let permit = sem.acquire(Some(Duration::from_millis(100))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(permit.is_lost());
    s.pause().unwrap();
    let started = Instant::now();
    let e = within(Duration::from_secs(10), permit.release())
        .await
        .expect_err("lost");
    let took = started.elapsed();
    s.resume().unwrap();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::LockLost, Some(Reason::Expired)),
        "{e}"
    );
    assert!(
        took < Duration::from_millis(1000),
        "at once, not after a round trip: {took:?}"
    );
    let direct = client(&s).await.permit_semaphore("psem:known-lost");
    assert_eq!(direct.available().await.unwrap(), 1, "given back (or reclaimed)");
}

#[tokio::test]
async fn a_permit_gone_while_held_says_why() {
    // Found by a user trial (stop 35): a held permit whose entry was deleted (a restart without
    // persistence does that) was reported `never_held`, which means released before; a lock
    // says `deleted` for the same.
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let sem = c.permit_semaphore("psem:gone");
    assert!(sem.try_set_permits(2).await.unwrap());
    let deleted = sem.acquire(Some(Duration::from_secs(30))).await.unwrap();
    let _: i64 = cmd(&mut conn, &["DEL", "psem:gone", "{psem:gone}:timeout"]).await;
    let e = deleted.release().await.expect_err("gone");
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::Deleted)),
        "{e}"
    );
    let e = deleted.release().await.expect_err("released before");
    assert_eq!(e.reason(), Some(Reason::NeverHeld), "{e}");

    assert!(sem.try_set_permits(1).await.unwrap());
    let expired = sem.acquire(Some(Duration::from_millis(200))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let other = sem.acquire(Some(Duration::from_secs(30))).await.unwrap(); // reclaims it
    let e = expired.release().await.expect_err("reclaimed");
    // Its fixed lease had ended: a loss known before the call, as for a lock released late.
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::LockLost, Some(Reason::Expired)),
        "{e}"
    );
    other.release().await.unwrap();
    // The same when Redis still has its entry (not reclaimed yet).
    let late = sem.acquire(Some(Duration::from_millis(100))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = late.release().await.expect_err("lease over");
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::LockLost, Some(Reason::Expired)),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_release_held_up_past_its_latch_still_lands() {
    // Found by the re-trial of stop 35 (Node's tokio engine): a scope-end release sent while
    // Redis was paused for longer than the release latch lives was never applied: its
    // connection was closed a connect timeout after the call was abandoned (Redis drops a
    // paused client's queued commands with it), and the background retries, which may not
    // outlive the latch, gave up meanwhile. The connection now lingers, so the release lands.
    let s = server();
    let mut admin = raw(&s).await;
    let through = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .expect("connect");
    let sem = through.semaphore("sem:held-up");
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(1).await.unwrap();
    sem.release(1).await.unwrap(); // its script cached
    sem.acquire(1).await.unwrap();
    let _: () = cmd(&mut admin, &["CLIENT", "PAUSE", "2500"]).await;
    let e = sem.release_final(1).await.expect_err("paused");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let direct = client(&s).await.semaphore("sem:held-up");
    assert_eq!(
        direct.available().await.unwrap(),
        3,
        "the release was thrown away"
    );
    assert_eq!(sem.held(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_during_a_pause_still_gives_the_permits_back() {
    // Found by the re-trial of stop 35 (N5, Node): close() while Redis was paused past the
    // network timeout gave nothing back; its release timed out, the connection closed with
    // the client, and Redis threw the queued release away with it. Now the connection lingers
    // (connection.rs, `linger_after_close`) and the release applies when the pause ends.
    let s = server();
    let closing = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let sem = closing.semaphore("sem:close-paused");
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(2).await.unwrap();
    let _: () = cmd(&mut conn, &["CLIENT", "PAUSE", "1200"]).await;
    within(Duration::from_secs(5), closing.close()).await;
    // This test's connection is paused too (its replies would time out): a new one after.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let mut conn = raw(&s).await;
    let available = value_once(&mut conn, "sem:close-paused", "3", 150).await;
    assert_eq!(
        available, "3",
        "the permits given back at close applied when the pause ended"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_retried_after_its_latch_expired_never_gives_permits_back_twice() {
    // A user trial of stop 42: release(1) timed out on a paused Redis (it applied when Redis
    // ran again), and a retry 3 s later, past the latch, gave the permit back a second time:
    // a semaphore of 3 had 4. A retry while the latch lives stays exact. (The latch lives the
    // watchdog timeout plus a network timeout: 1.3 s here.)
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .watchdog_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    for (name, retry_after) in [
        ("sem:retry:soon", Duration::ZERO),
        ("sem:retry:late", Duration::from_millis(2000)),
    ] {
        let sem = client.semaphore(name);
        assert!(sem.try_set_permits(3).await.unwrap());
        sem.acquire_with_wait(1, Some(Duration::ZERO)).await.unwrap();
        s.pause().unwrap();
        let first = within(Duration::from_secs(10), sem.release(1)).await.unwrap_err();
        s.resume().unwrap();
        assert_eq!(first.kind(), ErrorKind::Connection, "{first}");
        tokio::time::sleep(retry_after).await;
        let retry = within(Duration::from_secs(10), sem.release(1)).await;
        if retry_after.is_zero() {
            retry.expect("a retry while the latch lives is exact");
        } else {
            let e = retry.expect_err("a retry past the latch is not sent");
            assert_eq!(e.kind(), ErrorKind::NotOwned, "{e}");
            assert_eq!(e.reason(), Some(Reason::Expired), "{e}");
            assert!(e.message().contains("latch has expired"), "{e}");
        }
        assert_eq!(
            get(&mut conn, name).await.as_deref(),
            Some("3"),
            "{name}: given back once"
        );
        assert_eq!(sem.held(), 0, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_retried_after_an_unknown_outcome_is_ok() {
    // A user trial of stop 42: release() timed out on a paused Redis and applied when it ran
    // again; the caller's retry said the permit was never held.
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let permits = client.permit_semaphore("permit:retry");
    assert!(permits.try_set_permits(2).await.unwrap());
    let permit = permits
        .acquire_with_wait(Some(Duration::from_secs(30)), Some(Duration::ZERO))
        .await
        .unwrap();
    s.pause().unwrap();
    let first = within(Duration::from_secs(10), permit.release())
        .await
        .unwrap_err();
    s.resume().unwrap();
    assert_eq!(first.kind(), ErrorKind::Connection, "{first}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    within(Duration::from_secs(10), permit.release())
        .await
        .expect("the earlier release gave it back");
    assert_eq!(permits.available().await.unwrap(), 2);
}
