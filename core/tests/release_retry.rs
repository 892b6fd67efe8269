//! A release whose outcome is unknown (Redis unreachable, the reply lost) keeps the hold: the
//! caller can release again once Redis is back, and a dropped guard keeps trying in the
//! background within its validity (issue #10, item 2). Retries are exact both when the first
//! attempt never arrived (traffic dropped) and when it applied late (Redis paused).

mod common;
use common::relay::Relay;
use common::*;
use redlatch::{Client, ErrorKind, Guard};
use std::time::Duration;

async fn through(relay: &Relay) -> Client {
    Client::builder(&relay.url())
        .network_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap()
}

/// Loads the release scripts into the server's cache, so a request sent while the server is
/// paused is one `EVALSHA` that applies when it resumes (a `NOSCRIPT` answer would come after
/// the call's timeout, and its `EVAL` would never be sent).
async fn warm_up(client: &Client) {
    for lock in [client.lock("warm-up"), client.rlock("warm-up")] {
        lock.acquire().await.unwrap().release().await.unwrap();
    }
}

async fn exists(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {
    cmd::<i64>(conn, &["EXISTS", key]).await == 1
}

/// Releases `guard` and drops it, whatever the outcome (as a caller that gives up would).
async fn release_and_give_up(guard: Guard) -> redlatch::Result<()> {
    guard.release().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_guard_whose_release_failed_is_released_in_the_background() {
    let s = server();
    let relay = Relay::start(s.port()).await;
    let client = through(&relay).await;
    let mut conn = raw(&s).await;
    for lock in [client.lock("bg:lease"), client.rlock("bg:rlock")] {
        let name = lock.name().to_owned();
        let guard = lock.lease(Duration::from_secs(20)).acquire().await.unwrap();
        relay.blackhole();
        let err = within(Duration::from_secs(5), release_and_give_up(guard))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
        relay.restore();
        // Never sent (the relay dropped it), so the key is still there until a retry lands.
        let mut gone = false;
        for _ in 0..100 {
            if !exists(&mut conn, &name).await {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            gone,
            "{name}: the background retry released it well within its 20 s lease"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_again_after_the_network_is_back() {
    let s = server();
    let relay = Relay::start(s.port()).await;
    let client = through(&relay).await;
    let mut conn = raw(&s).await;

    // Lease lock, first attempt lost on the way.
    let g = client
        .lock("rr:lease")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    relay.blackhole();
    let err = within(Duration::from_secs(5), g.release()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(g.is_held(), "an unknown outcome leaves the guard held");
    relay.restore();
    assert!(exists(&mut conn, "rr:lease").await);
    g.release().await.expect("the second release releases it");
    assert!(!exists(&mut conn, "rr:lease").await);
    let again = g.release().await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::NotOwned);
    assert_eq!(again.reason(), Some(redlatch::Reason::NeverHeld), "at most once");

    // Reentrant, nested: the inner release is retried and decrements exactly once.
    let lock = client.rlock("rr:rlock").lease(Duration::from_secs(20));
    let outer = lock.acquire().await.unwrap();
    let inner = lock.acquire().await.unwrap();
    relay.blackhole();
    assert!(within(Duration::from_secs(5), inner.release()).await.is_err());
    relay.restore();
    inner.release().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    outer.release().await.unwrap();
    assert!(!exists(&mut conn, "rr:rlock").await);
}

/// The first attempt arrives after the caller gave up on it (Redis was paused): the retry
/// must not count it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_late_applied_release_is_exact() {
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    warm_up(&client).await;
    let mut conn = raw(&s).await;

    let g = client
        .lock("late:lease")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    s.pause().unwrap();
    let err = within(Duration::from_secs(5), g.release()).await;
    s.resume().unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
    assert!(
        !exists(&mut conn, "late:lease").await,
        "the first attempt applied late"
    );
    g.release()
        .await
        .expect("the earlier attempt deleted it: released (its latch says so)");
    assert!(!exists(&mut conn, "late:lease").await);

    let lock = client.rlock("late:rlock").lease(Duration::from_secs(20));
    let outer = lock.acquire().await.unwrap();
    let inner = lock.acquire().await.unwrap();
    s.pause().unwrap();
    let err = within(Duration::from_secs(5), inner.release()).await;
    s.resume().unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
    assert_eq!(
        lock.hold_count().await.unwrap(),
        1,
        "the first attempt applied late"
    );
    inner.release().await.expect("replayed from the release latch");
    assert_eq!(lock.hold_count().await.unwrap(), 1, "decremented once, not twice");
    assert!(outer.owned().await.unwrap());
    outer.release().await.unwrap();
    assert!(!exists(&mut conn, "late:rlock").await);
}

/// The first attempt never arrived and the hold was then lost (here: deleted and taken by
/// another client, as after a restart without persistence). The retry must not count the
/// other owner's key as "released by my first attempt": the holder's section may have
/// overlapped the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_that_finds_another_owner_is_not_released() {
    let s = server();
    let relay = Relay::start(s.port()).await;
    let client = through(&relay).await;
    let other = common::client(&s).await;
    let mut conn = raw(&s).await;
    let g = client
        .lock("rt:taken")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    relay.blackhole();
    let err = within(Duration::from_secs(5), g.release()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    relay.restore();
    let _: i64 = cmd(&mut conn, &["DEL", "rt:taken"]).await;
    let theirs = other.lock("rt:taken").try_acquire().await.unwrap().unwrap();
    let err = g.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwned, "{err}");
    assert_eq!(err.reason(), Some(redlatch::Reason::Taken));
    assert!(
        theirs.owned().await.unwrap(),
        "the other owner's key is untouched"
    );
    theirs.release().await.unwrap();
}

/// A lease release's latch lives two network timeouts (at least 1 s): a retry later than
/// that, after a first attempt that applied late, cannot tell "released by me" from "lost",
/// and says so rather than guess.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_retry_past_the_latch_says_it_cannot_tell() {
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    warm_up(&client).await;
    let g = client
        .lock("rt:late")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    s.pause().unwrap();
    let err = within(Duration::from_secs(5), g.release()).await;
    s.resume().unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
    let mut conn = raw(&s).await;
    assert!(
        !exists(&mut conn, "rt:late").await,
        "the first attempt applied late"
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let err = g.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwned, "{err}");
    assert_eq!(err.reason(), Some(redlatch::Reason::Deleted));
    assert!(err.to_string().contains("may have released it"), "{err}");
}

/// A semaphore release whose first attempt applied after the caller gave up (Redis paused):
/// the caller's retry sends the same request id again, and its latch says it applied, so
/// the permits are added once, not twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_release_retried_after_a_late_applied_attempt_adds_once() {
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let sem = client.semaphore("late:sem");
    sem.try_set_permits(3).await.unwrap();
    // Loads the release script, so the paused request is one EVALSHA that applies at resume.
    sem.acquire(1).await.unwrap();
    sem.release(1).await.unwrap();
    sem.acquire(2).await.unwrap();
    s.pause().unwrap();
    let err = within(Duration::from_secs(5), sem.release(2)).await;
    s.resume().unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
    assert_eq!(
        sem.held(),
        2,
        "an unknown outcome leaves the permits counted as held"
    );
    assert_eq!(
        cmd::<String>(&mut conn, &["GET", "late:sem"]).await,
        "3",
        "the first attempt applied late"
    );
    sem.release(2).await.expect("the retry replays the first attempt");
    assert_eq!(
        cmd::<String>(&mut conn, &["GET", "late:sem"]).await,
        "3",
        "added once, not twice"
    );
    assert_eq!(sem.held(), 0);
}

/// On a server whose script cache is empty (fresh, restarted), a release sent while it is
/// stopped applies when it resumes: the first call of a script on a connection goes by
/// source. Before stop 36 it went as an `EVALSHA`, answered `NOSCRIPT` after the call had
/// given up, and the `EVAL` that should have followed was never sent: the permits stayed
/// taken (stop 35's N2, found with a scope-end release).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_sent_while_a_fresh_server_is_stopped_applies_when_it_resumes() {
    let s = server();
    let client = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SCRIPT", "FLUSH"]).await;
    let sem = client.semaphore("fresh:sem");
    sem.try_set_permits(3).await.unwrap();
    sem.acquire(2).await.unwrap();
    s.pause().unwrap();
    let err = within(Duration::from_secs(5), sem.release(2)).await;
    s.resume().unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
    let available = value_once(&mut conn, "fresh:sem", "3", 100).await;
    assert_eq!(
        available, "3",
        "the release held up by the stop applied when it resumed"
    );
}
