//! Reentrant lock semantics (Redisson RLock layout) on a real Redis.

mod common;
use common::*;
use redlatch::ErrorKind;
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test]
async fn reentry_counts_holds_in_a_redisson_hash() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.rlock("acct:1").lease(Duration::from_secs(20));
    let owner = lock.owner_id().unwrap();
    assert!(owner.starts_with(client.id()));
    let outer = lock.acquire().await.unwrap();
    let inner = lock.clone().acquire().await.unwrap();
    let third = lock.try_acquire().await.unwrap().expect("re-entry never waits");
    let hash: HashMap<String, i64> = cmd(&mut conn, &["HGETALL", "acct:1"]).await;
    assert_eq!(hash, HashMap::from([(owner.clone(), 3)]));
    assert_eq!(lock.hold_count().await.unwrap(), 3);
    third.release().await.unwrap();
    inner.release().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    let pttl: i64 = cmd(&mut conn, &["PTTL", "acct:1"]).await;
    assert!(pttl > 15_000, "partial release restores the lease: {pttl}");
    outer.release().await.unwrap();
    let exists: i64 = cmd(&mut conn, &["EXISTS", "acct:1"]).await;
    assert_eq!(exists, 0);
}

#[tokio::test]
async fn other_owners_contend() {
    let s = server();
    let client = client(&s).await;
    let mine = client.rlock("acct:2").lease(Duration::from_secs(10));
    let theirs = client.rlock("acct:2").lease(Duration::from_secs(10));
    assert_ne!(mine.owner_id(), theirs.owner_id());
    let g = mine.acquire().await.unwrap();
    assert!(theirs.try_acquire().await.unwrap().is_none());
    let err = theirs
        .clone()
        .wait(Duration::from_millis(200))
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired);
    assert_eq!(theirs.hold_count().await.unwrap(), 0);
    g.release().await.unwrap();
    assert!(theirs.try_acquire().await.unwrap().is_some());
}

#[tokio::test]
async fn explicit_owner_ids_let_bindings_choose_the_owner() {
    let s = server();
    let client = client(&s).await;
    let a = client.rlock("acct:3").owner(77).lease(Duration::from_secs(10));
    let b = client.rlock("acct:3").owner(77).lease(Duration::from_secs(10));
    let c = client.rlock("acct:3").owner(78).lease(Duration::from_secs(10));
    assert_eq!(a.owner_id().unwrap(), format!("{}:77", client.id()));
    let g1 = a.acquire().await.unwrap();
    let g2 = b.try_acquire().await.unwrap().expect("same owner id re-enters");
    assert!(c.try_acquire().await.unwrap().is_none());
    g2.release().await.unwrap();
    g1.release().await.unwrap();
}

#[tokio::test]
async fn a_java_style_holder_excludes_us_and_release_by_others_is_refused() {
    // What Redisson writes for thread 1 of another client.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let foreign = "0f8fad5b-d9cb-469f-a165-70867728950e:1";
    let _: () = cmd(&mut conn, &["HSET", "shared", foreign, "1"]).await;
    let _: () = cmd(&mut conn, &["PEXPIRE", "shared", "30000"]).await;
    let lock = client.rlock("shared").lease(Duration::from_secs(5));
    assert!(lock.try_acquire().await.unwrap().is_none());
    assert!(lock.locked().await.unwrap());
    let count: i64 = cmd(&mut conn, &["HGET", "shared", foreign]).await;
    assert_eq!(count, 1);
    // A Redisson release (unlock channel message "0") wakes our waiter.
    let waiter = {
        let lock = lock.clone().wait(Duration::from_secs(10));
        tokio::spawn(async move { lock.acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let _: () = cmd(&mut conn, &["DEL", "shared"]).await;
    let _: () = cmd(&mut conn, &["PUBLISH", "redisson_lock__channel:{shared}", "0"]).await;
    let g = within(Duration::from_secs(5), waiter).await.unwrap().unwrap();
    g.release().await.unwrap();
}

/// A re-entry keeps the outer hold's fencing token, so this owner never reports a token lower
/// than one it was already given (issue #10, item 7). The counter still moves on every acquire,
/// re-entry included (Redisson's RFencedLock does the same), and the next owner gets more.
#[tokio::test]
async fn rlock_reentry_keeps_the_outer_fencing_token() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.rlock("fence-r").lease(Duration::from_secs(5)).fenced();
    let outer = lock.acquire().await.unwrap();
    let first = outer.fencing_token().unwrap();
    let inner = lock.acquire().await.unwrap();
    assert_eq!(
        inner.fencing_token(),
        Some(first),
        "re-entry reports the outer token"
    );
    let counter: u64 = cmd(&mut conn, &["GET", "redisson_lock_token:{fence-r}"]).await;
    assert_eq!(
        counter,
        first + 1,
        "the counter moved on the re-entry, as Redisson's does"
    );
    inner.release().await.unwrap();
    assert_eq!(outer.fencing_token(), Some(first));
    outer.release().await.unwrap();
    let next = client.rlock("fence-r").fenced().acquire().await.unwrap();
    assert!(
        next.fencing_token().unwrap() > counter,
        "a new owner gets a higher token"
    );
    next.release().await.unwrap();
    let ttl: i64 = cmd(&mut conn, &["PTTL", "redisson_lock_token:{fence-r}"]).await;
    assert_eq!(ttl, -1, "by default the counter persists");
}

/// `fence_ttl` makes the counter expire after the last fenced acquire (for both kinds).
#[tokio::test]
async fn fence_ttl_lets_the_counter_expire() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    for (name, lock) in [
        ("ft-lease", client.lock("ft-lease")),
        ("ft-reentrant", client.rlock("ft-reentrant")),
    ] {
        let g = lock
            .lease(Duration::from_secs(5))
            .fenced()
            .fence_ttl(Duration::from_secs(60))
            .acquire()
            .await
            .unwrap();
        assert_eq!(g.fencing_token(), Some(1));
        let key = format!("redisson_lock_token:{{{name}}}");
        let ttl: i64 = cmd(&mut conn, &["PTTL", &key]).await;
        assert!(ttl > 55_000 && ttl <= 60_000, "{name}: counter TTL {ttl}");
        g.release().await.unwrap();
    }
    let err = client
        .lock("ft-bad")
        .fenced()
        .fence_ttl(Duration::ZERO)
        .try_acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // Without `fenced` a fence TTL did nothing, silently (C and Python trials of stop 46).
    let unfenced = client.lock("ft-unfenced").fence_ttl(Duration::from_secs(60));
    let err = unfenced.check().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("fenced locks only"), "{err}");
    let err = unfenced.try_acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let key: i64 = cmd(&mut conn, &["EXISTS", "ft-unfenced"]).await;
    assert_eq!(key, 0, "nothing sent");
}

/// A user trial found `owner(0)` accepted although owner numbers start at 1. Numbers above
/// the core's own space (1 ..= 2^53 - 1) stay valid: the C binding numbers its thread owners
/// from 2^63 up.
#[tokio::test]
async fn owner_zero_is_invalid_and_writes_nothing() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    for lock in [
        client.rlock("own-bad").owner(0),
        client.fair_lock("own-bad").owner(0),
        client.rw_lock("own-bad").owner(0).write(),
    ] {
        let err = lock.try_acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(err.message().contains("start at 1"), "{err}");
    }
    let keys: Vec<String> = cmd(&mut conn, &["KEYS", "*own-bad*"]).await;
    assert!(keys.is_empty(), "nothing written: {keys:?}");
    for owner in [1, u64::MAX] {
        let g = client.rlock("own-ok").owner(owner).try_acquire().await.unwrap();
        g.expect("a free lock").release().await.unwrap();
    }
}

#[tokio::test]
async fn release_after_full_release_is_not_owned() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.rlock("acct:4").lease(Duration::from_secs(10));
    let g = lock.acquire().await.unwrap();
    let _: () = cmd(&mut conn, &["DEL", "acct:4"]).await;
    assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::NotOwned);
}

/// The owner's holds are counts in one hash with one TTL: a re-entry or a partial release that
/// resets the TTL moves the validity of the outer hold too, later as well as earlier.
#[tokio::test]
async fn holds_of_one_owner_share_the_hash_validity() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client
        .rlock("acct:9")
        .owner(5)
        .lease(Duration::from_millis(1_000));
    let outer = lock.acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let inner = lock.acquire().await.unwrap(); // TTL back to 1 s
    tokio::time::sleep(Duration::from_millis(100)).await;
    inner.release().await.unwrap(); // partial release: TTL back to 1 s again
    tokio::time::sleep(Duration::from_millis(500)).await;
    // 1.2 s after the outer acquire its own lease would be over, but the hash lives on.
    let pttl: i64 = cmd(&mut conn, &["PTTL", "acct:9"]).await;
    assert!(pttl > 0, "the hash is still there: {pttl}");
    assert!(!outer.is_lost(), "the outer hold is valid as long as the hash");
    outer.release().await.unwrap();
    let exists: i64 = cmd(&mut conn, &["EXISTS", "acct:9"]).await;
    assert_eq!(exists, 0, "the release deleted it");

    // A re-entry with a shorter lease shortens the outer hold's validity with the TTL.
    let long = client.rlock("acct:10").owner(6).lease(Duration::from_secs(20));
    let short = client.rlock("acct:10").owner(6).lease(Duration::from_millis(300));
    let outer = long.acquire().await.unwrap();
    let inner = short.acquire().await.unwrap();
    inner.release().await.unwrap(); // TTL now 300 ms
    tokio::time::sleep(Duration::from_millis(600)).await;
    let exists: i64 = cmd(&mut conn, &["EXISTS", "acct:10"]).await;
    assert_eq!(exists, 0, "the hash expired with the shorter lease");
    assert!(outer.is_lost(), "the outer hold knows it is gone");
    assert_eq!(outer.release().await.unwrap_err().kind(), ErrorKind::LockLost);
}

/// A hold of `lock` acquired with `lease`, whose key Redis then keeps for 10 s, returned
/// after `wait`: past its local validity while the key lives on (as in the drift window).
async fn outlived_by_its_key(
    lock: &redlatch::Lock,
    conn: &mut redis::aio::MultiplexedConnection,
    lease: Duration,
    wait: Duration,
) -> redlatch::Guard {
    let guard = lock.clone().lease(lease).acquire().await.unwrap();
    let _: () = cmd(conn, &["PEXPIRE", lock.name(), "10000"]).await;
    tokio::time::sleep(wait).await;
    guard
}

/// A hold declared lost by its local validity (which ends a drift allowance before the key)
/// leaves its count in the hash; a re-acquire by the same owner must not leave that count
/// behind once every guard is released (found by a new-user trial: the key outlived all guards).
#[tokio::test]
async fn a_reacquire_after_a_local_loss_leaves_no_orphaned_count() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.rlock("acct:11").owner(9);
    let old = outlived_by_its_key(
        &lock,
        &mut conn,
        Duration::from_millis(300),
        Duration::from_millis(400),
    )
    .await;
    assert!(old.is_lost());
    let new = lock
        .clone()
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    let hash: HashMap<String, i64> = cmd(&mut conn, &["HGETALL", "acct:11"]).await;
    assert_eq!(
        hash.values().copied().collect::<Vec<_>>(),
        [1],
        "only the new hold counts"
    );
    assert_eq!(old.release().await.unwrap_err().kind(), ErrorKind::LockLost);
    new.release().await.unwrap();
    let exists: i64 = cmd(&mut conn, &["EXISTS", "acct:11"]).await;
    assert_eq!(exists, 0, "the last release deleted the key");
}

/// The same owner releasing a hold past its local validity (not yet seen lost, so the release
/// is still sent) while it re-acquires: removing "orphaned" counts must never take the count
/// of the new hold with it (that would free a lock its guard believes it holds).
#[tokio::test]
async fn a_release_racing_a_reacquire_never_frees_the_new_hold() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.rlock("acct:12").owner(4);
    for round in 0..20 {
        let old = outlived_by_its_key(
            &lock,
            &mut conn,
            Duration::from_millis(100),
            Duration::from_millis(150),
        )
        .await;
        let fresh = lock.clone().lease(Duration::from_secs(10));
        let (released, new) = tokio::join!(old.release(), fresh.acquire());
        let _ = released; // Ok, NotOwned or LockLost depending on the interleaving
        let new = new.unwrap();
        let count: Option<i64> = cmd(&mut conn, &["HGET", "acct:12", &lock.owner_id().unwrap()]).await;
        assert_eq!(
            count,
            Some(1),
            "round {round}: the new hold must be counted exactly once"
        );
        new.release().await.unwrap();
        let exists: i64 = cmd(&mut conn, &["EXISTS", "acct:12"]).await;
        assert_eq!(exists, 0, "round {round}");
    }
}

/// A hold past its local validity, not yet seen lost, is still released when asked (or
/// dropped); after a re-acquire of the same owner in between, that release must send nothing,
/// or it would take the new hold's count (found by a trial: another client then got the lock).
#[tokio::test]
async fn a_stale_hold_released_after_a_reacquire_sends_nothing() {
    let s = server();
    let other = client(&s).await;
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    for (round, by_drop) in [(0, false), (1, true)] {
        let name = format!("acct:13:{round}");
        let lock = client.rlock(name.as_str());
        let stale = outlived_by_its_key(
            &lock,
            &mut conn,
            Duration::from_millis(300),
            Duration::from_millis(350),
        )
        .await;
        let new = lock
            .clone()
            .lease(Duration::from_secs(10))
            .acquire()
            .await
            .unwrap();
        if by_drop {
            drop(stale);
            tokio::time::sleep(Duration::from_millis(50)).await;
        } else {
            assert_eq!(stale.release().await.unwrap_err().kind(), ErrorKind::LockLost);
        }
        assert!(
            other.rlock(name.as_str()).try_acquire().await.unwrap().is_none(),
            "round {round}"
        );
        new.release().await.unwrap();
    }
}

/// Two acquires of one owner in flight, the first dropped (its rollback runs in the
/// background): the second must end up holding exactly one count.
#[tokio::test]
async fn a_dropped_acquire_racing_a_reacquire_never_frees_the_new_hold() {
    let s = server();
    let other = client(&s).await;
    let client = client(&s).await;
    let lock = client.rlock("acct:14");
    for i in 0..200 {
        let mut first = Box::pin(lock.acquire());
        assert!(futures::poll!(first.as_mut()).is_pending());
        let mut second = Box::pin(lock.acquire());
        assert!(futures::poll!(second.as_mut()).is_pending());
        for _ in 0..(i % 6) {
            tokio::task::yield_now().await;
        }
        drop(first);
        let held = second.await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(
            other.rlock("acct:14").try_acquire().await.unwrap().is_none(),
            "iteration {i}"
        );
        held.release().await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await; // the rollback may still be running
    }
}
