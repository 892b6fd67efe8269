//! One client's waiters for a lease or reentrant lock form a line (line.rs): they get the lock
//! in the order they started waiting, a waiter that loses a race keeps its place, a new
//! acquire of a lease lock queues behind them, and each release costs one attempt. Real
//! servers; "another process" is a raw connection. Polls are a minute apart, so only release
//! messages and the line wake anyone within these tests' bounds.

use crate::driver::acquire::acquire;
use crate::driver::testing::{self, cmd, lease_spec, raw, within, Faulty};
use crate::driver::{Config, Engine};
use redis::aio::MultiplexedConnection;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn rare_polls() -> Config {
    Config {
        poll_interval: Duration::from_secs(60),
        ..testing::config()
    }
}

fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// Acquires `name` (a lease lock) with no wait limit, notes `who` got it, releases.
fn waiter(
    engine: &Arc<Engine>,
    name: &str,
    order: &Arc<Mutex<Vec<usize>>>,
    who: usize,
) -> tokio::task::JoinHandle<()> {
    let (engine, order, spec) = (
        engine.clone(),
        order.clone(),
        lease_spec(name, Some(Duration::from_secs(60))),
    );
    tokio::spawn(async move {
        let hold = acquire(&engine, &spec, None).await.unwrap();
        order.lock().unwrap().push(who);
        hold.release().await.unwrap();
    })
}

/// Waits until this client has `n` waiters in the line of `name`.
async fn until_in_line(engine: &Engine, name: &str, n: usize) {
    within(async {
        while engine.lines.len(&channel(name)) < n {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
}

async fn taken_by_another_process(conn: &mut MultiplexedConnection, name: &str) {
    let _: () = cmd(
        conn,
        &["SET", name, "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0", "PX", "60000"],
    )
    .await;
}

async fn join_all(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in tasks {
        within(t).await.unwrap();
    }
}

#[tokio::test]
async fn waiters_get_the_lock_in_order_and_each_release_costs_one_attempt() {
    const WAITERS: usize = 8;
    let s = testing::server();
    let config = rare_polls();
    let counting = Faulty::new(testing::transport(&s, &config));
    let engine = testing::engine_over(vec![counting.clone()], config);
    let mut conn = raw(&s).await;
    let name = "line:order";
    taken_by_another_process(&mut conn, name).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..WAITERS {
        tasks.push(waiter(&engine, name, &order, who));
        until_in_line(&engine, name, who + 1).await;
    }
    let before = counting.evals();
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", &channel(name), "0"]).await;
    join_all(tasks).await;
    assert_eq!(*order.lock().unwrap(), (0..WAITERS).collect::<Vec<_>>());
    // Requests: the 8 releases, one attempt per hand-off, and at most one more per hand-off
    // by the next waiter when it sees the message its predecessor acted on only after
    // becoming the head (line.rs). Every waiter trying on every release: 8 + 36.
    let attempts = counting.evals() - before - WAITERS;
    assert!(
        (WAITERS..=2 * WAITERS).contains(&attempts),
        "{attempts} attempts for {WAITERS} hand-offs"
    );
}

#[tokio::test]
async fn a_waiter_that_loses_a_race_keeps_its_place() {
    let s = testing::server();
    let config = rare_polls();
    let counting = Faulty::new(testing::transport(&s, &config));
    let engine = testing::engine_over(vec![counting.clone()], config);
    let mut conn = raw(&s).await;
    let name = "line:race";
    taken_by_another_process(&mut conn, name).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..3 {
        tasks.push(waiter(&engine, name, &order, who));
        until_in_line(&engine, name, who + 1).await;
    }
    // Another process takes the lock between its release and the first waiter's attempt:
    // the key gets a new foreign token, then the release message goes out.
    let before = counting.evals();
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    taken_by_another_process(&mut conn, name).await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", &channel(name), "0"]).await;
    // The woken waiter's attempt found it busy (counted as sent: on Valkey an attempt may be
    // a plain command rather than a script).
    within(async {
        while counting.evals() < before + 1 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await; // its reply came (a round trip here)
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", &channel(name), "0"]).await;
    join_all(tasks).await;
    assert_eq!(
        *order.lock().unwrap(),
        vec![0, 1, 2],
        "the first waiter kept its place"
    );
}

#[tokio::test]
async fn a_new_acquire_of_a_lease_lock_queues_behind_the_waiters() {
    let s = testing::server();
    let engine = testing::engine(&[&s], rare_polls()).await;
    let mut conn = raw(&s).await;
    let name = "line:newcomer";
    taken_by_another_process(&mut conn, name).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..2 {
        tasks.push(waiter(&engine, name, &order, who));
        until_in_line(&engine, name, who + 1).await;
    }
    // Freed without a message (only a poll, a minute away, would tell the waiters): a new
    // acquire must not take it past them.
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    tasks.push(waiter(&engine, name, &order, 2));
    until_in_line(&engine, name, 3).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(order.lock().unwrap().is_empty(), "{:?}", order.lock().unwrap());
    let _: i64 = cmd(&mut conn, &["PUBLISH", &channel(name), "0"]).await;
    join_all(tasks).await;
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
}

#[tokio::test]
async fn a_head_that_leaves_without_the_lock_lets_the_next_waiter_try_at_once() {
    let s = testing::server();
    let engine = testing::engine(&[&s], rare_polls()).await;
    let mut conn = raw(&s).await;
    let name = "line:leave";
    taken_by_another_process(&mut conn, name).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let head = waiter(&engine, name, &order, 0);
    until_in_line(&engine, name, 1).await;
    let next = waiter(&engine, name, &order, 1);
    until_in_line(&engine, name, 2).await;
    // Freed with no message (as by a holder that does not publish), then the head gives up
    // its wait: the next waiter must try now, not at its next poll.
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    head.abort();
    join_all(vec![next]).await;
    assert_eq!(*order.lock().unwrap(), vec![1]);
}

#[tokio::test]
async fn a_poll_lets_only_the_head_try() {
    // A user trial: with polls every 50 ms, a waiter behind others took a lock freed without
    // a message (the first to poll won) in 7 rounds of 20. Polls every 20 ms here.
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let name = "line:poll";
    taken_by_another_process(&mut conn, name).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for who in 0..5 {
        tasks.push(waiter(&engine, name, &order, who));
        until_in_line(&engine, name, who + 1).await;
    }
    // Freed without a message: only polls can see it.
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    join_all(tasks).await;
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn an_owner_holding_the_lock_re_enters_past_the_waiters_ahead() {
    // A user trial: owner X's second acquire waited in line behind owner Y, who waited for X's
    // release: it never got in while X held the lock.
    let s = testing::server();
    let engine = testing::engine(&[&s], rare_polls()).await;
    let mut conn = raw(&s).await;
    let name = "line:reenter";
    let _: i64 = cmd(&mut conn, &["HSET", name, "foreign:1", "1"]).await;
    let _: i64 = cmd(&mut conn, &["PEXPIRE", name, "60000"]).await;
    let spawn = |owner: u64| {
        let engine = engine.clone();
        let spec = testing::rlock_spec(&engine, name, owner, Some(Duration::from_secs(60)));
        tokio::spawn(async move { acquire(&engine, &spec, None).await.unwrap() })
    };
    let x1 = spawn(1);
    until_in_line(&engine, name, 1).await;
    let y = spawn(2);
    until_in_line(&engine, name, 2).await;
    let x2 = spawn(1);
    until_in_line(&engine, name, 3).await;
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", &channel(name), "0"]).await;
    let first = within(x1).await.unwrap();
    let again = within(x2).await.unwrap();
    let counts: Vec<String> = cmd(&mut conn, &["HVALS", name]).await;
    assert_eq!(counts, vec!["2".to_owned()], "X holds twice");
    assert!(!y.is_finished(), "Y waits for X");
    again.release().await.unwrap();
    first.release().await.unwrap();
    within(y).await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn with_redis_gone_the_waiters_without_a_wait_end_together() {
    // A user trial: waiter k of a line ended (k + 1) network timeouts after Redis stopped
    // answering, as each one tried only once it was the head.
    const WAITERS: usize = 6;
    let s = testing::server();
    let config = Config {
        network_timeout: Duration::from_secs(2),
        ..testing::config()
    };
    let engine = testing::engine(&[&s], config).await;
    let mut conn = raw(&s).await;
    let name = "line:gone";
    taken_by_another_process(&mut conn, name).await;
    let mut tasks = Vec::new();
    for who in 0..WAITERS {
        let (e, spec) = (engine.clone(), lease_spec(name, None));
        tasks.push(tokio::spawn(async move { acquire(&e, &spec, None).await.err() }));
        until_in_line(&engine, name, who + 1).await;
    }
    s.pause().unwrap();
    let paused = std::time::Instant::now();
    let mut errors = Vec::new();
    for t in tasks {
        errors.push(within(t).await.unwrap());
    }
    let took = paused.elapsed();
    s.resume().unwrap();
    for e in errors {
        let e = e.expect("no grant from a paused server");
        assert_eq!(e.kind(), crate::ErrorKind::Connection, "{e}");
    }
    // About one network timeout (the head's attempt, which the others go by), where one
    // waiter after another took six, and each one's own attempt after the head's two.
    assert!(
        took < Duration::from_millis(3_200),
        "the last ended after {took:?}"
    );
}

#[tokio::test]
async fn a_head_that_is_not_polled_is_passed() {
    // A user trial: an acquire future kept but no longer polled (the losing branch of a
    // `select!`) held the head of the line, and every later acquire of the lock in its client
    // waited behind it for ever.
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let name = "line:parked";
    taken_by_another_process(&mut conn, name).await;
    let spec = lease_spec(name, Some(Duration::from_secs(60)));
    let mut parked = Box::pin(acquire(&engine, &spec, None));
    let ran = tokio::time::timeout(Duration::from_millis(200), &mut parked).await;
    assert!(ran.is_err(), "the lock is busy");
    assert_eq!(engine.lines.len(&channel(name)), 1);
    let _: i64 = cmd(&mut conn, &["DEL", name]).await;
    let _: i64 = cmd(&mut conn, &["PUBLISH", &channel(name), "0"]).await;
    let hold = within(acquire(&engine, &spec, None)).await.unwrap();
    hold.release().await.unwrap();
    drop(parked);
    assert_eq!(engine.lines.len(&channel(name)), 0, "both left the line");
}
