//! The effect of a Redis server's wall clock jumping forward (faults.md row 12): the server
//! expires a lock early. libfaketime cannot run Debian's redis-server (jemalloc recursion), so
//! the effect is emulated as the checklist suggests: the key is expired by hand (`PEXPIRE key
//! 1`) on the node whose clock "jumped". Single node: only fencing keeps the resource safe.
//! Quorum: one node losing its key is survivable while the holder keeps a majority.

mod common;
use common::*;

use std::time::Duration;

use redlatch::{blocking, Client};
use redlatch_faults::{Answer, Event, FencedResource, Fencing, Holder, Op, ResourceClient};
use redlatch_fleet::RedisServer;

#[test]
fn single_node_expiring_early_is_caught_by_the_fenced_resource() {
    let server = server();
    let resource = FencedResource::start(Fencing::On).unwrap();
    let lock = name("clock-jump-single");
    let mut spec = holder("A", &server.url(), &lock, resource.port());
    spec.lease = Some(Duration::from_secs(30));
    spec.work = Duration::from_millis(800);
    spec.sections = Some(1);
    let mut a = Holder::spawn(&spec).unwrap();
    a.wait_for(HANG_GUARD, |e| matches!(e, Event::Read { .. }))
        .unwrap();
    let _: i64 = cmd(&server, &["PEXPIRE", &lock, "1"]);
    let client = blocking::Client::connect(&server.url()).unwrap();
    let b = client
        .lock(lock.as_str())
        .fenced()
        .wait(Duration::from_secs(5))
        .acquire()
        .unwrap();
    let fence = b.fencing_token().unwrap();
    let mut mine = ResourceClient::connect(resource.port()).unwrap();
    assert_eq!(mine.read(fence).unwrap(), Answer::Ok(0));
    let wrote = a
        .wait_for(HANG_GUARD, |e| matches!(e, Event::Wrote { .. }))
        .unwrap();
    assert!(
        matches!(wrote, Event::Wrote { answer: Answer::Stale(h), .. } if h == fence),
        "{wrote:?}"
    );
    a.finish(HANG_GUARD).unwrap();
    assert!(
        b.owned().unwrap(),
        "the first holder's release left the new hold alone"
    );
    b.release().unwrap();
    let report = resource.report();
    assert_eq!((report.lost_updates, report.rejected.len()), (0, 1));
    assert_eq!(report.rejected[0].op, Op::Write);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_quorum_node_expiring_early_is_survived() {
    let servers: Vec<RedisServer> = (0..5).map(|_| server()).collect();
    let urls: Vec<String> = servers.iter().map(RedisServer::url).collect();
    let quorum = |urls: Vec<String>| async move {
        Client::quorum_builder(&urls)
            .node_timeout(Duration::from_millis(200))
            .watchdog_timeout(Duration::from_millis(900))
            .connect()
            .await
            .unwrap()
    };
    let a = quorum(urls.clone()).await;
    let lock = name("clock-jump-quorum");
    let guard = a.lock(&lock).acquire().await.unwrap();
    let _: i64 = cmd(&servers[0], &["PEXPIRE", &lock, "1"]);
    let b = quorum(urls).await;
    assert!(
        b.lock(&lock).try_acquire().await.unwrap().is_none(),
        "four nodes still hold it"
    );
    // Longer than the lease: renewals on the four other nodes keep the hold.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!guard.is_lost());
    assert!(b.lock(&lock).try_acquire().await.unwrap().is_none());
    guard.release().await.unwrap();
    let theirs = b.lock(&lock).try_acquire().await.unwrap();
    assert!(theirs.is_some(), "free once released");
}
