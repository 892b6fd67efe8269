//! What a waiter costs Redis while it waits: a waiter for a kind whose holders all publish
//! their releases (Redisson's) waits for the message, not for the next poll; a lease-lock
//! waiter keeps polling (its peers, redis-py and node-redlock, publish nothing).

mod common;
use common::*;
use redlatch::ErrorKind;
use std::time::Duration;

const WAIT: Duration = Duration::from_millis(1500);

/// Attempts sent so far: script calls, and transactions (Valkey 9 runs lease locks as
/// `MULTI`/`EXEC` of plain commands).
async fn attempts(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = cmd(conn, &["INFO", "commandstats"]).await;
    let exec = info
        .lines()
        .filter_map(|l| {
            l.strip_prefix("cmdstat_exec:calls=")?
                .split(',')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum::<u64>();
    script_calls(conn).await + exec
}

/// The attempts a waiter made while it waited `WAIT` in vain.
async fn attempts_while_waiting<F, Fut>(s: &redlatch_fleet::RedisServer, wait: F) -> u64
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ErrorKind>,
{
    let mut conn = raw(s).await;
    let before = attempts(&mut conn).await;
    assert_eq!(wait().await, ErrorKind::NotAcquired);
    attempts(&mut conn).await - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_for_a_publishing_kind_waits_for_the_message_not_the_poll() {
    // A user trial of stop 43: with the 50 ms poll every waiter tried ~25 times a second while
    // subscribed (ten waiters: ~250 commands a second to a Redis shared with Java services,
    // whose Redisson waiters send none).
    let s = server();
    let (holder, waiter) = (client(&s).await, client(&s).await);
    let held = holder
        .rlock("load:r")
        .lease(Duration::from_secs(30))
        .acquire()
        .await
        .unwrap();
    let rlock = waiter.rlock("load:r").wait(WAIT);
    let tries = attempts_while_waiting(&s, || async { rlock.acquire().await.unwrap_err().kind() }).await;
    assert!(
        tries <= 8,
        "a reentrant-lock waiter tried {tries} times in {WAIT:?}"
    );

    let sem = holder.semaphore("load:s");
    assert!(sem.try_set_permits(1).await.unwrap());
    sem.acquire(1).await.unwrap();
    let other = waiter.semaphore("load:s").wait(WAIT);
    let tries = attempts_while_waiting(&s, || async { other.acquire(1).await.unwrap_err().kind() }).await;
    assert!(tries <= 8, "a semaphore waiter tried {tries} times in {WAIT:?}");

    // Still woken at once by the release message.
    let rlock = waiter.rlock("load:r").wait(Duration::from_secs(10));
    let waiting = tokio::spawn(async move { rlock.acquire().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = std::time::Instant::now();
    held.release().await.unwrap();
    let got = within(Duration::from_secs(5), waiting).await.unwrap().unwrap();
    assert!(
        released.elapsed() < Duration::from_millis(500),
        "woken after {:?}",
        released.elapsed()
    );
    got.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lock_waiter_keeps_polling_for_holders_that_do_not_publish() {
    let s = server();
    let (holder, waiter) = (client(&s).await, client(&s).await);
    let _held = holder
        .lock("load:l")
        .lease(Duration::from_secs(30))
        .acquire()
        .await
        .unwrap();
    let lock = waiter.lock("load:l").wait(WAIT);
    let tries = attempts_while_waiting(&s, || async { lock.acquire().await.unwrap_err().kind() }).await;
    assert!(
        tries >= 10,
        "a lease-lock waiter tried only {tries} times in {WAIT:?}"
    );
}
