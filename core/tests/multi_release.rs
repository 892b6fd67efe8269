//! The release of a multi-lock taken by one script: one `multi_release` request for every
//! member, each member's hold settled from its own code in the reply by the rules of a release
//! alone (retryable with the same latch after an unknown outcome, a lost member reported).

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Reason};
use std::time::Duration;

async fn exists(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {
    cmd::<i64>(conn, &["EXISTS", key]).await == 1
}

#[tokio::test]
async fn a_one_script_set_is_released_in_one_request() {
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let multi = c
        .multi_lock(vec![c.lock("{m1}:a"), c.rlock("{m1}:b")])
        .unwrap()
        .lease(Duration::from_secs(10));
    // The first round loads the scripts (NOSCRIPT, then EVAL): not counted.
    multi.acquire().await.unwrap().release().await.unwrap();
    let guard = multi.acquire().await.unwrap();
    let before = script_calls(&mut conn).await;
    guard.release().await.unwrap();
    assert_eq!(
        script_calls(&mut conn).await - before,
        1,
        "one request for both members"
    );
    assert!(!exists(&mut conn, "{m1}:a").await && !exists(&mut conn, "{m1}:b").await);
    assert!(guard.guards().iter().all(|g| !g.is_held()));
    let again = guard.release().await.unwrap_err();
    assert_eq!(again.reason(), Some(Reason::NeverHeld), "{again}");
}

/// The release reached Redis only after the caller gave up (Redis paused): the retry gets
/// each member's first answer back from its latch; a reentrant member re-entered by the set
/// is decremented once, not twice, whether the retry is the multi-guard's or the member's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_late_applied_release_is_exact() {
    let s = server();
    let c = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let r = c.rlock("{m2}:r").lease(Duration::from_secs(20));
    let multi = c
        .multi_lock(vec![c.lock("{m2}:l"), r.clone()])
        .unwrap()
        .lease(Duration::from_secs(20));
    multi.acquire().await.unwrap().release().await.unwrap();
    let outer = r.acquire().await.unwrap();
    for own_retry in [false, true] {
        let guard = multi.acquire().await.unwrap();
        assert_eq!(r.hold_count().await.unwrap(), 2);
        s.pause().unwrap();
        let err = within(Duration::from_secs(5), guard.release()).await;
        s.resume().unwrap();
        assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
        assert!(
            guard.guards().iter().all(|g| g.is_held()),
            "an unknown outcome leaves every member held"
        );
        assert!(
            !exists(&mut conn, "{m2}:l").await,
            "the first attempt applied late"
        );
        assert_eq!(r.hold_count().await.unwrap(), 1);
        if own_retry {
            for member in guard.guards() {
                member.release().await.expect("replayed from the member's latch");
            }
        } else {
            guard.release().await.expect("replayed from the members' latches");
        }
        assert_eq!(r.hold_count().await.unwrap(), 1, "decremented once, not twice");
        assert!(outer.owned().await.unwrap());
    }
    outer.release().await.unwrap();
    assert!(keys_but_latches(&mut conn).await.is_empty());
}

/// A member lost while held reports as a release alone would; the others are released.
#[tokio::test]
async fn a_member_lost_meanwhile_is_reported_and_the_rest_released() {
    let s = server();
    let c = client(&s).await;
    let other = client(&s).await;
    let mut conn = raw(&s).await;
    let multi = c
        .multi_lock_names(["{m3}:a", "{m3}:b", "{m3}:c"])
        .unwrap()
        .lease(Duration::from_secs(10));
    let guard = multi.acquire().await.unwrap();
    let _: i64 = cmd(&mut conn, &["DEL", "{m3}:a"]).await;
    let _: i64 = cmd(&mut conn, &["DEL", "{m3}:c"]).await;
    let theirs = other.lock("{m3}:c").try_acquire().await.unwrap().unwrap();
    let err = guard.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwned, "{err}");
    assert_eq!(
        err.reason(),
        Some(Reason::Deleted),
        "the first member's error: {err}"
    );
    assert!(
        !exists(&mut conn, "{m3}:b").await,
        "the member still held was released"
    );
    assert!(theirs.owned().await.unwrap(), "another owner's key is left alone");
    for member in guard.guards() {
        let again = member.release().await.unwrap_err();
        assert_eq!(
            again.reason(),
            Some(Reason::NeverHeld),
            "every member settled: {again}"
        );
    }
    theirs.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_release_of_a_set_lost_to_its_validity_deletes_its_lease_members() {
    // A grant held up by a paused Redis starts its TTL later than the client counts the
    // validity from: the set is reported lost while Redis keeps the members' keys (stop 43).
    let s = server();
    let c = Client::builder(&s.url())
        .network_timeout(Duration::from_millis(5000))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let multi = c
        .multi_lock(vec![c.lock("{m5}:a"), c.lock("{m5}:b")])
        .unwrap()
        .lease(Duration::from_millis(3000));
    multi.acquire().await.unwrap().release().await.unwrap(); // scripts loaded
    s.pause().unwrap();
    let acquire = tokio::spawn(async move { multi.acquire().await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.resume().unwrap();
    let guard = acquire.await.unwrap().expect("granted when Redis resumed");
    within(Duration::from_secs(5), guard.guards()[0].lost()).await;
    assert!(exists(&mut conn, "{m5}:a").await && exists(&mut conn, "{m5}:b").await);
    let e = guard.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert!(!exists(&mut conn, "{m5}:a").await, "member a left behind");
    assert!(!exists(&mut conn, "{m5}:b").await, "member b left behind");
}
