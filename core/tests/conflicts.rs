//! Application data under a lock's name, a least-privilege ACL user and a full Redis are each
//! their own clear error, at once, never a wait, "busy", "not owned" or a 0 (issues #10 item 6
//! and #14 item 4). Scripts order their commands so that a refused one changes nothing.

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Reason};
use std::time::Duration;

fn one_try(lock: redlatch::Lock) -> redlatch::Lock {
    lock.lease(Duration::from_secs(5)).wait(Duration::ZERO)
}

#[tokio::test]
async fn a_lock_name_over_application_data_is_a_key_conflict_at_once() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "orders:1", "x"]).await;
    let _: () = cmd(&mut conn, &["HSET", "profile:1", "name", "ann"]).await;
    let _: () = cmd(&mut conn, &["RPUSH", "queue:1", "job"]).await;
    let _: () = cmd(
        &mut conn,
        &["SET", "token-like", "0123456789abcdef0123456789abcdef"],
    )
    .await;
    let cases = [
        ("orders:1", false, "a string without TTL (lease lock)"),
        ("profile:1", false, "a hash (lease lock)"),
        ("queue:1", false, "a list (lease lock)"),
        ("orders:1", true, "a string (reentrant lock)"),
        ("profile:1", true, "a hash without TTL (reentrant lock)"),
        ("queue:1", true, "a list (reentrant lock)"),
    ];
    for (name, reentrant, what) in cases {
        let lock = if reentrant {
            client.rlock(name)
        } else {
            client.lock(name)
        };
        for wait in [Some(Duration::ZERO), Some(Duration::from_secs(30)), None] {
            let err = within(
                Duration::from_secs(5),
                lock.clone().lease(Duration::from_secs(5)).acquire_with_wait(wait),
            )
            .await
            .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::KeyConflict, "{what}, wait {wait:?}: {err}");
        }
        let err = lock.locked().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{what}: locked()");
    }
    // A reentrant lock (Redisson's format) under the name of a lease lock: the error says
    // that another kind of lock may hold the name, not only application data (a user trial of
    // stop 41 met a Java RLock there and read "application data under its name?").
    let rlock = one_try(client.rlock("shared:1")).acquire().await.unwrap();
    let err = one_try(client.lock("shared:1")).acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::KeyConflict, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("another kind") && text.contains("reentrant"),
        "{text}"
    );
    rlock.release().await.unwrap();
    // A string without TTL that looks like a lock token is a lock (redis-py's Lock without a
    // timeout writes one): busy, not a conflict.
    let err = one_try(client.lock("token-like")).acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired, "{err}");
    // The data is untouched, and force unlock never deletes a type no lock uses.
    let err = client.force_unlock("queue:1").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::KeyConflict);
    let len: i64 = cmd(&mut conn, &["LLEN", "queue:1"]).await;
    let value: String = cmd(&mut conn, &["GET", "orders:1"]).await;
    assert_eq!((len, value.as_str()), (1, "x"));
}

#[tokio::test]
async fn a_multi_lock_member_over_application_data_is_a_key_conflict_at_once() {
    // Found by a user trial (stop 36): the multi-lock's script told a member holding data
    // "busy" (a string without TTL) or failed its undo on it (another type), so the acquire
    // waited out its wait (for ever without one) and, for another type, left the member it
    // had taken held for the whole lease.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "m:orders", "x"]).await;
    let _: () = cmd(&mut conn, &["HSET", "m:profile", "name", "ann"]).await;
    let _: () = cmd(&mut conn, &["RPUSH", "m:queue", "job"]).await;
    for data in ["m:orders", "m:profile", "m:queue"] {
        for reentrant in [false, true] {
            // "m:a" sorts first: the member taken before the one holding data.
            let locks = if reentrant {
                vec![client.rlock("m:a"), client.rlock(data)]
            } else {
                vec![client.lock("m:a"), client.lock(data)]
            };
            let multi = client.multi_lock(locks).unwrap().lease(Duration::from_secs(30));
            for wait in [Some(Duration::ZERO), Some(Duration::from_secs(30)), None] {
                let what = format!("{data}, reentrant {reentrant}, wait {wait:?}");
                let err = within(Duration::from_secs(5), multi.acquire_with_wait(wait))
                    .await
                    .expect_err(&what);
                assert_eq!(err.kind(), ErrorKind::KeyConflict, "{what}: {err}");
                // Named by its key: a position would be the sorted one, not the caller's.
                let text = err.to_string();
                assert!(
                    text.contains(&format!("{data:?}")) && !text.contains("(member"),
                    "{what}: {text}"
                );
                let left = exists_after_cleanup(&mut conn, "m:a").await;
                assert_eq!(left, 0, "{what}: the member taken is given back");
            }
        }
    }
    let len: i64 = cmd(&mut conn, &["LLEN", "m:queue"]).await;
    let value: String = cmd(&mut conn, &["GET", "m:orders"]).await;
    assert_eq!((len, value.as_str()), (1, "x"), "the data is untouched");
}

#[tokio::test]
async fn a_hold_whose_key_was_replaced_by_another_type_is_a_key_conflict() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let g = one_try(client.lock("replaced")).acquire().await.unwrap();
    let _: () = cmd(&mut conn, &["DEL", "replaced"]).await;
    let _: () = cmd(&mut conn, &["HSET", "replaced", "f", "1"]).await;
    assert_eq!(g.release().await.unwrap_err().kind(), ErrorKind::KeyConflict);
    assert_eq!(
        g.extend(Duration::from_secs(1)).await.unwrap_err().kind(),
        ErrorKind::KeyConflict
    );
}

/// A user with only the key and channel permissions a lock needs (the channel is a script
/// argument, so it needs no key permission), and users missing one command each.
#[tokio::test]
async fn acl_refusals_are_no_permission_and_change_nothing() {
    let s = server();
    let mut admin = raw(&s).await;
    // Key patterns for the lock, the fencing counter and the latches only: no channel as a key.
    let base = [
        "on",
        ">pw",
        "~lk:*",
        "~redisson_lock_token:*",
        "~redisson_unlock_latch:*",
        "~redlatch_acquire_latch:*",
        "+ping",
        "+evalsha",
        "+eval",
    ];
    let users: [(&str, &[&str]); 4] = [
        (
            "full",
            &["&redisson_lock__channel:*", "+get", "+set", "+hget", "+publish"],
        ),
        (
            "noget",
            &["&redisson_lock__channel:*", "+set", "+hget", "+publish"],
        ),
        ("nopub", &["&redisson_lock__channel:*", "+get", "+set", "+hget"]),
        ("nochan", &["+get", "+set", "+hget", "+publish"]),
    ];
    for (user, extra) in users {
        let mut args = vec!["ACL", "SETUSER", user];
        args.extend(base);
        args.extend(extra);
        args.extend([
            "+exists", "+pttl", "+pexpire", "+del", "+incr", "+hincrby", "+hexists",
        ]);
        let _: () = cmd(&mut admin, &args).await;
    }
    let url = |user: &str| format!("redis://{user}:pw@127.0.0.1:{}", s.port());
    let connect = |user: &'static str| {
        let url = url(user);
        async move { Client::connect(&url).await.unwrap() }
    };

    // Least privilege works, reentrant included.
    let full = connect("full").await;
    let g = one_try(full.lock("lk:a")).acquire().await.unwrap();
    g.release().await.unwrap();
    let r = one_try(full.rlock("lk:b")).acquire().await.unwrap();
    assert_eq!(one_try(full.rlock("lk:b")).hold_count().await.unwrap(), 0);
    r.release().await.unwrap();

    // No GET: the release (or an acquire of a held lock) cannot read the key.
    let noget = connect("noget").await;
    let g = one_try(noget.lock("lk:c")).acquire().await.unwrap(); // SET NX PX needs no GET
    let err = g.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert!(g.is_held(), "nothing changed: still held, still retryable");
    let err = one_try(noget.lock("lk:c")).acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "not busy: {err}");
    let err = noget.lock("lk:c").locked().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission);
    let exists: i64 = cmd(&mut admin, &["EXISTS", "lk:c"]).await;
    assert_eq!(exists, 1);

    // No PUBLISH, or no permission on the channel: the release fails before the DEL.
    for user in ["nopub", "nochan"] {
        let client = connect(user).await;
        let name = format!("lk:{user}");
        for reentrant in [false, true] {
            let lock = if reentrant {
                client.rlock(&name)
            } else {
                client.lock(&name)
            };
            let g = one_try(lock).acquire().await.unwrap();
            let err = g.release().await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::NoPermission, "{user}: {err}");
            let exists: i64 = cmd(&mut admin, &["EXISTS", &name]).await;
            assert_eq!(exists, 1, "{user}: the key is left as it was");
            let _: i64 = cmd(&mut admin, &["DEL", &name]).await;
            let err = g.release().await.unwrap_err();
            assert_eq!(
                err.reason(),
                Some(Reason::Deleted),
                "{user}: then a definite answer"
            );
        }
    }

    // No HGET: the hold count is unknown, not 0.
    let _: () = cmd(&mut admin, &["ACL", "SETUSER", "full", "-hget"]).await;
    let r = one_try(full.rlock("lk:d")).acquire().await.unwrap();
    let err = one_try(full.rlock("lk:d")).hold_count().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    drop(r);
}

/// An ACL user that may write the lock's key but not its companion keys: the fencing counter
/// (no INCR) or the latch (no SET). Every such acquire is refused with NoPermission, and the
/// grant the script made on the lock's key before reaching them is undone, so nothing is left
/// holding the lock for a lease that nobody knows of. (A missing key pattern for a companion
/// key is refused by Redis before the script runs: the keys are declared.)
#[tokio::test]
async fn acl_refusals_of_the_counter_or_latch_undo_the_grant() {
    let s = server();
    let mut admin = raw(&s).await;
    for (user, minus) in [("keysonly", "+ping"), ("noincr", "-incr"), ("noset", "-set")] {
        let mut args = vec!["ACL", "SETUSER", user, "on", ">pw", "&*", "+@all", minus];
        args.push(if user == "keysonly" { "~app:*" } else { "~*" });
        let _: () = cmd(&mut admin, &args).await;
    }
    let connect = |user: &str| {
        let url = format!("redis://{user}:pw@127.0.0.1:{}", s.port());
        async move { Client::connect(&url).await.unwrap() }
    };
    let exists = |conn: &mut redis::aio::MultiplexedConnection, key: &'static str| {
        let mut conn = conn.clone();
        async move { cmd::<i64>(&mut conn, &["EXISTS", key]).await == 1 }
    };

    let keys_only = connect("keysonly").await;
    let err = one_try(keys_only.rlock("app:k")).acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert!(!exists(&mut admin, "app:k").await);

    let no_set = connect("noset").await;
    let err = one_try(no_set.rlock("app:r")).acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert!(
        !exists(&mut admin, "app:r").await,
        "the reentrant grant was undone"
    );
    let no_incr = connect("noincr").await;
    let err = one_try(no_incr.lock("app:f").fenced())
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert!(!exists(&mut admin, "app:f").await, "the fenced grant was undone");
    let err = one_try(no_incr.rlock("app:g").fenced())
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert!(
        !exists(&mut admin, "app:g").await,
        "the fenced reentrant grant was undone"
    );

    // A re-entry refused at the counter leaves the outer hold's count and TTL as they were.
    let no_fence = no_incr;
    let lock = one_try(no_fence.rlock("app:n")).lease(Duration::from_secs(20));
    let outer = lock.acquire().await.unwrap();
    let _: () = cmd(&mut admin, &["PEXPIRE", "app:n", "60000"]).await;
    let err = lock.clone().fenced().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert_eq!(
        lock.hold_count().await.unwrap(),
        1,
        "the re-entry's count was undone"
    );
    let pttl: i64 = cmd(&mut admin, &["PTTL", "app:n"]).await;
    assert!(
        pttl > 50_000,
        "the TTL went back ({pttl} ms), not to the 20 s lease"
    );
    outer.release().await.unwrap();
    assert!(!exists(&mut admin, "app:n").await);
}

#[tokio::test]
async fn out_of_memory_is_its_own_error_at_once() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let held = one_try(client.rlock("oom:held")).acquire().await.unwrap();
    let lease_held = one_try(client.lock("oom:lease")).acquire().await.unwrap();
    let _: () = cmd(&mut conn, &["CONFIG", "SET", "maxmemory", "1"]).await;
    for lock in [client.lock("oom"), client.rlock("oom")] {
        let err = within(
            Duration::from_secs(2),
            lock.lease(Duration::from_secs(5))
                .wait(Duration::from_secs(30))
                .acquire(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutOfMemory, "{err}");
    }
    // A lease lock's release works under OOM, as redis-py's does: its latch is written after
    // the DEL, and Redis checks maxmemory only at a script's first write.
    lease_held
        .release()
        .await
        .expect("a lease release frees memory; OOM must not refuse it");
    let gone: i64 = cmd(&mut conn, &["EXISTS", "oom:lease"]).await;
    assert_eq!(gone, 0);
    // A release that needs no new memory still works (a full one deletes the key).
    let err = held.release().await;
    let _: () = cmd(&mut conn, &["CONFIG", "SET", "maxmemory", "0"]).await;
    match err {
        Ok(()) => {}
        Err(e) => {
            // The release latch is a write Redis may refuse: then nothing changed at all.
            assert_eq!(e.kind(), ErrorKind::OutOfMemory, "{e}");
            assert!(held.is_held());
            held.release().await.unwrap();
        }
    }
}
