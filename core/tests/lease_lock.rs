//! Lease lock semantics on a real Redis: format, waiting, expiry, extend, fencing, bad input.

mod common;
use common::*;
use redlatch::{ErrorKind, Reason};
use std::time::Duration;

#[tokio::test]
async fn acquire_writes_a_token_string_and_release_deletes_it() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let guard = client
        .lock("order:42")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    let token: String = cmd(&mut conn, &["GET", "order:42"]).await;
    assert_eq!(token.len(), 32, "128-bit hex token");
    assert!(token
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    let pttl: i64 = cmd(&mut conn, &["PTTL", "order:42"]).await;
    assert!(pttl > 9_000 && pttl <= 10_000, "pttl {pttl}");
    assert!(guard.owned().await.unwrap());
    assert_eq!(guard.fencing_token(), None);
    guard.release().await.unwrap();
    let exists: i64 = cmd(&mut conn, &["EXISTS", "order:42"]).await;
    assert_eq!(exists, 0);
}

#[tokio::test]
async fn busy_lock_try_acquire_is_none_and_wait_times_out() {
    let s = server();
    let client = client(&s).await;
    let lock = client.lock("busy").lease(Duration::from_secs(10));
    let held = lock.acquire().await.unwrap();
    assert!(lock.try_acquire().await.unwrap().is_none());
    let err = within(
        Duration::from_secs(5),
        lock.clone().wait(Duration::from_millis(300)).acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired);
    assert!(lock.locked().await.unwrap());
    let ttl = lock.ttl().await.unwrap().unwrap();
    assert!(ttl <= Duration::from_secs(10) && ttl > Duration::from_secs(8));
    held.release().await.unwrap();
    assert!(!lock.locked().await.unwrap());
    assert_eq!(lock.ttl().await.unwrap(), None);
    assert!(lock.try_acquire().await.unwrap().is_some());
}

#[tokio::test]
async fn foreign_holder_in_redis_py_format_excludes_us_and_is_not_released_by_us() {
    // redis-py / node-redlock write SET name <their-token> NX PX: same format.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "shared", "their-token", "PX", "600"]).await;
    let lock = client.lock("shared").lease(Duration::from_secs(5));
    assert!(lock.try_acquire().await.unwrap().is_none());
    // Their lease runs out, we get in; their compare-and-delete (token mismatch) refuses us.
    let guard = within(
        Duration::from_secs(5),
        lock.clone().wait(Duration::from_secs(3)).acquire(),
    )
    .await
    .unwrap();
    let script =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    let deleted: i64 = cmd(&mut conn, &["EVAL", script, "1", "shared", "their-token"]).await;
    assert_eq!(deleted, 0);
    assert!(guard.owned().await.unwrap());
    guard.release().await.unwrap();
}

#[tokio::test]
async fn releasing_an_expired_lock_is_not_owned_and_keeps_the_new_holders_key() {
    let s = server();
    let client = client(&s).await;
    let other = client.lock("exp").lease(Duration::from_secs(10));
    let mut conn = raw(&s).await;
    let guard = client
        .lock("exp")
        .lease(Duration::from_millis(100))
        .acquire()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let theirs = other.acquire().await.unwrap();
    let their_value: String = cmd(&mut conn, &["GET", "exp"]).await;
    let err = guard.release().await.unwrap_err();
    assert!(err.kind().is_not_owned(), "{err}");
    let after: String = cmd(&mut conn, &["GET", "exp"]).await;
    assert_eq!(after, their_value);
    theirs.release().await.unwrap();
}

#[tokio::test]
async fn extend_replaces_the_ttl_and_never_recreates_a_lost_key() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let guard = client
        .lock("ext")
        .lease(Duration::from_secs(60))
        .acquire()
        .await
        .unwrap();
    guard.extend(Duration::from_secs(5)).await.unwrap();
    let pttl: i64 = cmd(&mut conn, &["PTTL", "ext"]).await;
    assert!(
        pttl <= 5_000 && pttl > 4_000,
        "extend replaces, never adds: {pttl}"
    );
    let _: () = cmd(&mut conn, &["DEL", "ext"]).await;
    let err = guard.extend(Duration::from_secs(5)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwned);
    let exists: i64 = cmd(&mut conn, &["EXISTS", "ext"]).await;
    assert_eq!(exists, 0, "extend must not re-create the key");
    assert!(guard.is_lost());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
}

#[tokio::test]
async fn fencing_tokens_increase_across_holders() {
    let s = server();
    let client = client(&s).await;
    let lock = client.lock("fenced").lease(Duration::from_secs(5)).fenced();
    let mut last = 0;
    for _ in 0..5 {
        let g = lock.acquire().await.unwrap();
        let t = g.fencing_token().expect("fenced lock returns a token");
        assert!(t > last);
        last = t;
        g.release().await.unwrap();
    }
    let mut conn = raw(&s).await;
    let counter: u64 = cmd(&mut conn, &["GET", "redisson_lock_token:{fenced}"]).await;
    assert_eq!(counter, last);
}

#[tokio::test]
async fn dropped_guard_is_released_in_the_background() {
    let s = server();
    let client = client(&s).await;
    let lock = client.lock("dropped").lease(Duration::from_secs(30));
    drop(lock.acquire().await.unwrap());
    // The background release frees it long before the 30 s lease.
    let again = within(
        Duration::from_secs(5),
        lock.clone().wait(Duration::from_secs(4)).acquire(),
    )
    .await;
    assert!(again.is_ok());
}

#[tokio::test]
async fn waiter_is_woken_by_release() {
    let s = server();
    let client = client(&s).await;
    let lock = client.lock("handoff").lease(Duration::from_secs(30));
    let held = lock.acquire().await.unwrap();
    let waiter = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire().await.map(|g| g.name().to_owned()) })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished());
    held.release().await.unwrap();
    let got = within(Duration::from_secs(5), waiter).await.unwrap().unwrap();
    assert_eq!(got, "handoff");
}

#[tokio::test]
async fn bad_input_is_refused_and_redis_is_untouched() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let huge = Duration::from_millis(1 << 53);
    let cases = [
        client.lock(""),
        client.lock("x".repeat(5000)),
        client.lock("x").lease(Duration::ZERO),
        client.lock("x").lease(huge),
        client.lock("x").wait(huge),
        client.lock("x").owner(3),
        client.rlock("").lease(Duration::from_secs(1)),
    ];
    let before: String = cmd(&mut conn, &["INFO", "commandstats"]).await;
    for lock in cases {
        let err = lock.acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{lock:?}: {err}");
        assert_eq!(
            lock.try_acquire().await.unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    let guard = client
        .lock("ok")
        .lease(Duration::from_secs(5))
        .acquire()
        .await
        .unwrap();
    assert_eq!(
        guard.extend(Duration::ZERO).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        client.force_unlock("").await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    guard.release().await.unwrap();
    assert_eq!(keys_but_latches(&mut conn).await, Vec::<String>::new());
    // Only the valid acquire and release reached Redis: nothing ran for the bad calls. The
    // acquire, the first call on its connection, goes as its script (its SET NX PX counts as
    // a SET call too: plain forms stand in for scripts once one ran), the release is a script
    // whose latch SET counts too; on Valkey 9, SET NX PX and DELIFEQ.
    let after: String = cmd(&mut conn, &["INFO", "commandstats"]).await;
    // NOSCRIPT answers count as failed calls; only successful script runs matter here.
    let field = |line: &str, name: &str| -> u64 {
        line.split([':', ','])
            .find_map(|kv| kv.strip_prefix(name))
            .map_or(0, |v| v.parse().unwrap())
    };
    let evals = |info: &str| {
        info.lines()
            .filter(|l| {
                [
                    "cmdstat_evalsha:",
                    "cmdstat_eval:",
                    "cmdstat_set:",
                    "cmdstat_delifeq:",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            })
            .map(|l| field(l, "calls=") - field(l, "failed_calls="))
            .sum::<u64>()
    };
    assert_eq!(
        evals(&after) - evals(&before),
        if s.is_valkey() { 3 } else { 4 },
        "before:\n{before}\nafter:\n{after}"
    );
}

#[tokio::test]
async fn sub_millisecond_lease_rounds_up() {
    let s = server();
    let client = client(&s).await;
    let g = client
        .lock("tiny")
        .lease(Duration::from_micros(10))
        .acquire()
        .await
        .unwrap();
    assert_eq!(g.lease(), Duration::from_millis(1));
    drop(g);
}

#[tokio::test]
async fn force_unlock_deletes_whatever_the_owner() {
    let s = server();
    let client = client(&s).await;
    let g = client
        .lock("admin")
        .lease(Duration::from_secs(30))
        .acquire()
        .await
        .unwrap();
    assert!(client.force_unlock("admin").await.unwrap());
    assert!(!client.force_unlock("admin").await.unwrap());
    assert!(g.release().await.unwrap_err().kind().is_not_owned());
}

#[tokio::test]
async fn unreachable_redis_is_a_connection_error() {
    let s = server();
    let url = s.url();
    drop(s);
    let err = within(Duration::from_secs(10), redlatch::Client::connect(&url))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    let bad = redlatch::Client::connect("not a url").await.unwrap_err();
    assert_eq!(bad.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test]
async fn waiters_are_woken_by_pub_sub_not_by_polling() {
    // With a 60 s poll interval only the release message can wake the waiter in time.
    let s = server();
    let client = redlatch::Client::builder(&s.url())
        .poll_interval(Duration::from_secs(60))
        .connect()
        .await
        .unwrap();
    for lock in [
        client.lock("ps:lease").lease(Duration::from_secs(60)),
        client.rlock("ps:r"),
    ] {
        let held = lock.acquire().await.unwrap();
        let contender = if lock.is_reentrant() {
            client.rlock("ps:r")
        } else {
            lock.clone()
        };
        let waiter = tokio::spawn(async move { contender.acquire().await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        held.release().await.unwrap();
        let g = within(Duration::from_secs(10), waiter).await.unwrap().unwrap();
        g.release().await.unwrap();
    }
}

#[tokio::test]
async fn releases_that_do_not_publish_are_seen_by_polling() {
    // redis-py releases with a plain compare-and-delete and publishes nothing.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "quiet", "redis-py-token", "PX", "60000"]).await;
    let lock = client.lock("quiet").lease(Duration::from_secs(5));
    let waiter = tokio::spawn(async move { lock.acquire().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _: () = cmd(&mut conn, &["DEL", "quiet"]).await;
    let g = within(Duration::from_secs(10), waiter).await.unwrap().unwrap();
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_releaser_does_not_starve_a_waiting_client() {
    // Client A releases and re-acquires in a tight loop; without the hand-off grace it wins
    // nearly every race (it needs no wake-up) and B waits for as long as A keeps looping.
    let s = server();
    let a = client(&s).await;
    let b = client(&s).await;
    let lock_a = a.lock("fair").lease(Duration::from_secs(10));
    let mut held = lock_a.acquire().await.unwrap();
    let waiter = {
        let lock_b = b.lock("fair").lease(Duration::from_secs(10));
        tokio::spawn(async move { lock_b.acquire().await.unwrap().release().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut rounds = 0;
    while !waiter.is_finished() && rounds < 2_000 {
        held.release().await.unwrap();
        held = lock_a.acquire().await.unwrap();
        rounds += 1;
    }
    // With the grace B takes the first hand-off; a loaded machine may need a couple more.
    assert!(waiter.is_finished() && rounds <= 3, "B needed {rounds} hand-offs");
    held.release().await.unwrap();
    waiter.await.unwrap().unwrap();
}

/// The blocking API is for synchronous code, but dropping its objects inside async code (the
/// last reference shuts its runtime down) must not panic (found by a new-user trial).
#[tokio::test]
async fn blocking_objects_dropped_in_async_code_do_not_panic() {
    let s = server();
    let url = s.url();
    let (client, lock, guard) = tokio::task::spawn_blocking(move || {
        let client = redlatch::blocking::Client::connect(&url).unwrap();
        let lock = client.lock("b:1").lease(Duration::from_secs(5));
        let guard = lock.acquire().unwrap();
        (client, lock, guard)
    })
    .await
    .unwrap();
    drop(guard);
    drop(lock);
    drop(client); // the last reference: the runtime goes here, inside this async test
}

/// `Lock::check` is the acquire's own option check, run when a binding builds its lock:
/// bad options are `InvalidArgument` there, and nothing is sent; a fair lock on a quorum
/// client passes it (its acquire refuses it, as documented).
#[tokio::test]
async fn check_refuses_bad_options_as_acquire_does() {
    let nodes = servers(3);
    let single = client(&nodes[0]).await;
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let quorum = redlatch::Client::quorum(&urls).await.unwrap();
    assert!(single
        .lock("check:a")
        .lease(Duration::from_secs(5))
        .check()
        .is_ok());
    for lock in [
        single.lock(""),
        single.lock("check:a").lease(Duration::ZERO),
        single.lock("check:a").owner(7),
        single.rw_lock("check:a").read().fenced(),
        quorum.lock("check:a").fenced(),
    ] {
        let checked = lock.check().unwrap_err();
        let acquired = lock.try_acquire().await.unwrap_err();
        assert_eq!(checked.kind(), ErrorKind::InvalidArgument, "{checked}");
        assert_eq!(checked.message(), acquired.message(), "one check for both");
    }
    let fair = quorum.fair_lock("check:b");
    assert!(fair.check().is_ok());
    assert_eq!(
        fair.try_acquire().await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut conn = raw(&nodes[0]).await;
    assert!(keys_but_latches(&mut conn).await.is_empty(), "nothing was sent");
}

// `owned()` asks Redis; an answer that the key is gone or another owner's is the loss itself:
// the guard is lost from then on, with the reason, as after a refused extend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_false_from_redis_marks_the_hold_lost_with_its_reason() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    for (key, taken) in [("own:gone", false), ("own:taken", true)] {
        let g = client
            .lock(key)
            .lease(Duration::from_secs(10))
            .acquire()
            .await
            .unwrap();
        assert!(g.owned().await.unwrap());
        if taken {
            let _: () = cmd(&mut conn, &["SET", key, "someone-else", "PX", "10000"]).await;
        } else {
            let _: () = cmd(&mut conn, &["DEL", key]).await;
        }
        assert!(!g.is_lost(), "not known before asking");
        assert!(!g.owned().await.unwrap());
        assert!(g.is_lost());
        let reason = if taken { Reason::Taken } else { Reason::Deleted };
        assert_eq!(g.lost_reason(), Some(reason));
        let e = g.release().await.unwrap_err();
        assert_eq!((e.kind(), e.reason()), (ErrorKind::LockLost, Some(reason)), "{e}");
    }
    let other: Option<String> = cmd(&mut conn, &["GET", "own:taken"]).await;
    assert_eq!(
        other.as_deref(),
        Some("someone-else"),
        "the other owner's key is left alone"
    );
}
