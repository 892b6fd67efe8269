//! A quorum's errors list every node with its outcome (`Error::nodes`), whichever call met
//! them and whether the client connected first or lazily (user trials of stop 41: Python's
//! lazily connected quorum reported two refused passwords as one node's connection error, and
//! a failed extend or release listed no node).

mod common;
use common::*;
use redlatch::{Client, ErrorKind};
use std::time::{Duration, Instant};

/// `server`'s URL with a password the server does not have.
fn wrong_password(server: &redlatch_fleet::RedisServer) -> String {
    server
        .admin_url()
        .replacen("redis://", "redis://:not-the-password@", 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn most_nodes_refusing_the_password_is_a_quorum_error_at_once() {
    let nodes = servers(3);
    let urls = [
        nodes[0].url(),
        wrong_password(&nodes[1]),
        wrong_password(&nodes[2]),
    ];
    let client = Client::quorum_builder(&urls).build_lazy().unwrap();
    for wait in [Some(Duration::ZERO), Some(Duration::from_secs(5)), None] {
        let started = Instant::now();
        let err = within(
            Duration::from_secs(10),
            client.lock("qe:auth").acquire_with_wait(wait),
        )
        .await
        .expect_err("2 of 3 nodes refuse the password");
        assert_eq!(err.kind(), ErrorKind::Quorum, "wait {wait:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "at once: {:?}",
            started.elapsed()
        );
        let failed: Vec<bool> = err.nodes().iter().map(|n| n.result.is_err()).collect();
        assert_eq!(failed, [false, true, true], "each node's outcome: {err}");
    }
    // What the one node granted is undone.
    let mut conn = raw(&nodes[0]).await;
    let left = exists_after_cleanup(&mut conn, "qe:auth").await;
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_refusing_the_password_leaves_the_wait_to_the_others() {
    // A re-trial of stop 45: one node refusing the password and one paused failed a 10 s wait
    // at once, as permanent, although the paused node came back within it.
    let nodes = servers(3);
    let urls = [wrong_password(&nodes[0]), nodes[1].url(), nodes[2].url()];
    let client = Client::quorum_builder(&urls).build_lazy().unwrap();
    nodes[2].pause().unwrap();
    let lock = client
        .lock("qe:minority")
        .lease(Duration::from_secs(10))
        .wait(Duration::from_secs(10));
    let resume = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        nodes[2].resume().unwrap();
    };
    let (held, ()) = tokio::join!(within(Duration::from_secs(30), lock.acquire()), resume);
    let held = held.expect("granted by the two others once the paused one is back");
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_extend_or_release_lists_every_node() {
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let client = Client::quorum_builder(&urls)
        .node_timeout(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    let guard = client
        .lock("qe:hold")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    nodes[1].pause().unwrap();
    nodes[2].pause().unwrap();
    let extend = within(Duration::from_secs(10), guard.extend(Duration::from_secs(20)))
        .await
        .unwrap_err();
    let extend_message = extend.message().to_owned();
    let release = within(Duration::from_secs(10), guard.release())
        .await
        .unwrap_err();
    for s in &nodes[1..] {
        s.resume().unwrap();
    }
    for (what, err) in [("extend", extend), ("release", release)] {
        assert_eq!(err.kind(), ErrorKind::Quorum, "{what}: {err}");
        let failed: Vec<bool> = err.nodes().iter().map(|n| n.result.is_err()).collect();
        assert_eq!(failed, [false, true, true], "{what}: each node's outcome: {err}");
    }
    // The nodes that did not answer may apply the new lease later: the outcome is unknown.
    assert!(extend_message.contains("outcome unknown"), "{extend_message}");
    // Still held: released once the nodes are back.
    within(Duration::from_secs(10), guard.release()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_error_message_says_why_each_node_did_not_grant() {
    // A user trial of stop 45: a lazily connected quorum with no node reachable said only
    // "0 of 3 nodes granted; a majority is 2", its reasons in `nodes()` alone (a Python
    // traceback or a log line shows the message).
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let client = Client::quorum_builder(&urls).build_lazy().unwrap();
    nodes[1].stop().unwrap();
    nodes[2].stop().unwrap();
    let err = within(
        Duration::from_secs(10),
        client
            .lock("qe:why")
            .acquire_with_wait(Some(Duration::from_millis(300))),
    )
    .await
    .expect_err("one node of three");
    assert_eq!(err.kind(), ErrorKind::Quorum, "{err}");
    for failed in &err.nodes()[1..] {
        let why = failed.result.as_ref().unwrap_err();
        assert!(err.message().contains(why.as_str()), "{why} in: {err}");
    }
    assert!(
        !err.message().contains(&err.nodes()[0].node),
        "the node that granted: {err}"
    );
}
