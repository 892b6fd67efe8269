//! The multi-lock through the driver on real redis-servers: tasks taking overlapping sets in
//! opposite orders finish with exact counters (one-script path, in-order path, quorum), all or
//! nothing (a busy member leaves nothing taken), rollback part way, cancellation, release
//! together, and bad input refused.

mod common;
use common::*;
use redlatch::{Client, ErrorKind, MultiLock, Reason};
use redlatch_fleet::RedisServer;
use std::time::{Duration, Instant};

/// `tasks` tasks, half locking `{a, b}` and half `{b, a}`, each section a non-atomic
/// read-modify-write of both counters; returns the two counters.
async fn opposite_orders(
    make: impl Fn(usize, bool) -> MultiLock,
    counters: &RedisServer,
    tasks: usize,
    sections: usize,
) -> (i64, i64) {
    let mut handles = Vec::new();
    for t in 0..tasks {
        let multi = make(t, t % 2 == 0);
        let mut conn = raw(counters).await;
        handles.push(tokio::spawn(async move {
            for _ in 0..sections {
                let guard = multi.acquire().await.expect("acquire");
                for key in ["count:a", "count:b"] {
                    let v: Option<i64> = cmd(&mut conn, &["GET", key]).await;
                    tokio::task::yield_now().await;
                    let _: () = cmd(&mut conn, &["SET", key, &(v.unwrap_or(0) + 1).to_string()]).await;
                }
                guard.release().await.expect("release");
            }
        }));
    }
    // A deadlock would hang here: bounded generously.
    for h in handles {
        tokio::time::timeout(Duration::from_secs(60), h)
            .await
            .expect("no deadlock")
            .unwrap();
    }
    let mut conn = raw(counters).await;
    let a: i64 = cmd(&mut conn, &["GET", "count:a"]).await;
    let b: i64 = cmd(&mut conn, &["GET", "count:b"]).await;
    (a, b)
}

fn names(forward: bool) -> [&'static str; 2] {
    if forward {
        ["ml:a", "ml:b"]
    } else {
        ["ml:b", "ml:a"]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_orders_one_script_counters_are_exact() {
    let s = server();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(client(&s).await);
    }
    let (a, b) = opposite_orders(
        |t, fwd| {
            clients[t % 3]
                .multi_lock_names(names(fwd))
                .unwrap()
                .lease(Duration::from_secs(10))
        },
        &s,
        6,
        60,
    )
    .await;
    assert_eq!((a, b), (360, 360));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_orders_in_order_counters_are_exact() {
    let s = server();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(client(&s).await);
    }
    // A fenced member cannot join the one script: each member is taken through its own lock,
    // in sorted order, a reentrant one among them (watchdog mode).
    let (a, b) = opposite_orders(
        |t, fwd| {
            let c = &clients[t % 3];
            let [x, y] = names(fwd);
            let member = |n: &str| {
                if n == "ml:a" {
                    c.lock(n).fenced()
                } else {
                    c.rlock(n)
                }
            };
            c.multi_lock(vec![member(x), member(y)]).unwrap()
        },
        &s,
        6,
        40,
    )
    .await;
    assert_eq!((a, b), (240, 240));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_orders_on_a_quorum_counters_are_exact() {
    let nodes = servers(3);
    let counters = server();
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let mut clients = Vec::new();
    for _ in 0..2 {
        clients.push(
            Client::quorum_builder(&urls)
                .node_timeout(Duration::from_millis(500))
                .connect()
                .await
                .unwrap(),
        );
    }
    let (a, b) = opposite_orders(
        |t, fwd| {
            clients[t % 2]
                .multi_lock_names(names(fwd))
                .unwrap()
                .lease(Duration::from_secs(10))
        },
        &counters,
        4,
        40,
    )
    .await;
    assert_eq!((a, b), (160, 160));
    for n in &nodes {
        let mut conn = raw(n).await;
        assert!(keys_but_latches(&mut conn).await.is_empty());
    }
}

#[tokio::test]
async fn a_busy_member_leaves_nothing_taken() {
    let s = server();
    let (c, other) = (client(&s).await, client(&s).await);
    let mut conn = raw(&s).await;
    let held = other
        .lock("mb:b")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    // One script.
    let multi = c.multi_lock_names(["mb:c", "mb:b", "mb:a"]).unwrap();
    assert_eq!(multi.names(), ["mb:a", "mb:b", "mb:c"], "sorted");
    assert!(multi.try_acquire().await.unwrap().is_none());
    assert_eq!(keys_but_latches(&mut conn).await, ["mb:b"]);
    // In order: "mb:a" (fenced) is taken first, then rolled back when "mb:b" is busy.
    let multi = c
        .multi_lock(vec![c.lock("mb:a").fenced(), c.lock("mb:b"), c.lock("mb:c")])
        .unwrap()
        .wait(Duration::from_millis(100));
    let err = multi.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired, "{err}");
    let mut keys = keys_but_latches(&mut conn).await;
    keys.retain(|k| !k.starts_with("redisson_lock_token:"));
    assert_eq!(keys, ["mb:b"], "the fenced member was rolled back");
    // Freed: the waiter is woken and takes all.
    let m = multi.clone().wait(Duration::from_secs(5));
    let waiting = tokio::spawn(async move { m.acquire().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    held.release().await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(guard.names(), ["mb:a", "mb:b", "mb:c"]);
    assert!(guard.guards()[0].fencing_token().is_some());
    guard.release().await.unwrap();
    let err = guard.release().await.unwrap_err();
    assert_eq!(
        (err.kind(), err.reason()),
        (ErrorKind::NotOwned, Some(Reason::NeverHeld)),
        "{err}"
    );
    let mut keys = keys_but_latches(&mut conn).await;
    keys.retain(|k| !k.starts_with("redisson_lock_token:"));
    assert!(keys.is_empty(), "{keys:?}");
}

#[tokio::test]
async fn reentrant_members_and_watchdog_renewal() {
    let s = server();
    let c = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(600))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let r = c.rlock("mr:r");
    let outer = r.acquire().await.unwrap();
    let multi = c.multi_lock(vec![r.clone(), c.lock("mr:l")]).unwrap();
    let guard = multi.acquire().await.unwrap();
    assert_eq!(
        r.hold_count().await.unwrap(),
        2,
        "the multi-lock re-entered the owner's hold"
    );
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert!(!guard.is_lost(), "renewed by the watchdog");
    let pttl: i64 = cmd(&mut conn, &["PTTL", "mr:l"]).await;
    assert!(pttl > 0, "{pttl}");
    guard.release().await.unwrap();
    assert_eq!(r.hold_count().await.unwrap(), 1);
    outer.release().await.unwrap();
    assert!(keys_but_latches(&mut conn).await.is_empty());
}

#[tokio::test]
async fn a_cancelled_acquire_leaves_nothing_taken() {
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let r = c.rlock("mc:r");
    let multi = c.multi_lock(vec![c.lock("mc:a"), r.clone()]).unwrap();
    for i in 0..120u64 {
        let cut = Duration::from_micros(20 + (i * 37) % 900);
        if let Ok(guard) = tokio::time::timeout(cut, multi.acquire()).await {
            guard.unwrap().release().await.unwrap();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let keys = keys_but_latches(&mut conn).await;
        if keys.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left taken: {keys:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(r.hold_count().await.unwrap(), 0);
}

#[tokio::test]
async fn bad_input_is_refused() {
    let s = server();
    let (c, other) = (client(&s).await, client(&s).await);
    let empty: Vec<&str> = Vec::new();
    for err in [
        c.multi_lock_names(empty).unwrap_err(),
        c.multi_lock_names(["x", "y", "x"]).unwrap_err(),
        c.multi_lock_names(["x", ""]).unwrap_err(),
        c.multi_lock(vec![c.lock("x"), other.lock("y")]).unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    let err = c
        .multi_lock_names(["x"])
        .unwrap()
        .lease(Duration::ZERO)
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    // A member's own bad lease is refused at acquire, unless the multi-lock's lease replaces
    // it (as every member's lease).
    let zero = || c.multi_lock(vec![c.lock("z").lease(Duration::ZERO)]).unwrap();
    let err = zero().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let mut conn = raw(&s).await;
    let keys: Vec<String> = cmd(&mut conn, &["KEYS", "*"]).await;
    assert!(keys.is_empty(), "{keys:?}");
    let guard = zero()
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .expect("the multi-lock's lease replaces the member's");
    let pttl: i64 = cmd(&mut conn, &["PTTL", "z"]).await;
    assert!(pttl > 9_000 && pttl <= 10_000, "{pttl}");
    guard.release().await.unwrap();
}

#[tokio::test]
async fn close_releases_multi_guards() {
    let s = server();
    let c = client(&s).await;
    let guard = c
        .multi_lock_names(["mx:a", "mx:b"])
        .unwrap()
        .acquire()
        .await
        .unwrap();
    c.close().await;
    let mut conn = raw(&s).await;
    assert!(keys_but_latches(&mut conn).await.is_empty());
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::Connection);
}

#[tokio::test]
async fn any_mix_of_lock_kinds() {
    let s = server();
    let (c, other) = (client(&s).await, client(&s).await);
    let rw = c.rw_lock("mk:rw");
    let multi = c
        .multi_lock(vec![
            c.fair_lock("mk:fair"),
            rw.write(),
            c.rlock("mk:r"),
            c.lock("mk:l"),
        ])
        .unwrap();
    let guard = multi.acquire().await.unwrap();
    assert_eq!(guard.names(), ["mk:fair", "mk:l", "mk:r", "mk:rw"]);
    assert!(other.fair_lock("mk:fair").try_acquire().await.unwrap().is_none());
    assert!(other
        .rw_lock("mk:rw")
        .read()
        .try_acquire()
        .await
        .unwrap()
        .is_none());
    assert!(other.rlock("mk:r").try_acquire().await.unwrap().is_none());
    assert!(other.lock("mk:l").try_acquire().await.unwrap().is_none());
    // The same set from the other client, in another order, waits for the whole set.
    let theirs = other
        .multi_lock(vec![
            other.lock("mk:l"),
            other.rw_lock("mk:rw").write(),
            other.fair_lock("mk:fair"),
            other.rlock("mk:r"),
        ])
        .unwrap()
        .wait(Duration::from_secs(10));
    let waiting = tokio::spawn(async move { theirs.acquire().await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(!waiting.is_finished());
    guard.release().await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
    let mut conn = raw(&s).await;
    assert!(keys_but_latches(&mut conn).await.is_empty());
}

#[tokio::test]
async fn an_uncontended_set_of_lease_members_is_taken_without_a_script() {
    let s = server();
    let (c, other) = (client(&s).await, client(&s).await);
    let mut conn = raw(&s).await;
    let multi = c
        .multi_lock_names(["{pl}:a", "{pl}:b"])
        .unwrap()
        .lease(Duration::from_secs(10));
    // The first round loads the release script (NOSCRIPT, then EVAL): not counted.
    multi.acquire().await.unwrap().release().await.unwrap();
    let before = script_calls(&mut conn).await;
    let guard = multi.acquire().await.unwrap();
    assert_eq!(
        script_calls(&mut conn).await - before,
        0,
        "each member's SET NX PX, no multi_acquire script"
    );
    // Taken for real: another client's lock on a member is refused.
    assert!(other.lock("{pl}:b").try_acquire().await.unwrap().is_none());
    guard.release().await.unwrap();
    assert_eq!(keys_but_latches(&mut conn).await, Vec::<String>::new());
    // One member busy: the plain attempt's other member is undone, and the script reports
    // the busy one (its TTL, so a waiter sleeps no longer than the holder's lease).
    let held = other
        .lock("{pl}:b")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    assert!(multi.try_acquire().await.unwrap().is_none());
    assert_eq!(keys_but_latches(&mut conn).await, ["{pl}:b"]);
    held.release().await.unwrap();
}
