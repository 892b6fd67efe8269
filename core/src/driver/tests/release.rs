//! Unit tests of `release.rs` (in their own file to keep that one short), on real servers:
//! a release whose reply was lost stays retryable with its request id, and the quorum rule
//! that decides released or refused from each node's answer.

use crate::driver::acquire::acquire;
use crate::driver::testing::{self, cmd, lease_spec, raw, within};
use crate::error::{ErrorKind, Reason};
use std::time::Duration;

const NOW: Option<Duration> = Some(Duration::ZERO);
const MINUTE: Option<Duration> = Some(Duration::from_secs(60));

#[tokio::test]
async fn a_lease_release_whose_reply_is_lost_is_retried_with_the_same_request_id() {
    let s = testing::server();
    let (proxy, engine) = testing::proxied_engine(&s).await;
    let mut conn = raw(&s).await;
    // The release script in the node's cache first: a held-back NOSCRIPT would leave the
    // first attempt unapplied, and this test is about one that applied.
    let warm = acquire(&engine, &lease_spec("r:1:warm", MINUTE), NOW)
        .await
        .unwrap();
    warm.release().await.unwrap();
    let hold = acquire(&engine, &lease_spec("r:1", MINUTE), NOW).await.unwrap();

    proxy.hold(true);
    let e = within(hold.release()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(hold.signal.is_held(), "outcome unknown: still held");
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "r:1"]).await,
        0,
        "the first attempt applied"
    );
    let latches: Vec<String> = cmd(&mut conn, &["KEYS", "redisson_unlock_latch:{r:1}:*"]).await;
    assert_eq!(latches.len(), 1, "{latches:?}");
    let first_id = latches[0].rsplit(':').next().unwrap().to_owned();
    proxy.hold(false);

    let retry = hold.begin_release().await.unwrap();
    assert!(retry.is_retry());
    assert_eq!(
        retry.request_id(),
        first_id,
        "the retry names the first attempt's latch"
    );
    assert!(retry.request().by_source, "a retry goes out as EVAL");
    drop(retry);
    assert!(
        hold.signal.is_held(),
        "a begun release dropped unsettled leaves it held"
    );

    // The key is gone: only the latch of the first attempt tells this from a loss.
    within(hold.release()).await.unwrap();
    let e = hold.release().await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::NeverHeld)),
        "released once"
    );
}

/// Waits until `key` exists on every node: an acquire returns once a majority granted, and the
/// last node's grant may still be on its way (a test that tampers with it after would race it).
async fn granted_everywhere(conns: &mut [redis::aio::MultiplexedConnection], key: &str) {
    within(async {
        for conn in conns.iter_mut() {
            while cmd::<i64>(conn, &["EXISTS", key]).await == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_quorum_release_needs_a_majority_of_confirmations() {
    let servers = [testing::server(), testing::server(), testing::server()];
    let refs: Vec<_> = servers.iter().collect();
    let engine = testing::engine(&refs, testing::config()).await;
    let mut conns = Vec::new();
    for s in &servers {
        conns.push(raw(s).await);
    }

    // Gone on two of three nodes (a restart without persistence, say): a majority did not
    // hold it until the release, so another owner could have held one meanwhile (Redlock;
    // `owned()` says so too). A refusal, and its own key on the third node is deleted.
    let hold = acquire(&engine, &lease_spec("r:2", MINUTE), NOW).await.unwrap();
    granted_everywhere(&mut conns, "r:2").await;
    for conn in &mut conns[1..] {
        let _: i64 = cmd(conn, &["DEL", "r:2"]).await;
    }
    let e = within(hold.release()).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::Deleted)),
        "{e}"
    );
    assert!(!hold.signal.is_held());
    assert_eq!(cmd::<i64>(&mut conns[0], &["EXISTS", "r:2"]).await, 0);

    // Another owner's on two of three nodes: a refusal, and their keys are left alone.
    let hold = acquire(&engine, &lease_spec("r:3", MINUTE), NOW).await.unwrap();
    granted_everywhere(&mut conns, "r:3").await;
    for conn in &mut conns[1..] {
        let _: () = cmd(conn, &["SET", "r:3", "another-token", "PX", "60000"]).await;
    }
    let e = within(hold.release()).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.reason()),
        (ErrorKind::NotOwned, Some(Reason::Taken)),
        "{e}"
    );
    assert!(!hold.signal.is_held(), "a refusal settles the hold");
    assert_eq!(
        cmd::<i64>(&mut conns[0], &["EXISTS", "r:3"]).await,
        0,
        "its own key released"
    );
    for conn in &mut conns[1..] {
        assert_eq!(
            cmd::<Option<String>>(conn, &["GET", "r:3"]).await.as_deref(),
            Some("another-token")
        );
    }
}

#[test]
fn an_unconfirmed_release_says_what_to_check() {
    let down = super::unconfirmed_message("a:1", &crate::Error::connection("refused"));
    assert!(down.ends_with("check that the node is up)"), "{down}");
    // A user trial: a node refused as another node's server was told to check it is up.
    let alias = super::unconfirmed_message("b:2", &crate::Error::invalid("b:2 and a:1 are the same server"));
    assert!(alias.ends_with("check the quorum's URLs)"), "{alias}");
}
