//! Unit tests of `multi_release.rs` (in their own file to keep that one short), on real
//! servers: one request for every member, each member settled from its own code.

use crate::driver::multi::acquire;
use crate::driver::multi_release::release;
use crate::driver::testing::{self, cmd, lease_spec, raw, within, Faulty};
use crate::driver::transport::Transport;
use crate::error::{ErrorKind, Reason};
use std::sync::Arc;
use std::time::Duration;

const NOW: Option<Duration> = Some(Duration::ZERO);
const MINUTE: Option<Duration> = Some(Duration::from_secs(60));

fn kinds(results: &[crate::error::Result<()>]) -> Vec<Option<(ErrorKind, Option<Reason>)>> {
    results
        .iter()
        .map(|r| r.as_ref().err().map(|e| (e.kind(), e.reason())))
        .collect()
}

#[tokio::test]
async fn one_request_settles_each_member_from_its_own_code() {
    let s = testing::server();
    let config = testing::config();
    let transport = testing::transport(&s, &config);
    transport.ping().await.unwrap();
    let faulty = Faulty::new(transport);
    let engine = testing::engine_over(vec![faulty.clone() as Arc<dyn Transport>], config);
    let mut conn = raw(&s).await;
    let specs = ["a", "b", "c"].map(|m| lease_spec(&format!("mr:1:{m}"), MINUTE));
    let holds = within(acquire(&engine, &specs, NOW)).await.unwrap();
    let _: () = cmd(&mut conn, &["SET", "mr:1:b", "another-token", "PX", "60000"]).await;
    let _: i64 = cmd(&mut conn, &["DEL", "mr:1:c"]).await;

    let before = faulty.evals();
    let results = within(release(&engine, &holds.iter().collect::<Vec<_>>())).await;
    assert_eq!(faulty.evals() - before, 1, "one request for all members");
    assert_eq!(
        kinds(&results),
        [
            None,
            Some((ErrorKind::NotOwned, Some(Reason::Taken))),
            Some((ErrorKind::NotOwned, Some(Reason::Deleted))),
        ]
    );
    assert!(holds.iter().all(|h| !h.signal.is_held()), "each one settled");
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "mr:1:a"]).await, 0);
    assert_eq!(
        cmd::<Option<String>>(&mut conn, &["GET", "mr:1:b"])
            .await
            .as_deref(),
        Some("another-token"),
        "the other owner's key left alone"
    );
}

#[tokio::test]
async fn a_member_refused_before_sending_is_left_out_of_the_request() {
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let specs = [lease_spec("mr:2:a", MINUTE), lease_spec("mr:2:b", MINUTE)];
    let holds = within(acquire(&engine, &specs, NOW)).await.unwrap();
    holds[0].release().await.unwrap();
    // Another owner takes a meanwhile: had it been sent, its key would be checked, not touched.
    let _: () = cmd(&mut conn, &["SET", "mr:2:a", "another-token", "PX", "60000"]).await;

    let results = within(release(&engine, &[&holds[0], &holds[1]])).await;
    assert_eq!(
        kinds(&results),
        [Some((ErrorKind::NotOwned, Some(Reason::NeverHeld))), None]
    );
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "mr:2:b"]).await, 0);
}

#[tokio::test]
async fn a_lost_reply_keeps_every_member_held_and_the_retry_replays_the_first_answer() {
    let s = testing::server();
    let (proxy, engine) = testing::proxied_engine(&s).await;
    let mut conn = raw(&s).await;
    // The scripts in the node's cache first: a held-back NOSCRIPT would leave the first
    // attempt unapplied, and this test is about one that applied.
    let warm = [
        lease_spec("mr:3:warm:a", MINUTE),
        lease_spec("mr:3:warm:b", MINUTE),
    ];
    let warm = within(acquire(&engine, &warm, NOW)).await.unwrap();
    assert!(within(release(&engine, &warm.iter().collect::<Vec<_>>()))
        .await
        .iter()
        .all(Result::is_ok));
    let specs = [lease_spec("mr:3:a", MINUTE), lease_spec("mr:3:b", MINUTE)];
    let holds = within(acquire(&engine, &specs, NOW)).await.unwrap();
    let members: Vec<_> = holds.iter().collect();

    proxy.hold(true);
    let results = within(release(&engine, &members)).await;
    assert!(
        results
            .iter()
            .all(|r| r.as_ref().is_err_and(|e| e.kind() == ErrorKind::Connection)),
        "{results:?}"
    );
    assert!(
        holds.iter().all(|h| h.signal.is_held()),
        "outcome unknown: still held"
    );
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "mr:3:a", "mr:3:b"]).await,
        0,
        "the first attempt applied"
    );
    proxy.hold(false);

    // Both keys are gone: only the first attempt's latches tell this from a loss.
    let results = within(release(&engine, &members)).await;
    assert_eq!(kinds(&results), [None, None]);
    assert!(holds.iter().all(|h| !h.signal.is_held()));
}
