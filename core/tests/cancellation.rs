//! Dropping an acquire future (cancellation in asyncio, AbortSignal in Node) leaves no key
//! and no subscription behind.

mod common;
use common::*;
use std::time::Duration;

async fn eventually(mut check: impl AsyncFnMut() -> bool) -> bool {
    for _ in 0..100 {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waiter_unsubscribes() {
    let s = server();
    let client = client(&s).await;
    let mut conn = raw(&s).await;
    let held = client
        .lock("c:wait")
        .lease(Duration::from_secs(30))
        .acquire()
        .await
        .unwrap();
    let waiter = {
        let lock = client.lock("c:wait").lease(Duration::from_secs(30));
        tokio::spawn(async move { lock.acquire().await })
    };
    let numsub = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            let v: (String, i64) = cmd(
                &mut conn,
                &["PUBSUB", "NUMSUB", "redisson_lock__channel:{c:wait}"],
            )
            .await;
            v.1
        }
    };
    assert!(
        eventually(async || numsub(&mut conn).await == 1).await,
        "waiter subscribed"
    );
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    assert!(
        eventually(async || numsub(&mut conn).await == 0).await,
        "subscription left behind"
    );
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_in_flight_acquire_is_undone() {
    let s = server();
    let client = redlatch::Client::builder(&s.url())
        .network_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let mut conn = raw(&s).await;
    for lock in [
        client.lock("c:flight").lease(Duration::from_secs(30)),
        client.rlock("c:flight-r"),
    ] {
        // Warm the scripts so the paused server holds a complete EVALSHA in its socket buffer.
        lock.acquire().await.unwrap().release().await.unwrap();
        s.pause().unwrap();
        let attempt = {
            let lock = lock.clone();
            tokio::spawn(async move { lock.acquire().await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        attempt.abort();
        assert!(attempt.await.unwrap_err().is_cancelled());
        s.resume().unwrap();
        // The queued acquire applies when the server resumes; the undo sent after it removes it.
        let name = lock.name().to_owned();
        let gone = eventually(async || cmd::<i64>(&mut conn, &["EXISTS", &name]).await == 0).await;
        assert!(gone, "{name} left behind by a cancelled acquire");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_reentry_never_undoes_an_earlier_hold() {
    let s = server();
    let client = redlatch::Client::builder(&s.url())
        .network_timeout(Duration::from_secs(10))
        .connect()
        .await
        .unwrap();
    let lock = client.rlock("c:reentry").lease(Duration::from_secs(30));
    let outer = lock.acquire().await.unwrap();
    s.pause().unwrap();
    let inner = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    inner.abort();
    let _ = inner.await;
    s.resume().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        lock.hold_count().await.unwrap(),
        1,
        "the outer hold survives the undone re-entry"
    );
    outer.release().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_kept_unpolled_while_it_connects_holds_up_no_other_call() {
    // A Rust user trial of stop 45: the call that began a connect drove it, so a future polled
    // once and then kept unpolled (a `select!` loser kept in a variable) stopped the connect,
    // and every other call of the client waited for it until its network timeout.
    let s = server();
    let client = redlatch::Client::builder(&s.url())
        .network_timeout(Duration::from_secs(5))
        .build_lazy()
        .unwrap();
    let lock = client.lock("c:unpolled");
    // Paused, the server accepts the TCP connection but answers nothing, so the connect is
    // surely still in progress after the first poll (a fast machine could otherwise finish it
    // in that poll: the project CI did once, and the test had nothing to test).
    s.pause().unwrap();
    let mut kept = Box::pin(lock.locked());
    assert!(
        futures::poll!(kept.as_mut()).is_pending(),
        "connecting on first use"
    );
    let other = client.lock("c:other");
    let (_, held) = tokio::join!(
        async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            s.resume().unwrap();
        },
        tokio::time::timeout(Duration::from_secs(10), other.try_acquire())
    );
    let held = held
        .expect("not held up by the kept call")
        .expect("connected, not a network timeout waiting for the kept call's connect")
        .expect("free");
    held.release().await.unwrap();
    assert!(!kept.await.unwrap(), "the kept call completes too");
}
