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
async fn a_lazily_connected_alias_never_votes() {
    // A user trial: with the alias counted as a node, the server it names confirmed an extend
    // twice after the key was gone from the third node, so the client was told it still held
    // the lock when a correctly configured client could take it.
    let nodes = servers(2);
    let urls = [nodes[0].url(), alias(&nodes[0]), nodes[1].url()];
    let client = Client::quorum_builder(&urls).build_lazy().unwrap();
    let guard = client
        .lock("qi:extend")
        .lease(Duration::from_secs(20))
        .acquire()
        .await
        .unwrap();
    let mut conn = raw(&nodes[1]).await;
    let _: i64 = cmd(&mut conn, &["DEL", "qi:extend"]).await;
    // Refused, or unknown (the alias refused as the same server: InvalidArgument, saying so);
    // never confirmed by one server's word.
    let extended = guard.extend(Duration::from_secs(20)).await;
    assert!(extended.is_err(), "one server's word is not a majority of three");
    assert!(!guard.owned().await.unwrap_or(false));
}
