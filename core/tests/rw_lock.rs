//! Read/write lock (Redisson RReadWriteLock layout) through the driver, on a real Redis: readers
//! overlap and writers overlap nothing (interval log), a crashed reader's hold expires while
//! others keep theirs, the refused upgrade, the writer's read hold, reentry, watchdog renewal
//! of both modes, the lost signal and pub/sub wake-ups.

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Guard, LockKind, RwLock};
use redlatch_fleet::{find_overlaps, Interval};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn hash(conn: &mut redis::aio::MultiplexedConnection, name: &str) -> HashMap<String, String> {
    cmd(conn, &["HGETALL", name]).await
}

/// 6 readers and 2 writers on 2 clients, 10 sections each: writer sections overlap nothing,
/// and readers do overlap each other (the lock is shared, not merely exclusive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_overlap_and_writers_overlap_nothing() {
    let s = server();
    let clients = [client(&s).await, client(&s).await];
    let log: Arc<Mutex<Vec<(bool, Interval)>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let rw = clients[i % 2].rw_lock("rw:log");
        let write = i < 2;
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            let lock = if write { rw.write() } else { rw.read() }.wait(Duration::from_secs(20));
            for k in 0..10 {
                let guard = lock.acquire().await.unwrap();
                let acquired_ns = now_ns();
                tokio::time::sleep(Duration::from_millis(if write { 2 } else { 8 })).await;
                let released_ns = now_ns();
                let token = format!("{}{i}.{k}", if write { "w" } else { "r" });
                log.lock().unwrap().push((
                    write,
                    Interval {
                        acquired_ns,
                        released_ns,
                        token,
                    },
                ));
                guard.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(60), t)
            .await
            .unwrap()
            .unwrap();
    }
    let log = log.lock().unwrap().clone();
    let (writes, reads): (Vec<_>, Vec<_>) = log.into_iter().partition(|(w, _)| *w);
    let reads: Vec<Interval> = reads.into_iter().map(|(_, i)| i).collect();
    for (_, w) in &writes {
        let mut pair = reads.clone();
        pair.push(w.clone());
        let overlaps: Vec<String> = find_overlaps(&pair)
            .into_iter()
            .filter(|v| v.contains(&w.token))
            .collect();
        assert!(overlaps.is_empty(), "a writer overlapped a reader: {overlaps:?}");
    }
    let writes: Vec<Interval> = writes.into_iter().map(|(_, i)| i).collect();
    assert!(find_overlaps(&writes).is_empty(), "writers overlapped");
    assert!(!find_overlaps(&reads).is_empty(), "readers never shared the lock");
}

/// A reader that stops (no release, no renewal: its process died) loses its hold after its
/// lease; the other reader keeps its own, and its release then frees the lock for a writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_readers_hold_expires_while_others_keep_theirs() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let crashed = client.rw_lock("rw:crash");
    let crashed_owner = crashed.owner_id();
    let dead = crashed
        .read()
        .lease(Duration::from_millis(400))
        .acquire()
        .await
        .unwrap();
    std::mem::forget(dead); // never released, never renewed
    let survivor = client.rw_lock("rw:crash");
    let alive = survivor
        .read()
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    let dead_key = format!("{{rw:crash}}:{crashed_owner}:rwlock_timeout:1");
    let alive_key = format!("{{rw:crash}}:{}:rwlock_timeout:1", survivor.owner_id());
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", &dead_key]).await, 1);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", &dead_key]).await,
        0,
        "the dead reader's hold expired"
    );
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", &alive_key]).await,
        1,
        "the other reader keeps its own"
    );
    assert!(alive.owned().await.unwrap());
    let writer = client.rw_lock("rw:crash").write();
    assert!(
        writer.try_acquire().await.unwrap().is_none(),
        "still read-held by the survivor"
    );
    alive.release().await.unwrap();
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "rw:crash"]).await,
        0,
        "no live read hold left"
    );
    let w = writer.try_acquire().await.unwrap().expect("free for a writer");
    w.release().await.unwrap();
}

/// A read hold of `mine` whose 300 ms lease has run out, beside a read hold of another owner
/// (another handle of the same lock) for 20 s.
async fn an_expired_read_beside_a_live_one(client: &Client, mine: &RwLock) -> (Guard, Guard) {
    let expired = mine
        .read()
        .lease(Duration::from_millis(300))
        .acquire()
        .await
        .unwrap();
    let other = client
        .rw_lock(mine.name())
        .read()
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    (expired, other)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_an_expired_read_hold_reports_it_lost_while_another_reader_holds() {
    // A user trial of stop 44: with another reader holding, the release of a read hold whose
    // lease ran out succeeded (its owner's count was still in the hash); alone, it was a
    // LockLost. It is a LockLost either way, and the other reader keeps the lock.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let (expired, other) = an_expired_read_beside_a_live_one(&client, &client.rw_lock("rw:exp")).await;
    let e = expired.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert_eq!(e.reason(), Some(redlatch::Reason::Expired), "{e}");
    assert!(other.owned().await.unwrap());
    assert_eq!(
        hash(&mut conn, "rw:exp").await.len(),
        2,
        "mode and the other reader's count"
    );
    other.release().await.unwrap();
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "rw:exp"]).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_hold_known_lost_leaves_no_count_while_another_reader_holds() {
    // A user trial of stop 44 (C): a read hold seen lost (is_lost, or the lost callback)
    // before its release kept its count in the hash while another reader held: its owner's
    // write acquire was refused as an upgrade, and its next read counted 2.
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let mine = client.rw_lock("rw:lost");
    let (held, other) = an_expired_read_beside_a_live_one(&client, &mine).await;
    assert!(held.is_lost());
    let e = held.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    let fields = hash(&mut conn, "rw:lost").await;
    assert!(
        !fields.contains_key(&mine.owner_id()),
        "the lost hold's count is gone: {fields:?}"
    );
    let e = mine.write().wait(Duration::ZERO).acquire().await.unwrap_err();
    assert_eq!(
        e.kind(),
        ErrorKind::NotAcquired,
        "another reader holds it, no upgrade: {e}"
    );
    let again = mine
        .read()
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    assert_eq!(
        hash(&mut conn, "rw:lost")
            .await
            .get(&mine.owner_id())
            .map(String::as_str),
        Some("1")
    );
    again.release().await.unwrap();
    // A lost hold never released: the owner's next release removes its count too.
    let forgotten = mine
        .read()
        .lease(Duration::from_millis(300))
        .acquire()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let live = mine
        .read()
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    live.release().await.unwrap();
    let fields = hash(&mut conn, "rw:lost").await;
    assert!(!fields.contains_key(&mine.owner_id()), "pruned: {fields:?}");
    std::mem::forget(forgotten);
    other.release().await.unwrap();
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "rw:lost"]).await, 0);
}

#[tokio::test]
async fn a_read_to_write_upgrade_is_refused_at_once_and_changes_nothing() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let rw = client.rw_lock("rw:up");
    let read = rw.read().acquire().await.unwrap();
    let before = hash(&mut conn, "rw:up").await;
    let keys_before = keys_but_latches(&mut conn).await;
    let started = Instant::now();
    let err = rw
        .write()
        .wait(Duration::from_secs(30))
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WouldDeadlock);
    assert_eq!(err.code(), 12);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused, not waited for"
    );
    assert_eq!(
        rw.write().try_acquire().await.unwrap_err().kind(),
        ErrorKind::WouldDeadlock
    );
    assert_eq!(hash(&mut conn, "rw:up").await, before);
    assert_eq!(
        keys_but_latches(&mut conn).await,
        keys_before,
        "no fence counter, no key"
    );
    read.release().await.unwrap();
    let w = rw.write().acquire().await.unwrap();
    w.release().await.unwrap();
}

#[tokio::test]
async fn the_writer_may_read_and_each_mode_is_reentrant() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let rw = client.rw_lock("rw:down");
    let (read, write) = (rw.read(), rw.write());
    assert_eq!((read.kind(), write.kind()), (LockKind::Read, LockKind::Write));
    assert_eq!(read.owner_id(), write.owner_id(), "one owner per RwLock");
    let w1 = write.acquire().await.unwrap();
    let w2 = write.acquire().await.unwrap();
    assert_eq!(write.hold_count().await.unwrap(), 2);
    assert!(write.locked().await.unwrap() && !read.locked().await.unwrap());
    let r1 = read.acquire().await.unwrap();
    let r2 = read.try_acquire().await.unwrap().expect("re-entry");
    assert_eq!(read.hold_count().await.unwrap(), 2);
    let h = hash(&mut conn, "rw:down").await;
    assert_eq!(h["mode"], "write");
    assert_eq!(h[&format!("{}:write", rw.owner_id())], "2");
    assert_eq!(h[&rw.owner_id()], "2");
    let others = client.rw_lock("rw:down");
    assert!(
        others.read().try_acquire().await.unwrap().is_none(),
        "a writer excludes readers"
    );
    w2.release().await.unwrap();
    w1.release().await.unwrap();
    assert_eq!(
        hash(&mut conn, "rw:down").await["mode"],
        "read",
        "a downgrade, quietly"
    );
    let theirs = others
        .read()
        .try_acquire()
        .await
        .unwrap()
        .expect("readers share now");
    for g in [r2, r1, theirs] {
        g.release().await.unwrap();
    }
    assert_eq!(keys_but_latches(&mut conn).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_read_and_write_holds_and_reports_their_loss() {
    let s = server();
    let client = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    let readers = client.rw_lock("rw:wd");
    let (r1, r2) = (
        readers.read().acquire().await.unwrap(),
        readers.read().acquire().await.unwrap(),
    );
    let writer = client.rw_lock("rw:wd2");
    let w = writer.write().acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_200)).await; // 4 x the watchdog timeout
    for g in [&r1, &r2, &w] {
        assert!(
            !g.is_lost() && g.owned().await.unwrap(),
            "{} expired despite the watchdog",
            g.name()
        );
    }
    for k in [1, 2] {
        let key = format!("{{rw:wd}}:{}:rwlock_timeout:{k}", readers.owner_id());
        let pttl: i64 = cmd(&mut conn, &["PTTL", &key]).await;
        assert!(pttl > 0 && pttl <= 300, "read hold {k} renewed: {pttl}");
    }
    let _: () = cmd(&mut conn, &["DEL", "rw:wd", "rw:wd2"]).await;
    for g in [&r1, &r2, &w] {
        tokio::time::timeout(Duration::from_secs(3), g.lost())
            .await
            .expect("lost fires");
        assert_eq!(g.lost_reason(), Some(redlatch::Reason::Deleted));
    }
}

/// With polling slowed to 10 s, waiters can only be this prompt if the release message wakes
/// them: a writer after a read release, readers (together) after a write release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_woken_by_the_release_message() {
    let s = server();
    let client = Client::builder(&s.url())
        .poll_interval(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let reader = client.rw_lock("rw:wake").read().acquire().await.unwrap();
    let writer = client.rw_lock("rw:wake").write().wait(Duration::from_secs(30));
    let waiting = tokio::spawn(async move { writer.acquire().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    reader.release().await.unwrap();
    let w = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "woken by the message, not the poll"
    );
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let lock = client.rw_lock("rw:wake").read().wait(Duration::from_secs(30));
            tokio::spawn(async move { lock.acquire().await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let released = Instant::now();
    w.release().await.unwrap();
    let mut guards = Vec::new();
    for r in readers {
        guards.push(
            tokio::time::timeout(Duration::from_secs(5), r)
                .await
                .unwrap()
                .unwrap()
                .unwrap(),
        );
    }
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "readers woken together by the message"
    );
    for g in guards {
        g.release().await.unwrap();
    }
}

#[tokio::test]
async fn read_locks_cannot_be_fenced_and_cancelled_acquires_are_undone() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let err = client
        .rw_lock("rw:f")
        .read()
        .fenced()
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let w = client.rw_lock("rw:f").write().fenced().acquire().await.unwrap();
    assert!(w.fencing_token().unwrap() >= 1);
    w.release().await.unwrap();
    assert_eq!(keys_but_latches(&mut conn).await, ["redisson_lock_token:{rw:f}"]);
    // Owner 7 re-enters 50 times, each acquire cancelled at once: whatever applied is undone.
    let rw = client.rw_lock("rw:cancel").owner(7);
    for _ in 0..50 {
        let read = rw.read();
        let _ = tokio::time::timeout(Duration::from_micros(300), read.acquire()).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "rw:cancel"]).await,
        0,
        "{:?}",
        hash(&mut conn, "rw:cancel").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_guards_background_release_lands_before_the_next_acquire_of_its_lock() {
    // The scoped read-then-write: the read guard is dropped (released in the background) and
    // the same owner asks for the write lock at once. Before stop 37 the write acquire often
    // (36 of 60 runs in a user trial) met the read hold still in Redis and was refused with
    // WouldDeadlock at once; a try_acquire through another handle found the lock held.
    let s = server();
    let client = client(&s).await;
    for i in 0..20 {
        let rw = client.rw_lock(format!("rw:dropped:{i}"));
        {
            let _read = within(Duration::from_secs(10), rw.read().acquire())
                .await
                .unwrap();
        }
        let write = within(
            Duration::from_secs(10),
            rw.write().wait(Duration::from_secs(5)).acquire(),
        )
        .await
        .expect("the write lock after the read guard's scope");
        within(Duration::from_secs(10), write.release()).await.unwrap();

        let name = format!("rw:dropped:rlock:{i}");
        drop(
            within(Duration::from_secs(10), client.rlock(&name).acquire())
                .await
                .unwrap(),
        );
        let other = within(Duration::from_secs(10), client.rlock(&name).try_acquire())
            .await
            .unwrap()
            .expect("free once the dropped guard's release landed");
        within(Duration::from_secs(10), other.release()).await.unwrap();
    }
}

#[tokio::test]
async fn a_shorter_read_extend_shortens_the_lock_unless_another_reader_needs_it() {
    // A Python user trial of stop 46: extend(2 s) of a 10 s read hold left the hash for 10 s:
    // ttl() said 10 s and writers waited that long for a hold lost after 2 s.
    let s = server();
    let c = client(&s).await;
    let rw = c.rw_lock("rw:shorter");
    let read = rw.read().lease(Duration::from_secs(10));
    let held = read.acquire().await.unwrap();
    held.extend(Duration::from_secs(2)).await.unwrap();
    let ttl = read.ttl().await.unwrap().expect("held");
    assert!(
        ttl <= Duration::from_secs(2),
        "the hash follows its one reader: {ttl:?}"
    );
    // Another owner's longer read hold keeps the hash alive for itself.
    let other = c
        .rw_lock("rw:shorter")
        .owner(7)
        .read()
        .lease(Duration::from_secs(10));
    let other_held = other.acquire().await.unwrap();
    held.extend(Duration::from_secs(1)).await.unwrap();
    let ttl = read.ttl().await.unwrap().expect("held");
    assert!(ttl > Duration::from_secs(8), "another reader needs it: {ttl:?}");
    other_held.release().await.unwrap();
    held.release().await.unwrap();
}
