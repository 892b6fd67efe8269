//! Redlock over independent nodes, each behind its own fault proxy (faults.md rows 7, 14, 15):
//! a minority partitioned, a majority partitioned while holding, a minority node frozen past
//! the lease, and the clean-up of a failed attempt on a slow node.

mod common;
use common::*;

use std::time::Duration;

use redlatch::{Client, ErrorKind};
use redlatch_faults::{Fault, FaultProxy};
use redlatch_fleet::RedisServer;

struct Quorum {
    servers: Vec<RedisServer>,
    proxies: Vec<FaultProxy>,
}

impl Quorum {
    fn start(nodes: usize) -> Quorum {
        let servers: Vec<RedisServer> = (0..nodes).map(|_| server()).collect();
        let proxies = servers
            .iter()
            .map(|s| FaultProxy::start(s.port()).unwrap())
            .collect();
        Quorum { servers, proxies }
    }

    async fn client(&self, watchdog: Duration) -> Client {
        let urls: Vec<String> = self.proxies.iter().map(FaultProxy::url).collect();
        Client::quorum_builder(&urls)
            .watchdog_timeout(watchdog)
            .node_timeout(Duration::from_millis(100))
            .network_timeout(Duration::from_millis(500))
            .connect()
            .await
            .unwrap()
    }

    /// A client straight to the nodes, on no proxy.
    async fn direct(&self) -> Client {
        let urls: Vec<String> = self.servers.iter().map(RedisServer::url).collect();
        Client::quorum_builder(&urls)
            .node_timeout(Duration::from_millis(100))
            .connect()
            .await
            .unwrap()
    }

    fn partition(&self, nodes: &[usize], fault: Fault) {
        for &i in nodes {
            self.proxies[i].set_both(fault);
        }
    }

    fn holders_of(&self, key: &str) -> usize {
        self.servers.iter().filter(|s| exists(s, key)).count()
    }
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, f)
        .await
        .expect("call hung past its bound")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minority_partitioned_still_acquires_extends_renews_and_releases() {
    let q = Quorum::start(5);
    let client = q.client(Duration::from_millis(900)).await;
    let lock = name("minority-partition");
    q.partition(&[3, 4], Fault::Blackhole);

    let guard = bounded(client.lock(&lock).lease(Duration::from_secs(3)).acquire())
        .await
        .expect("3 of 5 nodes are a majority");
    assert_eq!(q.holders_of(&lock), 3);
    bounded(guard.extend(Duration::from_secs(3))).await.unwrap();
    bounded(guard.release()).await.unwrap();

    let rlock = name("minority-partition-r");
    let held = bounded(client.rlock(&rlock).acquire()).await.unwrap();
    // Longer than the 900 ms watchdog lease: renewals reach the majority.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!held.is_lost());
    assert!(held.owned().await.unwrap());
    bounded(held.release()).await.unwrap();

    // Healed, the held requests reach the two nodes late, in order (grant, renewals,
    // release): nothing is left behind there either.
    q.partition(&[3, 4], Fault::Pass);
    assert!(
        eventually(Duration::from_secs(5), || q.holders_of(&lock) == 0
            && q.holders_of(&rlock) == 0),
        "keys left behind: lease {} node(s), reentrant {} node(s)",
        q.holders_of(&lock),
        q.holders_of(&rlock)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn majority_partitioned_while_holding_is_reported_lost_and_fails_fast() {
    let q = Quorum::start(5);
    let client = q.client(Duration::from_millis(1200)).await;
    let lock = name("majority-partition");
    let guard = bounded(client.lock(&lock).acquire()).await.unwrap();
    let lost = guard.lost();
    q.partition(&[0, 1, 2], Fault::Blackhole);
    bounded(lost).await;
    // Acquires from the partitioned side fail quickly with a Quorum error, never hang.
    let err = bounded(client.lock(name("elsewhere")).try_acquire())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Quorum, "{err}");
    assert!(!err.nodes().is_empty(), "the error names the nodes");
    let err = guard.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    // The other side gets the lock once the keys expire on the majority.
    let other = q.direct().await;
    let theirs = bounded(other.lock(&lock).wait(Duration::from_secs(10)).acquire())
        .await
        .unwrap();
    theirs.release().await.unwrap();
    q.partition(&[0, 1, 2], Fault::Pass);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minority_node_frozen_past_the_lease_does_not_lose_the_hold() {
    let q = Quorum::start(5);
    let client = q.client(Duration::from_millis(900)).await;
    let lock = name("minority-frozen");
    let guard = bounded(client.lock(&lock).acquire()).await.unwrap();
    q.servers[0].pause().unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!guard.is_lost(), "four nodes renewed it");
    q.servers[0].resume().unwrap();
    // Node 0's key expired during the freeze (Redis keeps absolute expiry times).
    assert!(eventually(Duration::from_secs(3), || !exists(
        &q.servers[0],
        &lock
    )));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!guard.is_lost());
    assert!(guard.owned().await.unwrap());
    let other = q.direct().await;
    assert!(
        bounded(other.lock(&lock).try_acquire()).await.unwrap().is_none(),
        "one free node is not a majority"
    );
    bounded(guard.release()).await.unwrap();
    assert!(eventually(Duration::from_secs(3), || q.holders_of(&lock) == 0));
}

/// Issue 10 item 5: a failed attempt's clean-up must finish on every node that may have
/// granted, a slow node with an empty script cache included (NOSCRIPT, then EVAL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempt_is_cleaned_up_on_a_slow_node_with_an_empty_script_cache() {
    let q = Quorum::start(3);
    let lock = name("slow-node-rollback");
    // Another owner holds the name on nodes 0 and 1.
    for s in &q.servers[..2] {
        let rival = Client::connect(&s.url()).await.unwrap();
        std::mem::forget(
            rival
                .lock(&lock)
                .lease(Duration::from_secs(20))
                .acquire()
                .await
                .unwrap(),
        );
    }
    // Connected to every node first (redis-rs' handshake would otherwise be slowed too),
    // then the slow node's script cache emptied, as on a fresh node.
    let client = q.client(Duration::from_secs(10)).await;
    let warm = bounded(
        client
            .lock(name("warm-up"))
            .lease(Duration::from_secs(5))
            .acquire(),
    )
    .await
    .unwrap();
    warm.release().await.unwrap();
    let _: () = cmd(&q.servers[2], &["SCRIPT", "FLUSH"]);
    let _: () = cmd(&q.servers[2], &["CONFIG", "RESETSTAT"]);
    q.proxies[2].set(
        redlatch_faults::Direction::ToClient,
        Fault::Delay(Duration::from_millis(500)),
    );
    let outcome = bounded(client.lock(&lock).lease(Duration::from_secs(10)).try_acquire()).await;
    assert!(
        !matches!(outcome, Ok(Some(_))),
        "two of three nodes are held by another owner"
    );
    // The slow node got the attempt (its grant may already be undone: the undo goes out as
    // EVAL at once, so it can land before the attempt returns).
    let stats: String = cmd(&q.servers[2], &["INFO", "commandstats"]);
    assert!(
        stats.contains("cmdstat_set:"),
        "the slow node got the attempt: {stats}"
    );
    assert!(
        eventually(Duration::from_secs(5), || !exists(&q.servers[2], &lock)),
        "the failed attempt's key stays on the slow node for its whole 10 s lease"
    );
}
