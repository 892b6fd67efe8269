//! Unit tests of `multi.rs` (in their own file to keep that one short), on real servers: all
//! or nothing, with what a failed attempt took undone, and one hold per member.

use crate::driver::multi::acquire;
use crate::driver::testing::{self, cmd, lease_spec, raw, rlock_spec, within, Faulty};
use crate::driver::transport::Transport;
use crate::error::ErrorKind;
use crate::protocol::request::Holder;
use std::sync::Arc;
use std::time::Duration;

const NOW: Option<Duration> = Some(Duration::ZERO);
const MINUTE: Option<Duration> = Some(Duration::from_secs(60));

#[tokio::test]
async fn a_grant_gives_one_hold_per_member_each_released_on_its_own() {
    let s = testing::server();
    let engine = testing::engine(&[&s], testing::config()).await;
    let mut conn = raw(&s).await;
    let specs = [
        lease_spec("m:1:a", MINUTE),
        rlock_spec(&engine, "m:1:b", 7, MINUTE),
    ];
    let holds = within(acquire(&engine, &specs, NOW)).await.unwrap();
    assert_eq!(holds.len(), 2);
    let Holder::Lease { token } = &holds[0].holder else {
        panic!("member a is a lease lock: {:?}", holds[0].holder);
    };
    assert_eq!(
        cmd::<Option<String>>(&mut conn, &["GET", "m:1:a"]).await.as_ref(),
        Some(token)
    );
    let owner = specs[1].owner.clone().unwrap();
    assert_eq!(
        cmd::<Option<i64>>(&mut conn, &["HGET", "m:1:b", &owner]).await,
        Some(1)
    );
    assert!(
        cmd::<i64>(&mut conn, &["PTTL", "m:1:b"]).await > 50_000,
        "the members' lease"
    );

    holds[1].release().await.unwrap();
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "m:1:b"]).await, 0);
    assert_eq!(
        cmd::<i64>(&mut conn, &["EXISTS", "m:1:a"]).await,
        1,
        "a member alone"
    );
    holds[0].release().await.unwrap();
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "m:1:a"]).await, 0);
}

#[tokio::test]
async fn a_member_busy_on_a_majority_takes_nothing_and_the_node_that_granted_is_undone() {
    let servers = [testing::server(), testing::server(), testing::server()];
    let refs: Vec<_> = servers.iter().collect();
    let engine = testing::engine(&refs, testing::config()).await;
    let mut conns = Vec::new();
    for s in &servers {
        conns.push(raw(s).await);
    }
    // Member b is another owner's on nodes 2 and 3 only: node 1 grants both members, the
    // others refuse, so the attempt fails and node 1's grant must be rolled back.
    for conn in &mut conns[1..] {
        let _: () = cmd(conn, &["SET", "m:2:b", "another-token", "PX", "60000"]).await;
    }
    let specs = [lease_spec("m:2:a", MINUTE), lease_spec("m:2:b", MINUTE)];
    let Err(e) = within(acquire(&engine, &specs, NOW)).await else {
        panic!("acquired a member another owner holds on a majority");
    };
    assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
    assert!(e.to_string().contains("m:2:b"), "names the busy member: {e}");

    // The undo runs in the background; it must leave node 1 empty long before the lease.
    within(async {
        loop {
            let a: i64 = cmd(&mut conns[0], &["EXISTS", "m:2:a", "m:2:b"]).await;
            if a == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for conn in &mut conns[1..] {
        assert_eq!(cmd::<i64>(conn, &["EXISTS", "m:2:a"]).await, 0, "nothing taken");
        assert_eq!(
            cmd::<Option<String>>(conn, &["GET", "m:2:b"]).await.as_deref(),
            Some("another-token"),
            "the other owner's key left alone"
        );
    }
}

#[tokio::test]
async fn a_connection_error_is_retried_and_the_retry_grant_is_kept() {
    let s = testing::server();
    let config = testing::config();
    let transport = testing::transport(&s, &config);
    transport.ping().await.unwrap();
    let faulty = Faulty::new(transport);
    let engine = testing::engine_over(vec![faulty.clone() as Arc<dyn Transport>], config);
    let mut conn = raw(&s).await;
    let specs = [lease_spec("m:3:a", MINUTE), lease_spec("m:3:b", MINUTE)];

    // The failed attempt may have applied for all the driver knows: it is undone in the
    // background (that undo names its own request id, so it cannot touch the retry's grant).
    faulty.fail_next(1);
    let before = faulty.evals();
    let holds = within(acquire(&engine, &specs, Some(Duration::from_secs(5))))
        .await
        .unwrap();
    assert!(faulty.evals() - before >= 2, "retried after the failed attempt");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", "m:3:a", "m:3:b"]).await, 2);
    for hold in &holds {
        hold.release().await.unwrap();
    }
}
