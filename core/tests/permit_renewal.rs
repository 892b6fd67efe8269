//! A permit renewed by the watchdog whose renewals fail (Redis out of memory refuses the
//! renewal script's `ZADD`) is reported lost once its lease runs out: Redis gives it back
//! then, and another client may take it (a user trial of stop 44 found two holders of a
//! 1-permit semaphore, the first told nothing, and its release said `deleted`).

mod common;
use common::*;
use redlatch::{Client, ErrorKind, Reason};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_whose_renewals_fail_is_lost_when_its_lease_runs_out() {
    let s = server();
    let c = Client::builder(&s.url())
        .watchdog_timeout(Duration::from_millis(600))
        .connect()
        .await
        .unwrap();
    let ps = c.permit_semaphore("ps:oom");
    ps.try_set_permits(1).await.unwrap();
    let permit = ps.acquire(None).await.unwrap();
    let mut conn = raw(&s).await;
    let _: String = cmd(&mut conn, &["CONFIG", "SET", "maxmemory", "1"]).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        permit.is_lost(),
        "renewals refused for longer than the watchdog timeout"
    );
    let _: String = cmd(&mut conn, &["CONFIG", "SET", "maxmemory", "0"]).await;

    let other = client(&s).await.permit_semaphore("ps:oom");
    let taken = other.try_acquire(Some(Duration::from_secs(10))).await.unwrap();
    let taken = taken.expect("Redis gave the expired permit back");
    let e = permit.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert_eq!(e.reason(), Some(Reason::Expired), "{e}");
    taken.release().await.unwrap();
}
