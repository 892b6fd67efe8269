//! 8 tasks x 500 critical sections on one counter end exactly at 4000, with no overlapping
//! intervals, for lease locks, reentrant locks and quorum locks over 3 and 5 nodes.

mod common;
use common::*;
use redlatch::Client;
use std::time::Duration;

const TASKS: usize = 8;
const SECTIONS: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lease_lock_counter_is_exact() {
    let s = server();
    let client = client(&s).await;
    let total = hammer(
        |_| client.lock("mx:lease").lease(Duration::from_secs(10)),
        &s,
        TASKS,
        SECTIONS,
    )
    .await;
    assert_eq!(total, (TASKS * SECTIONS) as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reentrant_lock_counter_is_exact() {
    let s = server();
    let client = client(&s).await;
    // Each task is its own owner (its own rlock handle); watchdog mode.
    let total = hammer(|_| client.rlock("mx:rlock"), &s, TASKS, SECTIONS).await;
    assert_eq!(total, (TASKS * SECTIONS) as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn separate_clients_counter_is_exact() {
    let s = server();
    let mut clients = Vec::new();
    for _ in 0..TASKS {
        clients.push(client(&s).await);
    }
    let total = hammer(|t| clients[t].lock("mx:clients"), &s, TASKS, 100).await;
    assert_eq!(total, (TASKS * 100) as i64);
}

async fn quorum_counter(n: usize, reentrant: bool) {
    let nodes = servers(n);
    let counter = server();
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    // A generous per-node timeout: CI machines are shared and noisy, and this test is about
    // exclusion, not latency.
    let client = Client::quorum_builder(&urls)
        .node_timeout(Duration::from_secs(1))
        .connect()
        .await
        .expect("quorum connect");
    assert_eq!(client.node_count(), n);
    let total = hammer(
        |_| {
            if reentrant {
                client.rlock("mx:quorum")
            } else {
                client.lock("mx:quorum").lease(Duration::from_secs(10))
            }
        },
        &counter,
        TASKS,
        SECTIONS,
    )
    .await;
    assert_eq!(total, (TASKS * SECTIONS) as i64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quorum_3_counter_is_exact() {
    quorum_counter(3, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quorum_5_counter_is_exact() {
    quorum_counter(5, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quorum_3_reentrant_counter_is_exact() {
    quorum_counter(3, true).await;
}
