//! A semaphore release retried after a lost reply, once the client can no longer be sure its
//! idempotency latch lives, asks Redis whether that latch is still there instead of refusing
//! at once: a user trial of stop 44 paused Redis past the latch's lifetime counted from the
//! send, and the retry was refused although the release had applied, later, with its latch
//! still in Redis.

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Reason, Semaphore};
use redlatch_fleet::RedisServer;
use std::time::Duration;

/// A client whose calls give up after 300 ms without a reply, and whose semaphore releases'
/// latches live 1.3 s (its 1 s watchdog timeout plus a network timeout).
async fn client_with_short_timeout(s: &RedisServer) -> Client {
    Client::builder(&s.url())
        .network_timeout(Duration::from_millis(300))
        .watchdog_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap()
}

/// Semaphore `name` of 3 permits, `acquired` of them taken by the handle returned, which then
/// released `released` while the server was paused: that release failed with `Connection`
/// (its outcome unknown; it applies when the server runs again). The server is left paused.
async fn release_left_unknown(
    s: &RedisServer,
    client: &Client,
    name: &str,
    acquired: u64,
    released: u64,
) -> Semaphore {
    let sem = client.semaphore(name);
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire_with_wait(acquired, Some(Duration::ZERO))
        .await
        .unwrap();
    s.pause().unwrap();
    let first = within(Duration::from_secs(10), sem.release(released))
        .await
        .unwrap_err();
    assert_eq!(first.kind(), ErrorKind::Connection, "{first}");
    sem
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_retry_gets_the_answer_while_the_latch_lives_and_is_refused_after() {
    let s = server();
    let client = client_with_short_timeout(&s).await;
    let mut conn = raw(&s).await;
    // The latch lives 1.3 s (the watchdog timeout plus a network timeout) from when Redis
    // applies the release; the pause makes that 1.2 s after the send.
    for (name, after_resume, replayed) in [
        ("sem:replay:live", Duration::ZERO, true),
        ("sem:replay:gone", Duration::from_millis(1500), false),
    ] {
        let sem = release_left_unknown(&s, &client, name, 1, 1).await;
        tokio::time::sleep(Duration::from_millis(900)).await;
        s.resume().unwrap();
        tokio::time::sleep(after_resume).await;
        let retry = within(Duration::from_secs(10), sem.release(1)).await;
        if replayed {
            retry.expect("the latch was still in Redis: the earlier release applied");
        } else {
            let e = retry.expect_err("the latch is gone: that cannot be told");
            assert_eq!(e.kind(), ErrorKind::NotOwned, "{e}");
            assert_eq!(e.reason(), Some(Reason::Expired), "{e}");
        }
        let count: Option<String> = cmd(&mut conn, &["GET", name]).await;
        assert_eq!(count.as_deref(), Some("3"), "{name}: given back once");
        assert_eq!(sem.held(), 0, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_of_another_count_cannot_give_back_the_permits_of_one_of_unknown_outcome() {
    // A Rust user trial of stop 45: release(2) timed out in a pause but applied, then
    // release(1) twice gave back two more: a semaphore of 3 had 5.
    let s = server();
    let client = client_with_short_timeout(&s).await;
    let mut conn = raw(&s).await;
    let sem = release_left_unknown(&s, &client, "sem:other-count", 2, 2).await;
    s.resume().unwrap();
    assert_eq!(sem.held(), 2, "counted until settled");
    let e = within(Duration::from_secs(10), sem.release(1)).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::NeverHeld)),
        "{e}"
    );
    assert!(e.message().contains("outcome is unknown"), "{e}");
    within(Duration::from_secs(10), sem.release(2))
        .await
        .expect("the retry of the same count settles it");
    let count: Option<String> = cmd(&mut conn, &["GET", "sem:other-count"]).await;
    assert_eq!(count.as_deref(), Some("3"), "given back once");
    assert_eq!(sem.held(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_settles_a_release_of_unknown_outcome_instead_of_giving_its_permits_back_again() {
    // A re-trial of stop 45: release(2) timed out in a pause but applied, and close() gave back
    // everything the handle counted: a semaphore of 3 had 5.
    let s = server();
    let client = client_with_short_timeout(&s).await;
    let mut conn = raw(&s).await;
    let _sem = release_left_unknown(&s, &client, "sem:close-unknown", 3, 2).await;
    s.resume().unwrap();
    within(Duration::from_secs(10), client.close()).await;
    let count: Option<String> = cmd(&mut conn, &["GET", "sem:close-unknown"]).await;
    assert_eq!(count.as_deref(), Some("3"), "each permit given back once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_within_the_latch_life_sends_a_release_that_never_went_out() {
    // A re-trial of stop 46: connections killed, then Redis paused: the release found no
    // connection to go out on (the new one's set-up held), and the caller's retry after the
    // pause, within the latch's life, was refused ("cannot tell"): its permits stayed taken.
    let s = server();
    let client = client_with_short_timeout(&s).await;
    let mut conn = raw(&s).await;
    let sem = client.semaphore("sem:never-sent");
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(2).await.unwrap();
    let _: i64 = cmd(&mut conn, &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]).await;
    let _: () = cmd(&mut conn, &["CLIENT", "PAUSE", "500", "ALL"]).await;
    let first = within(Duration::from_secs(10), sem.release(2)).await;
    tokio::time::sleep(Duration::from_millis(400)).await; // the pause is over
    if first.is_err() {
        within(Duration::from_secs(10), sem.release(2))
            .await
            .expect("retried within the latch's life: sent, or answered by its latch");
    }
    let count: Option<String> = cmd(&mut conn, &["GET", "sem:never-sent"]).await;
    assert_eq!(count.as_deref(), Some("3"), "given back once");
    assert_eq!(sem.held(), 0);
}

/// Semaphore `name` reaches `count` permits within 10 s, and still has them 500 ms later
/// (given back, and only once).
async fn settles_at(conn: &mut redis::aio::MultiplexedConnection, name: &str, count: &str) {
    let mut now = None;
    for _ in 0..100 {
        now = cmd::<Option<String>>(conn, &["GET", name]).await;
        if now.as_deref() == Some(count) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(now.as_deref(), Some(count), "{name}: given back once Redis ran");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let later: Option<String> = cmd(conn, &["GET", name]).await;
    assert_eq!(later.as_deref(), Some(count), "{name}: and only once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_release_that_could_not_be_sent_while_redis_stalled_lands_when_it_runs_again() {
    // A re-trial of stop 46 (Python asyncio): the client's connections were killed, then Redis
    // paused, so the release at a scope's end found no connection to go on (every new one's
    // set-up held) and was never sent. The background retry gave it up once its latch could
    // no longer tell (two network timeouts), long before the pause ended: permits taken for
    // good. The latch of a semaphore release now lives the watchdog timeout (default 30 s).
    let s = server();
    let client = client_with_300ms_timeout(&s.url()).await;
    let mut conn = raw(&s).await;
    let name = "sem:unsent";
    let sem = client.semaphore(name);
    assert!(sem.try_set_permits(3).await.unwrap());
    sem.acquire(2).await.unwrap();
    let _: i64 = cmd(&mut conn, &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]).await;
    s.pause().unwrap();
    let e = within(Duration::from_secs(10), sem.release_final(2))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert_eq!(sem.held(), 0, "a scope's end gives its permits up");
    // Longer than the old background window (1 s latch + 300 ms from the first try).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    s.resume().unwrap();
    settles_at(&mut conn, name, "3").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_whose_wait_ended_in_a_stall_gives_back_what_it_took_when_redis_runs_again() {
    // A Python trial of stop 47: with Redis paused again and again, acquires whose waits
    // ended on connection errors had applied later; their undo was tried once, while Redis
    // could not answer, and never arrived: a permit was gone for good. Here the first
    // attempt reaches the stopped server, everything after it is lost on the way (the
    // connection is cut), so only an undo tried again can give the permit back.
    let s = server();
    let relay = common::relay::Relay::start(s.port()).await;
    let client = client_with_300ms_timeout(&relay.url()).await;
    let mut conn = raw(&s).await;
    let name = "sem:undo-stall";
    let sem = client.semaphore(name);
    assert!(sem.try_set_permits(2).await.unwrap());
    s.pause().unwrap();
    let acquire = {
        let sem = sem.clone();
        tokio::spawn(async move { sem.acquire_with_wait(1, Some(Duration::from_millis(600))).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await; // the first attempt is in Redis' socket
    relay.blackhole();
    let e = within(Duration::from_secs(10), acquire)
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert_eq!(sem.held(), 0);
    tokio::time::sleep(Duration::from_millis(1000)).await; // the undo's first try is lost
    relay.restore();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.resume().unwrap();
    settles_at(&mut conn, name, "2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_by_id_retried_after_an_unknown_outcome_is_ok() {
    // A re-trial of stop 47: release(id) timed out in a pause and applied when Redis ran
    // again; the caller's retry of the same id said `never_held`, which reads as "no such
    // permit was ever valid". `Permit::release` already answered Ok there.
    let s = server();
    let client = client_with_short_timeout(&s).await;
    let permits = client.permit_semaphore("permit:by-id");
    assert!(permits.try_set_permits(2).await.unwrap());
    let permit = permits
        .acquire_with_wait(Some(Duration::from_secs(30)), Some(Duration::ZERO))
        .await
        .unwrap();
    let id = permit.id().to_owned();
    s.pause().unwrap();
    let first = within(Duration::from_secs(10), permits.release(&id))
        .await
        .unwrap_err();
    s.resume().unwrap();
    assert_eq!(first.kind(), ErrorKind::Connection, "{first}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    within(Duration::from_secs(10), permits.clone().release(&id))
        .await
        .expect("the earlier release gave it back");
    assert_eq!(permits.available().await.unwrap(), 2);
    let e = permits.release(&id).await.unwrap_err();
    assert_eq!(
        e.reason(),
        Some(Reason::NeverHeld),
        "settled: a third try is told so"
    );
    drop(permit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_acquire_whose_wait_ended_in_a_stall_gives_back_its_permit_when_redis_runs_again() {
    // The permit semaphore's undo was tried once, as the counted semaphore's was (fixed in
    // stop 47): sent while Redis stalled, it was lost, and the permit the acquire took when
    // Redis ran again stayed taken for its whole lease (here a minute). As above, the first
    // attempt reaches the stopped server and everything after it is lost on the way.
    let s = server();
    let relay = common::relay::Relay::start(s.port()).await;
    let client = client_with_300ms_timeout(&relay.url()).await;
    let mut conn = raw(&s).await;
    let name = "permit:undo-stall";
    let permits = client.permit_semaphore(name);
    assert!(permits.try_set_permits(2).await.unwrap());
    s.pause().unwrap();
    let acquire = {
        let permits = permits.clone();
        let (lease, wait) = (Duration::from_secs(60), Duration::from_millis(600));
        tokio::spawn(async move { permits.acquire_with_wait(Some(lease), Some(wait)).await })
    };
    tokio::time::sleep(Duration::from_millis(150)).await; // the first attempt is in Redis' socket
    relay.blackhole();
    let e = within(Duration::from_secs(10), acquire)
        .await
        .unwrap()
        .map(|permit| permit.id().to_owned())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    tokio::time::sleep(Duration::from_millis(1000)).await; // the undo's first try is lost
    relay.restore();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.resume().unwrap();
    settles_at(&mut conn, name, "2").await;
}
