//! Blocking calls on a single-node client do their socket I/O on the calling thread (issue
//! 15: no hand-off to the runtime's worker and back), under the transport's fault rules: a
//! broken connection is retried once on a new one, a stalled node bounds the call to one
//! network timeout, and waits still work through the runtime.

mod common;
use common::relay::Relay;
use common::*;
use redlatch::blocking;
use redlatch::ErrorKind;
use redlatch_fleet::{RedisServer, ServerOptions};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Occupies the client's only runtime worker until the returned sender is dropped or sent to.
fn block_the_worker(client: &blocking::Client) -> mpsc::Sender<()> {
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    client.runtime().spawn(async move {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv(); // a blocking wait: the worker runs nothing else meanwhile
    });
    started_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the worker started the blocking task");
    release_tx
}

fn sync_redis(s: &redlatch_fleet::RedisServer) -> redis::Connection {
    redis::Client::open(s.admin_url())
        .unwrap()
        .get_connection()
        .unwrap()
}

#[test]
fn uncontended_calls_need_no_runtime_worker() {
    let s = server();
    if s.is_valkey() {
        // By design a Valkey client keeps the runtime path (its release uses DELIFEQ, which the
        // calling-thread transport does not send): nothing to check here.
        eprintln!("skipped on Valkey: its clients keep the runtime path");
        return;
    }
    let client = blocking::Client::connect(&s.url()).expect("connect");
    let lock = client.lock("local:lease").lease(Duration::from_secs(30));
    let rlock = client.rlock("local:rlock").lease(Duration::from_secs(30));
    let worker = block_the_worker(&client);

    // On a worker-driven path none of these can finish while the worker is busy.
    let (done_tx, done_rx) = mpsc::channel();
    let calls = std::thread::spawn(move || {
        let g = lock.acquire().expect("acquire");
        assert!(lock.locked().expect("locked"));
        g.extend(Duration::from_secs(30)).expect("extend");
        assert!(g.owned().expect("owned"));
        g.release().expect("release");
        assert!(!lock.locked().expect("locked after release"));
        let r = rlock.try_acquire().expect("rlock").expect("free");
        assert_eq!(rlock.hold_count().expect("hold count"), 1);
        r.release().expect("rlock release");
        done_tx.send(()).unwrap();
    });
    let finished = done_rx.recv_timeout(Duration::from_secs(10));
    drop(worker);
    calls.join().expect("the calls did not panic");
    assert!(
        finished.is_ok(),
        "blocking calls waited for the runtime's worker: their I/O is not on the calling thread"
    );
}

#[test]
fn a_wait_still_works_through_the_runtime() {
    let s = server();
    let client = blocking::Client::connect(&s.url()).expect("connect");
    let lock = client.lock("local:wait").lease(Duration::from_secs(30));
    let held = lock.acquire().expect("acquire");
    let waiter = {
        let lock = lock.clone().wait(Duration::from_secs(10));
        std::thread::spawn(move || {
            let g = lock.acquire().expect("acquired after the release");
            g.release().expect("release");
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    held.release().expect("release");
    waiter.join().expect("the waiter got the lock");
}

#[test]
fn calls_after_client_kill_succeed_and_the_local_connection_was_cut() {
    let s = server();
    let client = blocking::Client::connect(&s.url()).expect("connect");
    let lock = client.lock("local:kill").lease(Duration::from_secs(30));
    let mut admin = sync_redis(&s);
    let mut kill = || -> i64 {
        redis::cmd("CLIENT")
            .arg(&["KILL", "TYPE", "normal"])
            .query(&mut admin)
            .unwrap()
    };
    assert!(
        !lock.locked().expect("first call"),
        "made the calling thread's connection"
    );
    // Valkey clients keep the runtime path (DELIFEQ): only the multiplexed connection exists.
    let connections = if s.is_valkey() { 1 } else { 2 };
    assert!(
        kill() >= connections,
        "the multiplexed and (off Valkey) the calling thread's connections were cut"
    );
    let g = lock
        .try_acquire()
        .expect("try_acquire after a kill")
        .expect("free");
    kill();
    assert!(lock.locked().expect("locked after a kill"));
    kill();
    g.extend(Duration::from_secs(30)).expect("extend after a kill");
    kill();
    g.release().expect("release after a kill");
    kill();
    assert!(!lock.locked().expect("locked after a kill"));
}

#[test]
fn calls_after_redis_closed_the_idle_connection_succeed() {
    let s = server();
    let client = blocking::Client::connect(&s.url()).expect("connect");
    let lock = client.lock("local:idle").lease(Duration::from_secs(30));
    let mut admin = sync_redis(&s);
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "timeout", "1"])
        .query(&mut admin)
        .unwrap();
    assert!(!lock.locked().expect("first call"));
    std::thread::sleep(Duration::from_millis(2_300)); // 1 s idle + Redis's check interval
    let g = lock.try_acquire().expect("try_acquire after idle").expect("free");
    std::thread::sleep(Duration::from_millis(2_300));
    g.release().expect("release after idle");
}

#[test]
fn a_stalled_node_fails_a_call_within_about_one_network_timeout() {
    let s = server();
    let io = tokio::runtime::Runtime::new().unwrap();
    let relay = io.block_on(Relay::start(s.port()));
    let network_timeout = Duration::from_millis(300);
    let builder = redlatch::Client::builder(&relay.url()).network_timeout(network_timeout);
    let client = blocking::Client::from_builder(builder).expect("connect");
    let lock = client.lock("local:stall").lease(Duration::from_secs(30));
    assert!(!lock.locked().expect("before the stall"));

    relay.blackhole();
    let started = Instant::now();
    let e = lock.try_acquire().expect_err("no reply");
    let took = started.elapsed();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // Generous (a hang guard): one network timeout plus scheduling, not one per retry.
    assert!(took < network_timeout * 4, "the call took {took:?}");

    io.block_on(async { relay.restore() });
    let g = lock.try_acquire().expect("after the stall").expect("free");
    g.release().expect("release");
    let mut admin = sync_redis(&s);
    let left: bool = redis::cmd("EXISTS").arg("local:stall").query(&mut admin).unwrap();
    assert!(!left, "no grant left behind");
}

#[test]
fn a_release_whose_new_connection_cannot_log_in_during_a_stop_still_applies_when_it_resumes() {
    // Logged in as a user: a stopped server still accepts a TCP connection (the kernel does),
    // but holds its AUTH. Before stop 37 a release that needed a new calling-thread connection
    // then (here: the idle one is busy with another thread's release) spent its whole network
    // timeout logging in and was never sent anywhere: its permit stayed taken for good. Now
    // it queues on the multiplexed connection and applies when the server resumes.
    let s = RedisServer::start_with_options(&ServerOptions {
        acl_user: Some(true),
        ..ServerOptions::default()
    })
    .expect("start redis-server");
    let builder = redlatch::Client::builder(&s.url()).network_timeout(Duration::from_millis(600));
    let client = blocking::Client::from_builder(builder).expect("connect");
    let mut admin = sync_redis(&s);
    let sem = client.semaphore("local:sem");
    assert!(sem.try_set_permits(3).expect("set permits")); // made the calling thread's connection
    sem.acquire(2).expect("acquire");
    s.pause().unwrap();
    let first = {
        let sem = sem.clone();
        std::thread::spawn(move || sem.release(1)) // takes the idle connection
    };
    std::thread::sleep(Duration::from_millis(150));
    let second = sem.release(1).expect_err("no reply while stopped");
    let first = first.join().unwrap().expect_err("no reply while stopped");
    s.resume().unwrap();
    assert_eq!(first.kind(), ErrorKind::Connection, "{first}");
    assert_eq!(second.kind(), ErrorKind::Connection, "{second}");
    let mut available = String::new();
    for _ in 0..100 {
        available = redis::cmd("GET").arg("local:sem").query(&mut admin).unwrap();
        if available == "3" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        available, "3",
        "both releases held up by the stop applied when it resumed"
    );
}

#[test]
fn a_semaphore_release_after_two_releases_timed_out_in_a_pause_applies_when_it_ends() {
    // A C user trial of stop 46: during a CLIENT PAUSE a lease lock's and a reentrant lock's
    // releases timed out, each on a calling-thread connection; the semaphore release after them
    // was never sent (its permits taken for good).
    let s = server();
    let builder = redlatch::Client::builder(&s.url()).network_timeout(Duration::from_millis(1000));
    let client = blocking::Client::from_builder(builder).expect("connect");
    let mut admin = sync_redis(&s);
    let lease = client.lock("local:stall:lease").lease(Duration::from_secs(30));
    let rlock = client.rlock("local:stall:rlock").lease(Duration::from_secs(30));
    let sem = client.semaphore("local:stall:sem");
    assert!(sem.try_set_permits(3).expect("set permits"));
    let held_lease = lease.acquire().expect("lease");
    let held_rlock = rlock.acquire().expect("rlock");
    sem.acquire(2).expect("permits");
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "4000", "ALL"])
        .query(&mut admin)
        .unwrap();
    let _ = held_lease.release_final();
    let _ = held_rlock.release_final();
    let e = sem.release(2).expect_err("no reply while paused");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let mut available = String::new();
    for _ in 0..300 {
        available = redis::cmd("GET")
            .arg("local:stall:sem")
            .query(&mut admin)
            .unwrap();
        if available == "3" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        available, "3",
        "the release held up by the pause applied when it ended"
    );
}
