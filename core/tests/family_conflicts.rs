//! Application data under the name of a fair lock, a read/write lock, a semaphore or a latch,
//! and under a name given to `force_unlock`: a `KeyConflict` error at once, whatever the
//! wait, and the data left as it was (the rules of protocol/lua/conflict.lua and
//! protocol/family/lua/count.lua; shared/API.md "key-type conflicts"). Found by a user trial:
//! a write lock was granted inside an application hash (and a read lock's release then deleted
//! it), a fair lock waited out its whole wait on one, `force_unlock` deleted a string or hash
//! without TTL, and a semaphore or latch over a text string failed with a Lua error.

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Lock};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(5);

/// Every way to wait: one try, a long wait, no limit. Each must fail at once.
const WAITS: [Option<Duration>; 3] = [Some(Duration::ZERO), Some(Duration::from_secs(30)), None];

async fn assert_conflict_at_once(lock: &Lock, what: &str) {
    for wait in WAITS {
        let err = within(
            BOUND,
            lock.clone().lease(Duration::from_secs(5)).acquire_with_wait(wait),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{what}, wait {wait:?}: {err}");
    }
}

async fn hash(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<String> {
    let mut fields: Vec<String> = cmd(conn, &["HGETALL", key]).await;
    fields.push(cmd::<i64>(conn, &["PTTL", key]).await.to_string());
    fields
}

#[tokio::test]
async fn fair_and_read_write_locks_over_an_application_hash_are_key_conflicts_at_once() {
    let s = server();
    let client: Client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["HSET", "settings", "theme", "dark"]).await;
    // A hash with a field named like the lock's, holding something else.
    let _: () = cmd(&mut conn, &["HSET", "display", "mode", "dark"]).await;
    // With a TTL, still no read/write lock: no mode field.
    let _: () = cmd(&mut conn, &["HSET", "cache:1", "hits", "3"]).await;
    let _: () = cmd(&mut conn, &["PEXPIRE", "cache:1", "600000"]).await;
    let before = [
        hash(&mut conn, "settings").await,
        hash(&mut conn, "display").await,
    ];
    for name in ["settings", "display", "cache:1"] {
        assert_conflict_at_once(&client.rw_lock(name).write(), &format!("write lock on {name}")).await;
        assert_conflict_at_once(&client.rw_lock(name).read(), &format!("read lock on {name}")).await;
    }
    assert_conflict_at_once(&client.fair_lock("settings"), "fair lock on an application hash").await;
    let after = [
        hash(&mut conn, "settings").await,
        hash(&mut conn, "display").await,
    ];
    assert_eq!(
        before, after,
        "the application hashes are untouched (fields and no TTL)"
    );
    // Nothing was queued for the fair lock.
    let queued: i64 = cmd(&mut conn, &["EXISTS", "redisson_lock_queue:{settings}"]).await;
    assert_eq!(queued, 0);
    // Locks of these kinds still work on their own keys.
    let g = within(BOUND, client.rw_lock("rw:free").write().acquire())
        .await
        .unwrap();
    g.release().await.unwrap();
    let g = within(BOUND, client.fair_lock("fair:free").acquire())
        .await
        .unwrap();
    g.release().await.unwrap();
}

#[tokio::test]
async fn force_unlock_never_deletes_application_data() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "user:42:name", "alice"]).await;
    let _: () = cmd(&mut conn, &["HSET", "profile:42", "name", "alice"]).await;
    for name in ["user:42:name", "profile:42"] {
        let err = client.force_unlock(name).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{name}: {err}");
        let exists: i64 = cmd(&mut conn, &["EXISTS", name]).await;
        assert_eq!(exists, 1, "{name} was deleted");
    }
    // Locks are still deleted: a lease lock, a reentrant one, and redis-py's Lock without a
    // timeout (a token without TTL).
    let _: () = cmd(
        &mut conn,
        &["SET", "no-ttl-lock", "0123456789abcdef0123456789abcdef"],
    )
    .await;
    let lease_lock = client.lock("lease:held").lease(Duration::from_secs(30));
    let lease = within(BOUND, lease_lock.acquire()).await.unwrap();
    let rlock = within(BOUND, client.rlock("rlock:held").acquire()).await.unwrap();
    for name in ["no-ttl-lock", "lease:held", "rlock:held"] {
        assert!(client.force_unlock(name).await.unwrap(), "{name}");
    }
    drop((lease, rlock));
}

#[tokio::test]
async fn semaphores_and_latches_over_a_text_string_are_key_conflicts() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "pool", "hello"]).await;
    let sem = client.semaphore("pool").wait(Duration::from_secs(30));
    let latch = client.count_down_latch("pool");
    let permits = client.permit_semaphore("pool").wait(Duration::from_secs(30));
    let kinds = [
        (
            "semaphore available",
            within(BOUND, sem.available()).await.map(drop),
        ),
        ("semaphore acquire", within(BOUND, sem.acquire(1)).await),
        ("latch count", within(BOUND, latch.count()).await.map(drop)),
        ("latch count down", within(BOUND, latch.count_down()).await),
        (
            "permit available",
            within(BOUND, permits.available()).await.map(drop),
        ),
        (
            "permit acquire",
            within(BOUND, permits.acquire(None)).await.map(drop),
        ),
        // A C user trial of stop 46: OK and "already set" (false) over application data.
        (
            "semaphore try_set_permits",
            within(BOUND, sem.try_set_permits(2)).await.map(drop),
        ),
        (
            "permit try_set_permits",
            within(BOUND, permits.try_set_permits(2)).await.map(drop),
        ),
        (
            "latch try_set_count",
            within(BOUND, latch.try_set_count(2)).await.map(drop),
        ),
    ];
    for (what, result) in kinds {
        let err = result.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{what}: {err}");
    }
    let value: String = cmd(&mut conn, &["GET", "pool"]).await;
    assert_eq!(value, "hello");
    let _: i64 = cmd(&mut conn, &["HSET", "pool:hash", "f", "v"]).await;
    let err = within(BOUND, client.semaphore("pool:hash").try_set_permits(2))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::KeyConflict, "a hash: {err}");
    // A semaphore's own count still works.
    let sem = client.semaphore("pool:ok");
    assert!(sem.try_set_permits(2).await.unwrap());
    sem.acquire(1).await.unwrap();
    assert_eq!(sem.available().await.unwrap(), 1);
    sem.release(1).await.unwrap();
}

/// A user trial found keys of another type reported with Redis' raw words plus the script's
/// SHA and line ("WRONGTYPE Operation against a key holding the wrong kind of value script:
/// ce03..., on @user_script:35."), where a string or hash without TTL gets redlatch's own
/// sentence: every key-type conflict now reads the same.
#[tokio::test]
async fn a_key_of_another_type_reads_as_application_data_without_script_details() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: i64 = cmd(&mut conn, &["RPUSH", "a-list", "x"]).await;
    let _: i64 = cmd(&mut conn, &["SADD", "a-set", "x"]).await;
    let _: () = cmd(&mut conn, &["SET", "a-string", "1", "PX", "60000"]).await;
    let _: i64 = cmd(&mut conn, &["HSET", "a-hash", "f", "v"]).await;
    let errors = [
        (
            "lease on a list",
            client.lock("a-list").try_acquire().await.map(drop),
        ),
        (
            "lease on a set",
            client.lock("a-set").try_acquire().await.map(drop),
        ),
        (
            "rlock on a string",
            client.rlock("a-string").try_acquire().await.map(drop),
        ),
        (
            "fair on a list",
            client.fair_lock("a-list").try_acquire().await.map(drop),
        ),
        (
            "read on a string",
            client.rw_lock("a-string").read().try_acquire().await.map(drop),
        ),
        (
            "semaphore on a hash",
            client.semaphore("a-hash").try_acquire(1).await.map(drop),
        ),
    ];
    for (what, result) in errors {
        let err = result.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{what}: {err}");
        let text = err.to_string();
        assert!(text.contains("application data"), "{what}: {text}");
        assert!(
            !text.contains("script") && !text.contains("wrong kind of value"),
            "{what}: {text}"
        );
    }
}
