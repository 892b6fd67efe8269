//! Lost replies and failed releases of the semaphores and the count-down latch through the
//! fault proxy (faults.md rows 4, 16): the transport's repeat of a request whose reply was
//! lost must answer what the first application answered, never apply twice, and a permit
//! whose release failed stays releasable by `Client::close()`.
//! The client under test talks through the proxy; checks go straight to Redis.

mod common;
use common::*;

use std::time::Duration;

use redlatch::{Client, ErrorKind};
use redlatch_faults::{Direction, Fault, FaultProxy};

/// A client through the proxy, with the family scripts used below already cached in Redis (so
/// a fault hits the script's reply, not an EVALSHA's NOSCRIPT answer).
async fn via(proxy: &FaultProxy) -> Client {
    let client = Client::builder(&proxy.url())
        .network_timeout(Duration::from_secs(1))
        .connect()
        .await
        .expect("connect through the proxy");
    let warm = name("family-warm-up");
    let sem = client.semaphore(format!("{warm}:s"));
    sem.try_set_permits(1).await.unwrap();
    sem.acquire(1).await.unwrap();
    sem.release(1).await.unwrap();
    let permits = client.permit_semaphore(format!("{warm}:p"));
    permits.try_set_permits(1).await.unwrap();
    let permit = permits.acquire(Some(Duration::from_secs(5))).await.unwrap();
    permit.release().await.unwrap();
    client
        .count_down_latch(format!("{warm}:l"))
        .try_set_count(1)
        .await
        .unwrap();
    client
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, f)
        .await
        .expect("call hung past its bound")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_release_whose_reply_is_lost_adds_its_permits_once() {
    let server = server();
    let proxy = FaultProxy::start(server.port()).unwrap();
    let client = via(&proxy).await;
    let sem = client.semaphore(name("lost-sem-release"));
    sem.try_set_permits(3).await.unwrap();
    sem.acquire(2).await.unwrap();
    // The release reaches Redis, its reply is lost with the connection; the transport sends
    // the same request again on a new one.
    proxy.once(Direction::ToClient, Fault::Reset);
    bounded(sem.release(2)).await.expect("the retry finds its latch");
    assert_eq!(proxy.stats().resets, 1, "the fault bit");
    let available: String = cmd(&server, &["GET", sem.name()]);
    assert_eq!(available, "3", "the permits were added once");
    assert_eq!(sem.held(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_set_repeated_after_a_lost_reply_answers_set() {
    let server = server();
    let proxy = FaultProxy::start(server.port()).unwrap();
    let client = via(&proxy).await;
    let sem = client.semaphore(name("lost-try-set-permits"));
    proxy.once(Direction::ToClient, Fault::Reset);
    assert!(
        bounded(sem.try_set_permits(4)).await.unwrap(),
        "the first application set it: the repeat says so"
    );
    assert_eq!(cmd::<String>(&server, &["GET", sem.name()]), "4");
    assert!(!sem.try_set_permits(4).await.unwrap(), "a new call finds it set");

    let permits = client.permit_semaphore(name("lost-try-set-permit-sem"));
    proxy.once(Direction::ToClient, Fault::Reset);
    assert!(bounded(permits.try_set_permits(2)).await.unwrap());
    assert_eq!(cmd::<String>(&server, &["GET", permits.name()]), "2");

    let latch = client.count_down_latch(name("lost-try-set-count"));
    proxy.once(Direction::ToClient, Fault::Reset);
    assert!(bounded(latch.try_set_count(3)).await.unwrap());
    assert_eq!(cmd::<String>(&server, &["GET", latch.name()]), "3");
    assert!(!latch.try_set_count(3).await.unwrap());
    assert_eq!(proxy.stats().resets, 3, "every fault bit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_whose_reply_is_lost_is_released_once() {
    // Found by a user trial (stop 36): the retry found the id its first try had released and
    // the release said the permit was gone ("deleted"), although it had given it back.
    let server = server();
    let proxy = FaultProxy::start(server.port()).unwrap();
    let client = via(&proxy).await;
    let permits = client.permit_semaphore(name("lost-permit-release"));
    permits.try_set_permits(2).await.unwrap();
    let permit = permits.acquire(Some(Duration::from_secs(30))).await.unwrap();
    proxy.once(Direction::ToClient, Fault::Reset);
    bounded(permit.release())
        .await
        .expect("released, by the first try");
    assert_eq!(proxy.stats().resets, 1, "the fault bit");
    assert_eq!(
        cmd::<String>(&server, &["GET", permits.name()]),
        "2",
        "given back once"
    );
    let again = bounded(permit.release()).await.unwrap_err();
    assert_eq!(again.reason(), Some(redlatch::Reason::NeverHeld), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_whose_release_failed_is_released_by_close() {
    let server = server();
    let proxy = FaultProxy::start(server.port()).unwrap();
    let client = via(&proxy).await;
    let permits = client.permit_semaphore(name("failed-permit-release"));
    permits.try_set_permits(1).await.unwrap();
    let permit = permits.acquire(Some(Duration::from_secs(30))).await.unwrap();
    // The release never reaches Redis: its outcome is unknown to the caller.
    proxy.set(Direction::ToServer, Fault::Drop);
    let err = bounded(permit.release()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    proxy.set(Direction::ToServer, Fault::Pass);
    assert_eq!(
        cmd::<String>(&server, &["GET", permits.name()]),
        "0",
        "still taken"
    );
    bounded(client.close()).await;
    assert_eq!(
        cmd::<String>(&server, &["GET", permits.name()]),
        "1",
        "close() gave the permit back, long before its 30 s lease"
    );
    let timeouts: i64 = cmd(&server, &["ZCARD", &format!("{{{}}}:timeout", permits.name())]);
    assert_eq!(timeouts, 0);
    drop(permit);
}
