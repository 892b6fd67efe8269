//! The acquire loop's own tests (acquire.rs): busy locks, errors, wake-ups.

use super::*;
use crate::driver::testing::{self, cmd, lease_spec, raw, within};
use crate::driver::Config;

#[test]
fn each_kind_is_known_to_redis_by_its_token_or_owner() {
    let mut spec = lease_spec("k", None);
    let holder = |spec: &LockSpec, wait| {
        let [fresh] = token::new_tokens().unwrap();
        new_holder(spec, wait, fresh)
    };
    let ((a, id_a), (b, _)) = (holder(&spec, None), holder(&spec, None));
    assert!(
        matches!((&a, &b), (Holder::Lease { token: x }, Holder::Lease { token: y }) if x != y && !x.is_empty())
    );
    assert!(id_a.is_empty(), "a lease lock's acquire names no latch");
    spec.owner = Some("c:7".to_owned());
    for (kind, expect) in [
        (LockKind::Reentrant, Holder::Reentrant { owner: "c:7".into() }),
        (LockKind::Read, Holder::Read { owner: "c:7".into() }),
        (LockKind::Write, Holder::Write { owner: "c:7".into() }),
    ] {
        spec.kind = kind;
        let (h, request_id) = holder(&spec, None);
        assert_eq!(h, expect);
        assert_eq!(
            request_id.len(),
            32,
            "a random request id names the acquire latch"
        );
    }
    spec.kind = LockKind::Fair;
    let wait = Some(Duration::from_secs(2));
    assert_eq!(
        holder(&spec, wait).0,
        Holder::Fair {
            owner: "c:7".into(),
            wait_slot_ms: fair::wait_slot_ms(Some(2_000)),
        },
        "a fair waiter queues with its wait"
    );
}

#[tokio::test]
async fn a_busy_lock_is_not_acquired_within_the_wait_and_application_data_is_a_conflict() {
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let spec = lease_spec("a:1", Some(Duration::from_secs(60)));
    let held = acquire(&engine, &spec, Some(Duration::ZERO)).await.unwrap();
    let e = acquire(&engine, &spec, Some(Duration::ZERO))
        .await
        .err()
        .expect("refused");
    assert_eq!(e.kind(), ErrorKind::NotAcquired);
    let e = within(acquire(&engine, &spec, Some(Duration::from_millis(100))))
        .await
        .err()
        .expect("refused");
    assert_eq!(e.kind(), ErrorKind::NotAcquired);
    held.release().await.unwrap();

    // A string without TTL that is no token: the plain SET NX only says "busy", the script
    // form that follows says what it is, even with no wait.
    let _: () = cmd(&mut conn, &["SET", "a:2", "application data"]).await;
    let e = acquire(&engine, &lease_spec("a:2", None), Some(Duration::ZERO))
        .await
        .err()
        .expect("refused");
    assert_eq!(e.kind(), ErrorKind::KeyConflict, "{e}");
    assert_eq!(
        cmd::<Option<String>>(&mut conn, &["GET", "a:2"]).await.as_deref(),
        Some("application data"),
        "left untouched"
    );
}

#[tokio::test]
async fn errors_end_the_wait_after_one_network_timeout_and_permanent_ones_at_once() {
    let s = testing::server();
    // A long network timeout: retrying a permanent error would outlast the hang bound.
    let config = Config {
        network_timeout: Duration::from_secs(60),
        ..testing::config()
    };
    let engine = testing::engine(&[&s], config).await;
    let mut conn = raw(&s).await;
    let _: i64 = cmd(&mut conn, &["RPUSH", "a:3", "x"]).await;
    let e = within(acquire(&engine, &lease_spec("a:3", None), None))
        .await
        .err()
        .expect("refused");
    assert_eq!(
        e.kind(),
        ErrorKind::KeyConflict,
        "returned at once, not retried: {e}"
    );

    // Unreachable Redis with no wait limit: the error returns once it persisted for the
    // network timeout (500 ms here), not never.
    let engine = testing::engine(&[&s], testing::config()).await;
    s.pause().unwrap();
    let result = within(acquire(&engine, &lease_spec("a:4", None), None)).await;
    s.resume().unwrap();
    let e = result.err().expect("no grant from a paused server");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
}

#[tokio::test]
async fn a_waiter_is_woken_by_the_release_not_the_poll() {
    let s = testing::server();
    // Poll and lease far beyond the hang bound: only the unlock message can wake it.
    let config = Config {
        poll_interval: Duration::from_secs(120),
        handoff_grace: Duration::ZERO,
        ..testing::config()
    };
    let engine = testing::engine(&[&s], config).await;
    let spec = lease_spec("a:5", Some(Duration::from_secs(120)));
    let held = acquire(&engine, &spec, Some(Duration::ZERO)).await.unwrap();
    let waiter = {
        let (engine, spec) = (engine.clone(), spec.clone());
        tokio::spawn(async move { acquire(&engine, &spec, None).await.map(|h| h.fence) })
    };
    // Let the waiter subscribe and go to sleep.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished());
    held.release().await.unwrap();
    within(waiter).await.unwrap().unwrap();
}

#[tokio::test]
async fn a_waiter_behind_the_head_never_sleeps_past_its_wait() {
    // A user trial: with a poll interval of 10 s and a wait of 12 s, waiters behind the head
    // ended after 12.6-19.6 s: each of their polls slept the delay computed at the start.
    let s = testing::server();
    let config = Config {
        poll_interval: Duration::from_secs(60),
        ..testing::config()
    };
    let engine = testing::engine(&[&s], config).await;
    let holder = Holder::Lease { token: "t".into() };
    let channel = "redisson_lock__channel:{a:6}";
    let _head = Waker::subscribe(&engine, channel, None, Some(&holder)).await;
    let mut behind = Waker::subscribe(&engine, channel, None, Some(&holder)).await;
    assert!(!behind.is_head());
    let started = std::time::Instant::now();
    let deadline = engine.runtime.now() + Duration::from_millis(1_200);
    within(wait_turn(
        &engine,
        &mut behind,
        Duration::from_secs(1),
        Some(deadline),
    ))
    .await;
    // Two polls of 1 s would end at 2 s.
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1_800), "{took:?}");
}
