//! `Client::close()` and the shareable guard (issue #11, item 2): close releases every guard
//! still held and stops pending acquires, later calls fail with one clear `Connection` error;
//! one guard shared by tasks releases at most once, and a scope's final release goes on in the
//! background when its outcome is unknown.

mod common;
use common::relay::Relay;
use common::*;
use redlatch::{ErrorKind, Reason};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_every_hold_and_later_calls_fail() {
    let s = server();
    let client = client(&s).await;
    let other = common::client(&s).await;
    let mut conn = raw(&s).await;
    let lease = client.lock("close:a").acquire().await.unwrap();
    let reentrant = client.rlock("close:b").acquire().await.unwrap();
    let released_before = client.lock("close:f").acquire().await.unwrap();
    released_before.release().await.unwrap();
    let dropped = client
        .lock("close:c")
        .lease(Duration::from_secs(60))
        .acquire()
        .await
        .unwrap();
    drop(dropped);
    // A waiter of this client, stopped by close.
    let busy = other.lock("close:d").acquire().await.unwrap();
    let waiting = tokio::spawn({
        let lock = client.lock("close:d");
        async move { lock.acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    within(Duration::from_secs(10), client.close()).await;
    assert!(client.is_closed());
    for key in ["close:a", "close:b", "close:c"] {
        assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", key]).await, 0, "{key} released");
    }
    let stopped = within(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(stopped.kind(), ErrorKind::Connection);
    assert_eq!(stopped.message(), "the client is closed");
    assert_eq!(client.tracked_holds(), 0, "nothing renewed after close");
    // Later calls, on the client, its locks and its guards.
    for err in [
        lease.release().await.unwrap_err(),
        reentrant.extend(Duration::from_secs(5)).await.unwrap_err(),
        client.lock("close:e").acquire().await.unwrap_err(),
        client.rlock("close:e").locked().await.unwrap_err(),
        client.force_unlock("close:e").await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
        assert_eq!(err.message(), "the client is closed");
    }
    assert!(!lease.owned().await.unwrap() && !lease.is_held() && lease.is_closed());
    assert!(lease.loss().await.is_none(), "released by close, not lost");
    assert!(lease.released_by_close() && reentrant.released_by_close());
    assert!(
        !released_before.released_by_close(),
        "released by its holder before the close"
    );
    // close is idempotent, and another client of the same server is untouched.
    client.close().await;
    assert!(busy.release().await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_guard_releases_once() {
    let s = server();
    let client = client(&s).await;
    let guard = Arc::new(client.lock("shared:a").acquire().await.unwrap());
    let results = futures::future::join_all((0..4).map(|_| {
        let guard = guard.clone();
        tokio::spawn(async move { guard.release().await })
    }))
    .await;
    let oks = results.iter().filter(|r| r.as_ref().unwrap().is_ok()).count();
    assert_eq!(oks, 1, "one release, the others are refused");
    for r in results.into_iter().map(Result::unwrap).filter(Result::is_err) {
        let e = r.unwrap_err();
        assert_eq!(
            (e.kind(), e.reason()),
            (ErrorKind::NotOwned, Some(Reason::NeverHeld))
        );
    }
    // An extend in flight finishes before a release starts, and one after it is refused.
    let guard = Arc::new(
        client
            .lock("shared:b")
            .lease(Duration::from_secs(30))
            .acquire()
            .await
            .unwrap(),
    );
    let extending = tokio::spawn({
        let guard = guard.clone();
        async move { guard.extend(Duration::from_secs(40)).await }
    });
    guard.release().await.unwrap();
    let extended = extending.await.unwrap();
    assert!(
        extended.is_ok() || extended.as_ref().unwrap_err().reason() == Some(Reason::NeverHeld),
        "the extend either ran first or was refused as released: {extended:?}"
    );
    assert_eq!(cmd::<i64>(&mut raw(&s).await, &["EXISTS", "shared:b"]).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_release_with_an_unknown_outcome_goes_on_in_the_background() {
    let s = server();
    let relay = Relay::start(s.port()).await;
    let client = redlatch::Client::builder(&relay.url())
        .network_timeout(Duration::from_millis(300))
        .connect()
        .await
        .unwrap();
    let guard = Arc::new(
        client
            .lock("final:a")
            .lease(Duration::from_secs(30))
            .acquire()
            .await
            .unwrap(),
    );
    let keep = guard.clone();
    relay.blackhole();
    let first = guard.release_final().await.unwrap_err();
    assert_eq!(first.kind(), ErrorKind::Connection);
    relay.restore();
    let mut conn = raw(&s).await;
    let released = within(Duration::from_secs(20), async {
        while cmd::<i64>(&mut conn, &["EXISTS", "final:a"]).await == 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    released.await;
    // ...while another reference to the guard was still alive.
    assert!(!keep.is_held());
}

/// The connections of a Redis server (`CLIENT LIST`: one line each, pub/sub ones included).
async fn connections(conn: &mut redis::aio::MultiplexedConnection) -> usize {
    cmd::<String>(conn, &["CLIENT", "LIST"]).await.lines().count()
}

/// `close()` lets go of the connections at once, although the client, a lock and guards made
/// from it are still alive (a binding keeps them until its garbage collector runs): before,
/// every guard and lock kept the client's connections open until the last of them was dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_closes_the_connections_while_guards_and_locks_live() {
    let s = server();
    let mut conn = raw(&s).await;
    let baseline = connections(&mut conn).await;
    let client = client(&s).await;
    let other = common::client(&s).await;
    let lease = client.lock("conn:a").acquire().await.unwrap();
    let lock = client.rlock("conn:b");
    let reentrant = lock.acquire().await.unwrap();
    // A wait subscribes (a pub/sub connection).
    let busy = other.lock("conn:c").acquire().await.unwrap();
    let refused = client
        .lock("conn:c")
        .wait(Duration::from_millis(200))
        .acquire()
        .await;
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::NotAcquired);
    busy.release().await.unwrap();
    other.close().await;
    drop(other);
    assert!(connections(&mut conn).await > baseline, "the client is connected");
    within(Duration::from_secs(10), client.close()).await;
    within(Duration::from_secs(5), async {
        while connections(&mut conn).await > baseline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // Still alive, and every call on them says the client is closed.
    for err in [
        lease.release().await.unwrap_err(),
        reentrant.extend(Duration::from_secs(5)).await.unwrap_err(),
        lock.locked().await.unwrap_err(),
        lock.acquire().await.unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
        assert_eq!(err.message(), "the client is closed");
    }
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "conn:a", "conn:b"]).await,
        0,
        "released by close"
    );
    drop(client);
}

/// An acquire in flight when the client closes is undone through connections the close has
/// given up: they stay open for that roll-back, and close after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_in_flight_at_close_is_undone_then_the_connections_close() {
    let s = server();
    let mut conn = raw(&s).await;
    let baseline = connections(&mut conn).await;
    let client = redlatch::Client::builder(&s.url())
        .network_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let lock = client.lock("conn:flight").lease(Duration::from_secs(30));
    // Warm the script so the paused server holds a complete EVALSHA in its socket buffer.
    lock.acquire().await.unwrap().release().await.unwrap();
    s.pause().unwrap();
    let attempt = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    within(Duration::from_secs(10), client.close()).await;
    let stopped = within(Duration::from_secs(10), attempt)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(stopped.message(), "the client is closed");
    s.resume().unwrap();
    // The queued acquire applies when the server resumes; the undo sent after it removes it.
    within(Duration::from_secs(10), async {
        while cmd::<i64>(&mut conn, &["EXISTS", "conn:flight"]).await == 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    within(Duration::from_secs(10), async {
        while connections(&mut conn).await > baseline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    drop(lock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_and_dropped_client_leaves_no_task_behind() {
    // A Rust user trial of stop 49: every client left a task alive for ever (the probe that
    // tells a runtime's shut-down); 10,500 clients made and dropped, 10,501 tasks.
    let s = server();
    let tasks = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let before = tasks();
    for i in 0..10 {
        let c = client(&s).await;
        let held = c.lock(format!("tasks:{i}")).acquire().await.unwrap();
        held.release().await.unwrap();
        c.close().await;
    }
    // Their connections close in the background.
    let mut left = tasks();
    for _ in 0..100 {
        if left <= before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = tasks();
    }
    assert!(left <= before, "{left} tasks alive after, {before} before");
}
