//! Fair lock (Redisson RFairLock layout) through the driver, on a real Redis: reentrant holds,
//! strict FIFO among waiters of several clients, waiters that give up, are cancelled or die
//! leave the queue, watchdog, fencing, lost-lock signal, and the refusals.

mod common;
mod family;
use common::*;
use redlatch::{Client, ErrorKind, LockKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUEUE: &str = "redisson_lock_queue:{";
const TIMEOUTS: &str = "redisson_lock_timeout:{";

fn queue_key(name: &str) -> String {
    format!("{QUEUE}{name}}}")
}

fn timeouts_key(name: &str) -> String {
    format!("{TIMEOUTS}{name}}}")
}

async fn queue(conn: &mut redis::aio::MultiplexedConnection, name: &str) -> Vec<String> {
    cmd(conn, &["LRANGE", &queue_key(name), "0", "-1"]).await
}

/// Polls until the queue of `name` has `len` waiters (panics after 5 s).
async fn until_queued(conn: &mut redis::aio::MultiplexedConnection, name: &str, len: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let q = queue(conn, name).await;
        if q.len() == len {
            return q;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "queue never reached {len}: {q:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn reentrant_holds_in_the_redisson_hash_and_try_acquire_never_queues() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let lock = client.fair_lock("fair:a").lease(Duration::from_secs(20));
    assert_eq!(lock.kind(), LockKind::Fair);
    assert!(lock.is_reentrant());
    let owner = lock.owner_id().unwrap();
    let outer = lock.acquire().await.unwrap();
    let inner = lock.try_acquire().await.unwrap().expect("re-entry never waits");
    let hash: HashMap<String, i64> = cmd(&mut conn, &["HGETALL", "fair:a"]).await;
    assert_eq!(hash, HashMap::from([(owner, 2)]));
    assert_eq!(lock.hold_count().await.unwrap(), 2);

    let other = client.fair_lock("fair:a");
    assert!(other.try_acquire().await.unwrap().is_none());
    assert!(
        queue(&mut conn, "fair:a").await.is_empty(),
        "try_acquire never queues"
    );
    inner.release().await.unwrap();
    outer.release().await.unwrap();
    assert!(!lock.locked().await.unwrap());
    let g = other.try_acquire().await.unwrap().expect("free now");
    g.release().await.unwrap();
    assert_eq!(keys_but_latches(&mut conn).await, Vec::<String>::new());
}

/// 20 waiters on 4 clients queue one after another; grants follow the queue exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_waiters_of_four_clients_are_granted_in_queue_order() {
    let s = server();
    let clients: Vec<Client> = futures::future::join_all((0..4).map(|_| client(&s))).await;
    let mut conn = raw(&s).await;
    let name = "fair:fifo";
    let holder = clients[0].fair_lock(name).acquire().await.unwrap();
    let granted = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let lock = clients[i % 4].fair_lock(name).wait(Duration::from_secs(30));
        let owner = lock.owner_id().unwrap();
        let granted = granted.clone();
        tasks.push(tokio::spawn(async move {
            let guard = lock.acquire().await.unwrap();
            granted.lock().unwrap().push(owner);
            tokio::time::sleep(Duration::from_millis(2)).await;
            guard.release().await.unwrap();
        }));
        // One at a time, so the order they queued in is known.
        until_queued(&mut conn, name, i + 1).await;
    }
    let queued = queue(&mut conn, name).await;
    holder.release().await.unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(20), t)
            .await
            .unwrap()
            .unwrap();
    }
    assert_eq!(*granted.lock().unwrap(), queued, "grants follow the queue");
    assert_eq!(
        keys_but_latches(&mut conn).await,
        Vec::<String>::new(),
        "queue and deadlines gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_waiter_leaves_the_queue_before_it_returns() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let name = "fair:timeout";
    let holder = client.fair_lock(name).acquire().await.unwrap();
    let quick = client.fair_lock(name).wait(Duration::from_millis(300));
    let quitter = tokio::spawn(async move { quick.acquire().await.map(|_| ()) });
    until_queued(&mut conn, name, 1).await;
    let patient = client.fair_lock(name).wait(Duration::from_secs(20));
    let patient_owner = patient.owner_id().unwrap();
    let next = tokio::spawn(async move { patient.acquire().await });
    until_queued(&mut conn, name, 2).await;
    let err = quitter.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired);
    // Gone from the queue and the deadlines by the time it returned.
    assert_eq!(queue(&mut conn, name).await, std::slice::from_ref(&patient_owner));
    let deadlines: Vec<String> = cmd(&mut conn, &["ZRANGE", &timeouts_key(name), "0", "-1"]).await;
    assert_eq!(deadlines, [patient_owner]);
    let released = Instant::now();
    holder.release().await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(5), next)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        released.elapsed() < Duration::from_secs(2),
        "the next waiter got it promptly"
    );
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_waiter_leaves_the_queue_and_the_next_gets_the_lock() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let name = "fair:cancel";
    let holder = client.fair_lock(name).acquire().await.unwrap();
    // Its slot is a minute: had it stayed queued, the next waiter would wait that long.
    let first = client.fair_lock(name).wait(Duration::from_secs(60));
    let cancelled = tokio::spawn(async move { first.acquire().await.map(|_| ()) });
    until_queued(&mut conn, name, 1).await;
    let second = client.fair_lock(name).wait(Duration::from_secs(20));
    let second_owner = second.owner_id().unwrap();
    let next = tokio::spawn(async move { second.acquire().await });
    until_queued(&mut conn, name, 2).await;
    cancelled.abort();
    assert_eq!(until_queued(&mut conn, name, 1).await, [second_owner]);
    holder.release().await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(5), next)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    g.release().await.unwrap();
}

/// A waiter whose process died (queued by the script alone, never refreshed, never aborted)
/// holds up the next one until its deadline, one wait slot after the holder's lease, then
/// is dropped from the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_waiter_is_dropped_once_its_wait_slot_passes() {
    use redlatch::protocol::family::fair;
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let name = "fair:dead";
    let holder = client
        .fair_lock(name)
        .lease(Duration::from_millis(500))
        .acquire()
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let dead = fair::acquire(&fair::Acquire {
        name,
        owner: "dead-process:1",
        lease_ms: 30_000,
        wait_slot_ms: 1_000,
        now_ms: now,
        queue: true,
        fenced: false,
        request_id: "dead-request",
        latch_ttl_ms: 1_000,
    });
    let mut args: Vec<String> = vec![dead.script.source().to_owned(), dead.keys.len().to_string()];
    args.extend(dead.keys.iter().cloned());
    args.extend(dead.args.iter().cloned());
    let refs: Vec<&str> = std::iter::once("EVAL")
        .chain(args.iter().map(String::as_str))
        .collect();
    let _: redis::Value = cmd(&mut conn, &refs).await;
    let due: f64 = cmd(&mut conn, &["ZSCORE", &timeouts_key(name), "dead-process:1"]).await;
    let live = client.fair_lock(name).wait(Duration::from_secs(10));
    let started = Instant::now();
    let next = tokio::spawn(async move { live.acquire().await });
    until_queued(&mut conn, name, 2).await;
    holder.release().await.unwrap();
    let g = tokio::time::timeout(Duration::from_secs(8), next)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let granted_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    assert!(
        granted_at >= due,
        "FIFO: not before the dead waiter's deadline ({granted_at} < {due})"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "bounded by the dead waiter's slot"
    );
    assert!(!queue(&mut conn, name)
        .await
        .contains(&"dead-process:1".to_owned()));
    g.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_renews_a_fair_hold_and_reports_its_loss() {
    let s = server();
    let client = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let lock = client.fair_lock("fair:wd");
    let guard = lock.acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await; // 4 x the watchdog timeout
    assert!(!guard.is_lost());
    assert!(guard.owned().await.unwrap(), "expired despite the watchdog");
    let _: () = cmd(&mut conn, &["DEL", "fair:wd"]).await;
    tokio::time::timeout(Duration::from_secs(3), guard.lost())
        .await
        .expect("lost fires");
    assert_eq!(guard.lost_reason(), Some(redlatch::Reason::Deleted));
    assert_eq!(guard.release().await.unwrap_err().kind(), ErrorKind::LockLost);
}

#[tokio::test]
async fn fenced_fair_locks_hand_out_increasing_tokens() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let counter = "redisson_lock_token:{fair:fence}";
    let a = client.fair_lock("fair:fence").fenced().acquire().await.unwrap();
    let t1 = a.fencing_token().unwrap();
    a.release().await.unwrap();
    let ttl: i64 = cmd(&mut conn, &["PTTL", counter]).await;
    assert_eq!(ttl, -1, "without fence_ttl the counter persists, as in Redisson");
    let lock = client
        .fair_lock("fair:fence")
        .fenced()
        .fence_ttl(Duration::from_secs(600));
    let b = lock.acquire().await.unwrap();
    assert!(b.fencing_token().unwrap() > t1);
    let ttl: i64 = cmd(&mut conn, &["PTTL", counter]).await;
    assert!(ttl > 590_000, "fence_ttl applies: {ttl}");
    b.release().await.unwrap();
}

#[tokio::test]
async fn bad_input_and_quorum_clients_are_refused_before_redis() {
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|n| n.url()).collect();
    let quorum = Client::quorum(&urls).await.unwrap();
    for lock in [
        quorum.fair_lock("fair:q"),
        quorum.rw_lock("rw:q").read(),
        quorum.rw_lock("rw:q").write(),
    ] {
        let err = lock.acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            err.message(),
            "fair and read/write locks need a single-node, Cluster or Sentinel client"
        );
        assert_eq!(
            lock.locked().await.unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    let single = client(&nodes[0]).await;
    let err = single.fair_lock("").acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = single
        .fair_lock("fair:x")
        .lease(Duration::ZERO)
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    for n in &nodes {
        let mut conn = raw(n).await;
        assert_eq!(
            keys_but_latches(&mut conn).await,
            Vec::<String>::new(),
            "nothing sent"
        );
    }
}

/// With polling slowed to 10 s, the queue head can only be this prompt if the release's message
/// wakes it; and that message goes to the head's own channel only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_exactly_the_queue_head_by_its_message() {
    let s = server();
    let client = Client::builder(&s.url())
        .poll_interval(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let name = "fair:wake";
    let holder = client.fair_lock(name).acquire().await.unwrap();
    let mut waiters = Vec::new();
    for i in 0..3 {
        let lock = client.fair_lock(name).wait(Duration::from_secs(30));
        waiters.push(tokio::spawn(async move { lock.acquire().await }));
        until_queued(&mut conn, name, i + 1).await;
    }
    let head = queue(&mut conn, name).await.remove(0);
    let recorder = family::Recorder::start(&s.url()).await;
    let released = Instant::now();
    holder.release().await.unwrap();
    let first = waiters.remove(0);
    let g = tokio::time::timeout(Duration::from_secs(5), first)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "woken by its message, not the poll"
    );
    let messages = recorder.take().await;
    let channel = format!("redisson_lock__channel:{{{name}}}:{head}");
    assert_eq!(
        messages,
        [(channel, "0".to_owned())],
        "one message, to the head only"
    );
    assert_eq!(
        queue(&mut conn, name).await.len(),
        2,
        "the others still wait their turn"
    );
    g.release().await.unwrap();
    for w in waiters {
        let g = tokio::time::timeout(Duration::from_secs(5), w)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        g.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_stops_a_queued_waiter_and_it_leaves_the_queue() {
    let s = server();
    let holder_client = client(&s).await;
    let waiter_client = client(&s).await;
    let mut conn = raw(&s).await;
    let name = "fair:close";
    let holder = holder_client.fair_lock(name).acquire().await.unwrap();
    let lock = waiter_client.fair_lock(name).wait(Duration::from_secs(60));
    let waiting = tokio::spawn(async move { lock.acquire().await });
    until_queued(&mut conn, name, 1).await;
    waiter_client.close().await;
    let err = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection);
    until_queued(&mut conn, name, 0).await;
    holder.release().await.unwrap();
}

/// The blocking API (C and sync Python build on it): the same kinds, the same refusals.
#[test]
fn the_blocking_api_has_fair_and_read_write_locks() {
    let s = server();
    let client = redlatch::blocking::Client::connect(&s.url()).unwrap();
    let fair = client.fair_lock("b:fair").wait(Duration::from_secs(5));
    assert_eq!(fair.kind(), LockKind::Fair);
    let g = fair.acquire().unwrap();
    assert_eq!(fair.hold_count().unwrap(), 1);
    assert!(client.fair_lock("b:fair").try_acquire().unwrap().is_none());
    g.release().unwrap();
    let rw = client.rw_lock("b:rw");
    assert_eq!(rw.name(), "b:rw");
    let r = rw.read().acquire().unwrap();
    assert_eq!(rw.read().kind(), LockKind::Read);
    assert!(
        client.rw_lock("b:rw").read().try_acquire().unwrap().is_some(),
        "readers share"
    );
    assert_eq!(
        rw.write().try_acquire().unwrap_err().kind(),
        ErrorKind::WouldDeadlock
    );
    r.release().unwrap();
    let w = rw.write().acquire().unwrap();
    assert!(client.rw_lock("b:rw").read().try_acquire().unwrap().is_none());
    w.release().unwrap();
}
