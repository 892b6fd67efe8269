//! Issue #14 item 5: at connect the client reads `maxmemory-policy` and warns once (a
//! `tracing` WARN event and the `on_warning` handler) when Redis may evict lock keys;
//! a denied `CONFIG` is tolerated.

mod common;

use common::{logs, within};
use redlatch::{Client, Warning};
use redlatch_fleet::{RedisServer, ServerOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

fn server_with_policy(policy: &str) -> RedisServer {
    RedisServer::start_with_options(&ServerOptions {
        args: vec!["--maxmemory-policy".into(), policy.into()],
        acl_user: Some(false),
        ..ServerOptions::default()
    })
    .unwrap()
}

fn collector() -> (
    Arc<Mutex<Vec<Warning>>>,
    impl Fn(&Warning) + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |w: &Warning| s.lock().unwrap().push(w.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicting_policy_is_warned_once_per_node() {
    logs::capture();
    let server = server_with_policy("volatile-lru");
    let (seen, handler) = collector();
    let client = within(
        BOUND,
        Client::builder(&server.url()).on_warning(handler).connect(),
    )
    .await
    .unwrap();
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].kind, "eviction");
        assert_eq!(seen[0].node, format!("127.0.0.1:{}", server.port()));
        assert!(
            seen[0].message.contains("maxmemory-policy is volatile-lru"),
            "{}",
            seen[0].message
        );
    }
    assert!(
        logs::text().contains("maxmemory-policy is volatile-lru"),
        "logged as a tracing event"
    );
    // A reconnect (the server killed our connections) checks again but does not warn again.
    server.cli(&["CLIENT", "KILL", "TYPE", "normal"]).unwrap();
    let g = within(BOUND, client.lock("ev").lease(Duration::from_secs(1)).acquire())
        .await
        .unwrap();
    g.release().await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noeviction_and_a_denied_config_give_no_warning_and_no_error() {
    let quiet = server_with_policy("noeviction");
    let (seen, handler) = collector();
    within(BOUND, Client::builder(&quiet.url()).on_warning(handler).connect())
        .await
        .unwrap();
    assert!(seen.lock().unwrap().is_empty());

    // A user who may not run CONFIG: the check is skipped, locks work.
    let evicting = server_with_policy("allkeys-lru");
    let reply = evicting
        .cli(&[
            "ACL", "SETUSER", "noconfig", "on", ">pw", "+@all", "-config", "~*", "&*",
        ])
        .unwrap();
    assert_eq!(reply, "OK");
    let url = format!("redis://noconfig:pw@127.0.0.1:{}", evicting.port());
    let (seen, handler) = collector();
    let client = within(BOUND, Client::builder(&url).on_warning(handler).connect())
        .await
        .unwrap();
    let g = client
        .lock("ev2")
        .lease(Duration::from_secs(1))
        .acquire()
        .await
        .unwrap();
    g.release().await.unwrap();
    assert!(seen.lock().unwrap().is_empty(), "nothing known, nothing warned");
}
