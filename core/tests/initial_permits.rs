//! A semaphore handle's declared permits (`initial_permits`): set by its first acquire or
//! `available` only when the semaphore has no count yet, retried within an acquire's wait (a
//! Redis paused for longer than a network timeout used to fail the acquire at once in the
//! bindings, which offered them by a call of their own), and checked before anything is sent.

mod common;
use common::*;
use redlatch::ErrorKind;
use std::time::Duration;

#[tokio::test]
async fn declared_permits_are_set_once_and_never_over_a_count_that_exists() {
    let s = server();
    let c = client(&s).await;
    let sem = c.semaphore("init:sem").initial_permits(2);
    assert_eq!(sem.available().await.unwrap(), 2, "set by the first call");
    sem.acquire(2).await.unwrap();
    let other = c.semaphore("init:sem").initial_permits(5);
    assert_eq!(
        other.available().await.unwrap(),
        0,
        "an existing count (0) is left as it is"
    );
    assert!(!other.try_acquire(1).await.unwrap());
    sem.release(2).await.unwrap();

    let permits = c.permit_semaphore("init:psem").initial_permits(3);
    let held = permits.acquire(None).await.unwrap();
    assert_eq!(permits.available().await.unwrap(), 2);
    let other = c.permit_semaphore("init:psem").initial_permits(9);
    assert_eq!(other.available().await.unwrap(), 2);
    held.release().await.unwrap();
    let mut conn = raw(&s).await;
    assert_eq!(cmd::<String>(&mut conn, &["GET", "init:psem"]).await, "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_retries_the_initial_set_within_its_wait_through_a_pause() {
    let s = server();
    let c = client_with_300ms_timeout(&s.url()).await;
    let sem = c.semaphore("init:paused").initial_permits(1);
    let permits = c.permit_semaphore("init:paused-p").initial_permits(1);
    s.pause().unwrap();
    let (sem_acquire, permit_acquire) = {
        let (sem, permits) = (sem.clone(), permits.clone());
        let wait = Some(Duration::from_secs(20));
        (
            tokio::spawn(async move { sem.acquire_with_wait(1, wait).await }),
            tokio::spawn(async move { permits.acquire_with_wait(None, wait).await }),
        )
    };
    // Several network timeouts: each try of the set fails while Redis is paused.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.resume().unwrap();
    let limit = Duration::from_secs(15);
    within(limit, sem_acquire)
        .await
        .unwrap()
        .expect("set, then acquired");
    let permit = within(limit, permit_acquire)
        .await
        .unwrap()
        .expect("set, then acquired");
    assert_eq!(sem.held(), 1);
    assert_eq!(sem.available().await.unwrap(), 0);
    assert_eq!(permits.available().await.unwrap(), 0);
    permit.release().await.unwrap();
    sem.release(1).await.unwrap();
}

#[tokio::test]
async fn bad_declared_permits_are_refused_with_nothing_sent() {
    let s = server();
    let c = client(&s).await;
    for bad in [0, u64::from(i32::MAX as u32) + 1] {
        let sem = c.semaphore("init:bad").initial_permits(bad);
        let e = sem.acquire(1).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert_eq!(
            sem.available().await.unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        let permits = c.permit_semaphore("init:bad").initial_permits(bad);
        let e = permits.try_acquire(None).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    let mut conn = raw(&s).await;
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "init:bad"]).await, 0);
}

#[tokio::test]
async fn declared_permits_are_not_set_over_application_data_in_the_permit_set() {
    // A Python trial of stop 47: with application data under `{name}:timeout`, the permit
    // semaphore's acquire was refused (KeyConflict), but the declared count was left behind.
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let _: () = cmd(&mut conn, &["SET", "{init:data}:timeout", "mine"]).await;
    let permits = c.permit_semaphore("init:data").initial_permits(2);
    let e = permits.try_acquire(None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KeyConflict, "{e}");
    let e = permits.try_set_permits(2).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KeyConflict, "{e}");
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "init:data"]).await,
        0,
        "no count left"
    );
    assert_eq!(
        cmd::<String>(&mut conn, &["GET", "{init:data}:timeout"]).await,
        "mine"
    );
}

#[tokio::test]
async fn a_release_into_a_count_that_is_gone_writes_nothing_and_the_count_can_be_set_again() {
    // A re-trial of stop 47: after a restart of Redis without persistence, a holder's
    // release made the count anew at 1, so `try_set_permits(2)` found it set and the
    // semaphore stayed a permit short for good.
    let s = server();
    let c = client(&s).await;
    let mut conn = raw(&s).await;
    let sem = c.semaphore("init:gone").initial_permits(2);
    sem.acquire(1).await.unwrap();
    let _: i64 = cmd(&mut conn, &["DEL", "init:gone"]).await; // as a restart would
    let e = sem.release(1).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(redlatch::Reason::Deleted)),
        "{e}"
    );
    assert!(e.message().contains("try_set_permits"), "{e}");
    assert_eq!(sem.held(), 0, "the permits went with the count");
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "init:gone"]).await,
        0,
        "nothing written"
    );
    assert!(sem.try_set_permits(2).await.unwrap());
    assert_eq!(sem.available().await.unwrap(), 2);
}
