//! Issue #14 item 6: on Valkey 9 (`DELIFEQ`, `SET ... IFEQ`) lease locks run without Lua,
//! detected once per connection, so a user who may not run scripts still has lease locks.
//! Skipped when no `valkey-server` is installed (`tests/setup.sh valkey`), unless
//! `REDLATCH_REQUIRE_VALKEY=1` (as `make test` sets), which makes a missing one a failure.

mod common;

use common::within;
use redlatch::{Client, ErrorKind};
use redlatch_fleet::{valkey_server_path, RedisServer, ServerOptions};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

fn valkey() -> Option<RedisServer> {
    let exe = match valkey_server_path() {
        Ok(exe) => exe,
        Err(e) => {
            assert!(std::env::var("REDLATCH_REQUIRE_VALKEY").is_err(), "{e}");
            eprintln!("skipped: {e}");
            return None;
        }
    };
    let server = RedisServer::start_with_options(&ServerOptions {
        exe: Some(exe),
        acl_user: Some(false),
        ..ServerOptions::default()
    })
    .unwrap();
    assert!(server.is_valkey());
    Some(server)
}

fn script_calls(server: &RedisServer) -> u64 {
    let stats = server.cli(&["INFO", "commandstats"]).unwrap();
    stats
        .lines()
        .filter(|l| l.starts_with("cmdstat_eval:") || l.starts_with("cmdstat_evalsha:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_locks_need_no_scripting_on_valkey() {
    let Some(server) = valkey() else { return };
    // Scripting denied: the recipe's commands minus EVAL/EVALSHA, plus DELIFEQ.
    let mut args = redlatch_fleet::acl::setuser_args("*", true);
    args.retain(|a| a != "+eval" && a != "+evalsha");
    args[2] = "noscript".into();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(server.cli(&refs).unwrap(), "OK");
    let url = format!(
        "redis://noscript:{}@127.0.0.1:{}",
        redlatch_fleet::acl::PASSWORD,
        server.port()
    );
    let client = within(
        BOUND,
        Client::builder(&url)
            .watchdog_timeout(Duration::from_millis(300))
            .connect(),
    )
    .await
    .unwrap();

    // Acquire, contend, extend, inspect, release.
    let lock = client.lock("vk").lease(Duration::from_secs(5));
    let g = within(BOUND, lock.clone().acquire()).await.unwrap();
    assert!(
        within(BOUND, client.lock("vk").wait(Duration::ZERO).try_acquire())
            .await
            .unwrap()
            .is_none()
    );
    g.extend(Duration::from_secs(9)).await.unwrap();
    let pttl: i64 = server.cli(&["PTTL", "vk"]).unwrap().parse().unwrap();
    assert!(pttl > 5000, "extend replaced the TTL: {pttl}");
    assert!(g.owned().await.unwrap());
    // A waiter is woken by the release's publish.
    let other = client.clone();
    let waiter = tokio::spawn(async move { other.lock("vk").wait(Duration::from_secs(10)).acquire().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    g.release().await.unwrap();
    let g2 = within(BOUND, waiter).await.unwrap().unwrap();
    // Someone else's hold is refused on release (compare-and-delete).
    server.cli(&["SET", "vk", "someone-else", "PX", "5000"]).unwrap();
    let e = g2.release().await.unwrap_err();
    assert!(e.kind().is_not_owned(), "{e}");

    // Watchdog mode: renewals keep it (lease 300 ms, held for a second).
    let wd = within(BOUND, client.lock("vk-wd").acquire()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!wd.is_lost());
    assert_eq!(server.cli(&["EXISTS", "vk-wd"]).unwrap(), "1");
    wd.release().await.unwrap();
    assert!(client.force_unlock("vk").await.unwrap());

    assert_eq!(script_calls(&server), 0, "no EVAL/EVALSHA was sent");

    // Fenced and reentrant locks need Lua: refused by the ACL, a clear error (not NotOwned).
    let e = within(
        BOUND,
        client
            .lock("vk-f")
            .fenced()
            .lease(Duration::from_secs(1))
            .acquire(),
    )
    .await
    .unwrap_err();
    assert!(
        !e.kind().is_not_owned() && e.kind() != ErrorKind::NotAcquired,
        "{e}"
    );
    assert!(
        e.message().contains("NOPERM") || e.message().to_lowercase().contains("permission"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrant_locks_use_the_scripts_on_valkey() {
    let Some(server) = valkey() else { return };
    let client = within(BOUND, Client::connect(&server.url())).await.unwrap();
    let rl = client.rlock("vk-r");
    let a = within(BOUND, rl.clone().acquire()).await.unwrap();
    let b = within(BOUND, rl.acquire()).await.unwrap();
    assert_eq!(server.cli(&["TYPE", "vk-r"]).unwrap(), "hash");
    b.release().await.unwrap();
    a.release().await.unwrap();
    assert!(script_calls(&server) > 0);
}

/// The watchdog's batch renewal reaches the server as one unit, as the script does: a
/// release of one of its holds sent while the batch is in flight (the driver's release racing
/// a renewal on the same multiplexed connection) runs after that hold's renewal, so the
/// renewal never finds a hold gone that its owner is just releasing. Commands sent one after
/// the other interleaved with the release (renewal of `b` after `b`'s `DELIFEQ`: reported
/// as not renewed, a released hold seen as lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_batch_is_not_overtaken_by_a_release() {
    use redlatch::protocol::request::{self, Holder};
    use redlatch::{RedisTransport, Transport};
    let Some(server) = valkey() else { return };
    let transport = RedisTransport::new(&server.url(), Duration::from_secs(5)).unwrap();
    within(BOUND, transport.ping()).await.unwrap(); // connected, DELIFEQ detected
    for round in 0..3 {
        let (a, b) = (format!("vk-batch-a:{round}"), format!("vk-batch-b:{round}"));
        let (ta, tb) = (
            Holder::Lease { token: "ta".into() },
            Holder::Lease { token: "tb".into() },
        );
        server.cli(&["SET", &a, "ta", "PX", "10000"]).unwrap();
        server.cli(&["SET", &b, "tb", "PX", "10000"]).unwrap();
        let batch = request::renew_batch(10_000, [(a.as_str(), &ta), (b.as_str(), &tb)]);
        let release = tb.release(&b, 10_000, "", 0);
        // Writes wait at the server for 300 ms, in the order they arrived, so the batch is
        // surely unanswered when the release is sent after it.
        server.cli(&["CLIENT", "PAUSE", "300", "WRITE"]).unwrap();
        let mut renewing = Box::pin(transport.eval(&batch));
        if let std::task::Poll::Ready(r) = futures::poll!(&mut renewing) {
            panic!("the batch was answered during a write pause: {r:?}");
        }
        let mut releasing = Box::pin(transport.eval(&release));
        let _ = futures::poll!(&mut releasing);
        let (renewed, released) = within(BOUND, futures::future::join(renewing, releasing)).await;
        let flags = redlatch::protocol::reply::decode_renew_batch(&renewed.unwrap(), 2).unwrap();
        assert_eq!(
            flags,
            [true, true],
            "round {round}: the release overtook the batch"
        );
        released.unwrap();
    }
    assert_eq!(script_calls(&server), 0);
}
