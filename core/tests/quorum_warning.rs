//! shared/API.md, Quorum: a release "succeeds when a majority confirmed or the keys are gone,
//! and reports unreachable nodes as a warning, not an error". The warning reaches the
//! client's `on_warning` handler (each binding's warning channel), once per node.

mod common;

use common::*;
use redlatch::{Client, Warning};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

/// The kinds-"release" warnings seen so far, and the handler that collects every warning.
fn collector() -> (
    impl Fn() -> Vec<Warning>,
    impl Fn(&Warning) + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::<Warning>::new()));
    let all = seen.clone();
    let releases = move || {
        let seen = seen.lock().unwrap();
        seen.iter().filter(|w| w.kind == "release").cloned().collect()
    };
    (releases, move |w: &Warning| all.lock().unwrap().push(w.clone()))
}

async fn gone_on(nodes: &[redlatch_fleet::RedisServer], key: &str) {
    for node in nodes {
        let mut conn = raw(node).await;
        assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", key]).await, 0, "{key}");
    }
}

/// A quorum client of `nodes` (network timeout 500 ms) and its kind-"release" warnings.
async fn watched_quorum(nodes: &[redlatch_fleet::RedisServer]) -> (Client, impl Fn() -> Vec<Warning>) {
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let (releases, handler) = collector();
    let builder = Client::quorum_builder(&urls)
        .network_timeout(Duration::from_millis(500))
        .on_warning(handler);
    (within(BOUND, builder.connect()).await.unwrap(), releases)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_misses_nodes_warns_once_for_each() {
    let nodes = servers(5);
    let (client, releases) = watched_quorum(&nodes).await;
    let lock = client.lock("qw:lock").lease(Duration::from_secs(30));

    // All nodes up: no warning.
    let g = within(BOUND, lock.acquire()).await.unwrap();
    within(BOUND, g.release()).await.unwrap();
    assert!(releases().is_empty(), "{:?}", releases());

    // Held on all five, then one node dies (refused at once: its error comes with the
    // majority's answers) and one hangs (its timeout comes after the release returned).
    let g = within(BOUND, lock.acquire()).await.unwrap();
    nodes[3].pause().unwrap();
    nodes[4].kill().unwrap();
    within(BOUND, g.release()).await.unwrap();
    gone_on(&nodes[..3], "qw:lock").await;
    let mut expected: Vec<String> = nodes[3..]
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    expected.sort();
    let mut warned = Vec::new();
    for _ in 0..100 {
        warned = releases();
        if warned.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut named: Vec<String> = warned.iter().map(|w| w.node.clone()).collect();
    named.sort();
    assert_eq!(named, expected, "{warned:?}");
    assert!(
        warned
            .iter()
            .all(|w| w.message.contains("did not confirm a release")),
        "{warned:?}"
    );

    // Once per node: the next releases that miss them (a multi-lock's too) say nothing new.
    let g = within(BOUND, lock.acquire()).await.unwrap();
    within(BOUND, g.release()).await.unwrap();
    let multi = client
        .multi_lock_names(["qw:a", "qw:b"])
        .unwrap()
        .lease(Duration::from_secs(30));
    let m = within(BOUND, multi.acquire()).await.unwrap();
    within(BOUND, m.release()).await.unwrap();
    gone_on(&nodes[..3], "qw:a").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(releases().len(), 2, "{:?}", releases());
    nodes[3].resume().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_release_that_misses_a_node_warns() {
    let nodes = servers(3);
    let (client, releases) = watched_quorum(&nodes).await;
    let multi = client
        .multi_lock_names(["qw:m1", "qw:m2"])
        .unwrap()
        .lease(Duration::from_secs(30));
    let m = within(BOUND, multi.acquire()).await.unwrap();
    nodes[2].pause().unwrap();
    within(BOUND, m.release()).await.unwrap();
    gone_on(&nodes[..2], "qw:m1").await;
    let mut warned = Vec::new();
    for _ in 0..100 {
        warned = releases();
        if !warned.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0].node, format!("127.0.0.1:{}", nodes[2].port()));
    nodes[2].resume().unwrap();
}
