//! Fair and read/write locks at the API level against Redisson 4.7.0: a redlatch `Client`
//! (`fair_lock`, `rw_lock`) on one side, a Redisson client (`getFairLock`,
//! `getReadWriteLock`) on the other, on one name: they exclude (or share, for readers) each
//! other, a release on one side wakes a waiter on the other by its message (well under the
//! 20 s lease), fair order holds with both sides' waiters in one queue, and the keys are the
//! same whichever side wrote them.

mod common;

use common::{answer, answer_timed, cli_hash, cli_keys, world, LONG_LEASE_MS, PROMPT};
use redlatch::{Client, Guard};
use std::time::{Duration, Instant};

/// Every waiter here waits (and so queues with a slot of) one minute, on both sides.
const WAIT: Duration = Duration::from_secs(60);

async fn redlatch_client(url: &str) -> Client {
    Client::builder(url)
        // Slow polling: a redlatch waiter this prompt was woken by Redisson's message.
        .poll_interval(Duration::from_secs(10))
        .connect()
        .await
        .unwrap()
}

/// `cli_keys` with both sides' owner ids replaced by `O`, so layouts compare.
fn shapes(keys: Vec<String>, owners: &[&str]) -> Vec<String> {
    keys.into_iter()
        .map(|k| owners.iter().fold(k, |k, o| k.replace(o, "O")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn fair_locks_exclude_and_wake_each_other_across_languages() {
    let w = world();
    let java = &w.java;
    let ours = redlatch_client(&w.server.url()).await;
    let lock = ours.fair_lock("fx").wait(WAIT);

    assert_eq!(
        answer(java.lock("fair", "fx", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    assert!(lock.try_acquire().await.unwrap().is_none(), "Java holds it");
    let waiting = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    java.unlock("fair", "fx", 1).unwrap();
    let guard: Guard = tokio::time::timeout(PROMPT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(released.elapsed() < PROMPT, "woken by Redisson's message");

    assert_eq!(
        answer(java.lock("fair", "fx", 2, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    let j3 = java.lock("fair", "fx", 3, WAIT.as_millis() as i64, LONG_LEASE_MS);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    guard.release().await.unwrap();
    let (got, took) = answer_timed(j3, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java woken after {took:?}");
    java.unlock("fair", "fx", 3).unwrap();
}

/// Java and redlatch waiters queue alternately behind a Java holder; each is granted in
/// queue order, and nobody behind the head gets it first.
#[tokio::test(flavor = "multi_thread")]
async fn fair_order_holds_with_java_and_redlatch_waiters_in_one_queue() {
    enum Waiter {
        Java(u64, redlatch_interop::Pending),
        Ours(String, tokio::task::JoinHandle<redlatch::Result<Guard>>),
    }
    let w = world();
    let java = &w.java;
    let ours = redlatch_client(&w.server.url()).await;
    let mut conn = redis::Client::open(w.server.admin_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let queue_len = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            redis::cmd("LLEN")
                .arg("redisson_lock_queue:{fo}")
                .query_async::<usize>(&mut conn)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        answer(java.lock("fair", "fo", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    let mut waiters = Vec::new();
    for i in 0..6u64 {
        if i % 2 == 0 {
            let tid = 10 + i;
            waiters.push(Waiter::Java(
                tid,
                java.lock("fair", "fo", tid, WAIT.as_millis() as i64, LONG_LEASE_MS),
            ));
        } else {
            let lock = ours.fair_lock("fo").wait(WAIT);
            let owner = lock.owner_id().unwrap();
            waiters.push(Waiter::Ours(
                owner,
                tokio::spawn(async move { lock.acquire().await }),
            ));
        }
        let deadline = Instant::now() + PROMPT;
        while queue_len(&mut conn).await < waiters.len() {
            assert!(Instant::now() < deadline, "waiter {i} never queued");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let queued: Vec<String> = redis::cmd("LRANGE")
        .arg("redisson_lock_queue:{fo}")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let expected: Vec<String> = waiters
        .iter()
        .map(|w| match w {
            Waiter::Java(tid, _) => java.owner(*tid),
            Waiter::Ours(owner, _) => owner.clone(),
        })
        .collect();
    assert_eq!(queued, expected, "one queue, in arrival order");
    java.unlock("fair", "fo", 1).unwrap();
    let mut waiters = waiters.into_iter();
    while let Some(head) = waiters.next() {
        match head {
            Waiter::Java(tid, pending) => {
                assert_eq!(
                    answer(pending, PROMPT * 2).await.unwrap(),
                    "true",
                    "Java {tid} in turn"
                );
                let rest: Vec<Waiter> = waiters.collect();
                for r in &rest {
                    if let Waiter::Ours(owner, task) = r {
                        assert!(!task.is_finished(), "{owner} jumped the queue");
                    }
                }
                java.unlock("fair", "fo", tid).unwrap();
                waiters = rest.into_iter();
            }
            Waiter::Ours(owner, task) => {
                let guard = tokio::time::timeout(PROMPT * 2, task)
                    .await
                    .unwrap()
                    .unwrap()
                    .unwrap();
                let rest: Vec<Waiter> = waiters.collect();
                for r in &rest {
                    if let Waiter::Java(tid, pending) = r {
                        assert!(
                            pending.try_answer().is_none(),
                            "Java {tid} jumped the queue ahead of {owner}"
                        );
                    }
                }
                guard.release().await.unwrap();
                waiters = rest.into_iter();
            }
        }
    }
    assert_eq!(
        cli_keys(&w.server),
        Vec::<String>::new(),
        "queue and deadlines gone"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn write_locks_exclude_and_read_locks_share_across_languages() {
    let w = world();
    let java = &w.java;
    let ours = redlatch_client(&w.server.url()).await;
    let rw = ours.rw_lock("rw");

    // Java writes: redlatch neither writes nor reads; its waiting writer is woken by the release.
    assert_eq!(
        answer(java.lock("write", "rw", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    assert!(rw.write().try_acquire().await.unwrap().is_none());
    assert!(rw.read().try_acquire().await.unwrap().is_none());
    let waiting = tokio::spawn({
        let write = rw.write().wait(WAIT);
        async move { write.acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    java.unlock("write", "rw", 1).unwrap();
    let guard = tokio::time::timeout(PROMPT, waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(released.elapsed() < PROMPT, "woken by Redisson's message");

    // redlatch writes: Java neither reads nor writes; its waiting reader is woken.
    assert_eq!(
        answer(java.lock("read", "rw", 2, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    let j3 = java.lock("read", "rw", 3, WAIT.as_millis() as i64, LONG_LEASE_MS);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    guard.release().await.unwrap();
    let (got, took) = answer_timed(j3, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java woken after {took:?}");

    // Readers share: Java's read hold and ours at once, each with its own timeout key.
    let ours_read = rw
        .read()
        .lease(Duration::from_millis(LONG_LEASE_MS as u64))
        .try_acquire()
        .await
        .unwrap()
        .expect("readers share");
    let owners = [java.owner(3), rw.owner_id()];
    let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
    let fields: Vec<String> = cli_hash(&w.server, "rw")
        .into_iter()
        .map(|(f, v)| format!("{f}={v}"))
        .collect();
    let mut fields = shapes(fields, &owners);
    fields.sort();
    assert_eq!(fields, ["O=1", "O=1", "mode=read"]);
    assert_eq!(
        shapes(cli_keys(&w.server), &owners),
        ["rw", "{rw}:O:rwlock_timeout:1", "{rw}:O:rwlock_timeout:1"]
    );
    assert_eq!(
        answer(java.lock("write", "rw", 4, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "false"
    );
    java.unlock("read", "rw", 3).unwrap();
    assert_eq!(
        answer(java.lock("write", "rw", 4, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "false",
        "redlatch still reads"
    );
    let j5 = java.lock("write", "rw", 5, WAIT.as_millis() as i64, LONG_LEASE_MS);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released = Instant::now();
    ours_read.release().await.unwrap();
    let (got, took) = answer_timed(j5, released, PROMPT * 2).await;
    assert_eq!(got.unwrap(), "true");
    assert!(took < PROMPT, "Java writer woken after {took:?}");
    java.unlock("write", "rw", 5).unwrap();
}

/// The same keys whichever side wrote them: a fair lock with one waiter, and a write lock.
#[tokio::test(flavor = "multi_thread")]
async fn the_keys_are_the_same_whichever_side_wrote_them() {
    let w = world();
    let java = &w.java;
    let ours = redlatch_client(&w.server.url()).await;

    // Java holds, a redlatch waiter queues; then redlatch holds, a Java waiter queues.
    assert_eq!(
        answer(java.lock("fair", "k1", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    let waiter = ours.fair_lock("k1").wait(WAIT);
    let waiter_owner = waiter.owner_id().unwrap();
    let task = tokio::spawn(async move { waiter.acquire().await });
    let holder_lock = ours
        .fair_lock("k2")
        .lease(Duration::from_millis(LONG_LEASE_MS as u64));
    let holder_owner = holder_lock.owner_id().unwrap();
    let holder = holder_lock.acquire().await.unwrap();
    let j2 = java.lock("fair", "k2", 2, WAIT.as_millis() as i64, LONG_LEASE_MS);
    let deadline = Instant::now() + PROMPT;
    while cli_keys(&w.server).len() < 6 {
        assert!(Instant::now() < deadline, "{:?}", cli_keys(&w.server));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let keys = cli_keys(&w.server);
    assert_eq!(
        keys.iter()
            .map(|k| k.replace("k1", "K").replace("k2", "K"))
            .collect::<Vec<_>>(),
        [
            "K",
            "K",
            "redisson_lock_queue:{K}",
            "redisson_lock_queue:{K}",
            "redisson_lock_timeout:{K}",
            "redisson_lock_timeout:{K}"
        ]
    );
    let owners = [java.owner(1), java.owner(2), waiter_owner, holder_owner];
    let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
    for name in ["k1", "k2"] {
        let fields: Vec<String> = cli_hash(&w.server, name)
            .into_iter()
            .map(|(f, v)| format!("{f}={v}"))
            .collect();
        assert_eq!(shapes(fields, &owners), ["O=1"], "{name}");
        assert_eq!(
            common::cli_type(&w.server, &format!("redisson_lock_queue:{{{name}}}")),
            "list"
        );
        assert_eq!(
            common::cli_type(&w.server, &format!("redisson_lock_timeout:{{{name}}}")),
            "zset"
        );
    }
    java.unlock("fair", "k1", 1).unwrap();
    let g = tokio::time::timeout(PROMPT, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    holder.release().await.unwrap();
    assert_eq!(answer(j2, PROMPT).await.unwrap(), "true");
    java.unlock("fair", "k2", 2).unwrap();
    g.release().await.unwrap();

    // A write hold: `mode=write` and `<owner>:write=1` from either side.
    assert_eq!(
        answer(java.lock("write", "w1", 1, 0, LONG_LEASE_MS), PROMPT)
            .await
            .unwrap(),
        "true"
    );
    let rw = ours.rw_lock("w2");
    let wg = rw.write().acquire().await.unwrap();
    let owners = [java.owner(1), rw.owner_id()];
    let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
    for name in ["w1", "w2"] {
        let fields: Vec<String> = cli_hash(&w.server, name)
            .into_iter()
            .map(|(f, v)| format!("{f}={v}"))
            .collect();
        let mut fields = shapes(fields, &owners);
        fields.sort();
        assert_eq!(fields, ["O:write=1", "mode=write"], "{name}");
    }
    wg.release().await.unwrap();
    java.unlock("write", "w1", 1).unwrap();
}
