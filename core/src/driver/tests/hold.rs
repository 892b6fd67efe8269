//! Unit tests of `hold.rs` (in their own file to keep that one short), on real servers.

use crate::driver::acquire::acquire;
use crate::driver::testing::{self, cmd, lease_spec, raw, rlock_spec, within};
use crate::error::{ErrorKind, Reason};
use std::time::Duration;

const NOW: Option<Duration> = Some(Duration::ZERO);

#[tokio::test]
async fn a_refused_release_says_why_and_leaves_the_key_alone() {
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let spec = lease_spec("h:1", Some(Duration::from_secs(60)));

    let hold = acquire(&engine, &spec, NOW).await.unwrap();
    hold.release().await.unwrap();
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "h:1"]).await, 0);
    let e = hold.release().await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::NeverHeld))
    );

    let hold = acquire(&engine, &spec, NOW).await.unwrap();
    let _: i64 = cmd(&mut conn, &["DEL", "h:1"]).await;
    let e = hold.release().await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::Deleted))
    );

    let hold = acquire(&engine, &spec, NOW).await.unwrap();
    let _: () = cmd(&mut conn, &["SET", "h:1", "another-token", "PX", "60000"]).await;
    assert!(!hold.owned().await.unwrap(), "another token holds it");
    // owned() learnt the loss: the release reports it as known before the call.
    let e = hold.release().await.unwrap_err();
    assert_eq!((e.kind(), e.reason()), (ErrorKind::LockLost, Some(Reason::Taken)));
    assert_eq!(
        cmd::<Option<String>>(&mut conn, &["GET", "h:1"]).await.as_deref(),
        Some("another-token")
    );
}

#[tokio::test]
async fn an_extend_that_finds_it_taken_is_a_loss_and_the_release_then_sends_nothing() {
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let hold = acquire(&engine, &lease_spec("h:2", Some(Duration::from_secs(5))), NOW)
        .await
        .unwrap();
    assert!(hold.owned().await.unwrap());
    let before = hold.signal.deadline();
    hold.extend(Duration::from_secs(60)).await.unwrap();
    assert!(
        hold.signal.deadline() > before,
        "the validity moved to the new lease"
    );
    assert!(
        cmd::<i64>(&mut conn, &["PTTL", "h:2"]).await > 5_000,
        "replaced, on Redis too"
    );

    let _: () = cmd(&mut conn, &["SET", "h:2", "another-token", "PX", "60000"]).await;
    let e = hold.extend(Duration::from_secs(60)).await.unwrap_err();
    assert_eq!((e.kind(), e.reason()), (ErrorKind::NotOwned, Some(Reason::Taken)));
    assert!(hold.is_lost(), "the extend found it taken: the hold is lost");
    let e = hold.release().await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::LockLost, Some(Reason::Taken)),
        "known lost before the call"
    );
    assert_eq!(
        cmd::<Option<String>>(&mut conn, &["GET", "h:2"]).await.as_deref(),
        Some("another-token")
    );
}

#[tokio::test]
async fn a_release_whose_reply_is_lost_stays_held_and_its_retry_never_decrements_twice() {
    let s = testing::server();
    let (proxy, engine) = testing::proxied_engine(&s).await;
    let mut conn = raw(&s).await;
    let spec = rlock_spec(&engine, "h:3", 1, Some(Duration::from_secs(60)));
    let field = spec.owner.clone().unwrap();
    // The release script in the node's cache first: a held-back NOSCRIPT would leave the
    // first attempt unapplied, and this test is about one that applied.
    let warm = rlock_spec(&engine, "h:3:warm", 1, Some(Duration::from_secs(60)));
    acquire(&engine, &warm, NOW)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let outer = acquire(&engine, &spec, NOW).await.unwrap();
    let inner = acquire(&engine, &spec, NOW).await.unwrap();
    let count = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        let field = field.clone();
        async move { cmd::<Option<i64>>(&mut conn, &["HGET", "h:3", &field]).await }
    };
    assert_eq!(count(&mut conn).await, Some(2));

    proxy.hold(true);
    let e = within(inner.release()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(
        inner.signal.is_held(),
        "outcome unknown: still held, so it can be retried"
    );
    assert_eq!(count(&mut conn).await, Some(1), "the first attempt applied");
    proxy.hold(false);

    within(inner.release()).await.unwrap();
    assert_eq!(
        count(&mut conn).await,
        Some(1),
        "the retry replayed the first answer"
    );
    within(outer.release()).await.unwrap();
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "h:3"]).await, 0);
}
