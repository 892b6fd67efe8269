//! A quorum's nodes are independent servers: two URLs reaching one server (`localhost` and
//! `127.0.0.1`) are refused by server identity (`INFO server` run_id), not only by their text.

mod common;
use common::*;
use redlatch::{Client, ErrorKind};
use std::time::Duration;

/// `url` of `server` naming it `localhost` instead of `127.0.0.1`.
fn alias(server: &redlatch_fleet::RedisServer) -> String {
    let url = server.url();
    assert!(url.contains("127.0.0.1"), "{url}");
    url.replacen("127.0.0.1", "localhost", 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_named_twice_is_refused_at_connect() {
    let nodes = servers(2);
    let urls = [nodes[0].url(), alias(&nodes[0]), nodes[1].url()];
    let err = Client::quorum(&urls).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("are the same server"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazily_connected_alias_refuses_every_acquire() {
    // User trials: with the alias counted as a node, the server it names confirmed an extend
    // twice after the key was gone from the third node (stop 40); with the alias refused but
    // the acquire granted by the other two, the quorum ran on without a spare and said so only
    // at the release (stop 41), where `connect` refuses it. Now the first call refuses it too,
    // and what the others granted is undone.
    let nodes = servers(2);
    let urls = [nodes[0].url(), alias(&nodes[0]), nodes[1].url()];
    let client = Client::quorum_builder(&urls).build_lazy().unwrap();
    let lock = client.lock("qi:alias").lease(Duration::from_secs(20));
    for wait in [Some(Duration::ZERO), Some(Duration::from_secs(5)), None] {
        let err = within(Duration::from_secs(10), lock.clone().acquire_with_wait(wait))
            .await
            .expect_err("a quorum with one server under two URLs");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "wait {wait:?}: {err}");
        assert!(err.message().contains("are the same server"), "{err}");
        if wait == Some(Duration::ZERO) {
            // The first call heard every node (each later one refuses before sending).
            assert_eq!(err.nodes().len(), 3, "each node's outcome: {err}");
        }
    }
    for node in &nodes {
        let mut conn = raw(node).await;
        let left = exists_after_cleanup(&mut conn, "qi:alias").await;
        assert_eq!(left, 0, "a grant on a real node is undone");
    }
}
