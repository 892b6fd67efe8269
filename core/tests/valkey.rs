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

/// A user denied scripting (the recipe's commands minus EVAL/EVALSHA and `denied`, plus the
/// Valkey ones) named `user`, and the URL it logs in with.
fn noscript_user(server: &RedisServer, user: &str, denied: &[&str]) -> String {
    let mut args = redlatch_fleet::acl::setuser_args("*", true);
    args.retain(|a| a != "+eval" && a != "+evalsha" && !denied.contains(&a.as_str()));
    args[2] = user.into();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(server.cli(&refs).unwrap(), "OK");
    format!(
        "redis://{user}:{}@127.0.0.1:{}",
        redlatch_fleet::acl::PASSWORD,
        server.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_locks_need_no_scripting_on_valkey() {
    let Some(server) = valkey() else { return };
    let url = noscript_user(&server, "noscript", &[]);
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

/// Without scripts, the answers are the scripts' (issue #10's rules): a release retried after
/// its first attempt applied late is released (its latch says so), not "gone"; application
/// data under a lock's name is a KeyConflict and is left alone; an ACL refusal changes
/// nothing; a release works over maxmemory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_scripts_the_answers_are_the_scripts() {
    let Some(server) = valkey() else { return };
    let client = within(
        BOUND,
        Client::builder(&noscript_user(&server, "noscript", &[]))
            .network_timeout(Duration::from_millis(500))
            .connect(),
    )
    .await
    .unwrap();

    // The first attempt applies while the caller has given up on it (server paused).
    let g = within(
        BOUND,
        client.lock("vk-late").lease(Duration::from_secs(20)).acquire(),
    )
    .await
    .unwrap();
    server.pause().unwrap();
    let err = within(BOUND, g.release()).await;
    server.resume().unwrap();
    assert_eq!(err.unwrap_err().kind(), ErrorKind::Connection);
    assert_eq!(server.cli(&["EXISTS", "vk-late"]).unwrap(), "0", "applied late");
    within(BOUND, g.release())
        .await
        .expect("the earlier attempt released it: its latch says so");

    // Released by someone else meanwhile and taken: a refusal, their key untouched.
    let g = within(
        BOUND,
        client.lock("vk-taken").lease(Duration::from_secs(20)).acquire(),
    )
    .await
    .unwrap();
    server
        .cli(&["SET", "vk-taken", "0123456789abcdef0123", "PX", "20000"])
        .unwrap();
    let err = within(BOUND, g.release()).await.unwrap_err();
    assert_eq!(err.reason(), Some(redlatch::Reason::Taken), "{err}");
    assert_eq!(server.cli(&["GET", "vk-taken"]).unwrap(), "0123456789abcdef0123");

    // Application data under the lock's name.
    server.cli(&["SET", "vk-app", "some application text"]).unwrap();
    server.cli(&["HSET", "vk-hash", "f", "1"]).unwrap();
    server.cli(&["RPUSH", "vk-list", "x"]).unwrap();
    for name in ["vk-app", "vk-hash"] {
        let lock = client.lock(name).wait(Duration::ZERO);
        let err = within(BOUND, lock.clone().try_acquire()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{name}: {err}");
        let err = within(BOUND, lock.locked()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::KeyConflict, "{name}: {err}");
    }
    let err = within(BOUND, client.force_unlock("vk-list")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::KeyConflict, "{err}");
    assert_eq!(server.cli(&["TYPE", "vk-app"]).unwrap(), "string");
    assert_eq!(server.cli(&["LLEN", "vk-list"]).unwrap(), "1");
    let g = within(
        BOUND,
        client
            .lock("vk-replaced")
            .lease(Duration::from_secs(20))
            .acquire(),
    )
    .await
    .unwrap();
    server.cli(&["DEL", "vk-replaced"]).unwrap();
    server.cli(&["HSET", "vk-replaced", "f", "1"]).unwrap();
    let err = within(BOUND, g.release()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::KeyConflict, "{err}");
    assert_eq!(server.cli(&["TYPE", "vk-replaced"]).unwrap(), "hash");

    // No PUBLISH: the release is refused before anything changed.
    let nopub = within(
        BOUND,
        Client::connect(&noscript_user(&server, "nopub", &["+publish"])),
    )
    .await
    .unwrap();
    let g = within(
        BOUND,
        nopub.lock("vk-nopub").lease(Duration::from_secs(20)).acquire(),
    )
    .await
    .unwrap();
    let err = within(BOUND, g.release()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoPermission, "{err}");
    assert!(g.is_held());
    assert_eq!(
        server.cli(&["EXISTS", "vk-nopub"]).unwrap(),
        "1",
        "left as it was"
    );

    // Over maxmemory a release still releases (as the script and redis-py's do).
    let g = within(
        BOUND,
        client.lock("vk-oom").lease(Duration::from_secs(20)).acquire(),
    )
    .await
    .unwrap();
    server.cli(&["CONFIG", "SET", "maxmemory", "1"]).unwrap();
    let released = within(BOUND, g.release()).await;
    server.cli(&["CONFIG", "SET", "maxmemory", "0"]).unwrap();
    released.expect("a release frees memory; OOM must not refuse it");
    assert_eq!(server.cli(&["EXISTS", "vk-oom"]).unwrap(), "0");

    assert_eq!(script_calls(&server), 0, "no EVAL/EVALSHA was sent");
}

/// A user granted the scripts but not the transaction's commands still has lease locks:
/// those requests run their scripts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_the_plain_commands_runs_the_scripts() {
    let Some(server) = valkey() else { return };
    let mut args = redlatch_fleet::acl::setuser_args("*", false);
    args[2] = "scripts".into();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(server.cli(&refs).unwrap(), "OK");
    let url = format!(
        "redis://scripts:{}@127.0.0.1:{}",
        redlatch_fleet::acl::PASSWORD,
        server.port()
    );
    let client = within(BOUND, Client::connect(&url)).await.unwrap();
    let g = within(BOUND, client.lock("vk-s").acquire()).await.unwrap();
    assert!(g.owned().await.unwrap());
    g.release().await.unwrap();
    assert_eq!(server.cli(&["EXISTS", "vk-s"]).unwrap(), "0");
    assert!(script_calls(&server) > 0);
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
    use redlatch::protocol::reply::OwnershipReply;
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
        let release = tb.release(&b, 10_000, "", 0, 0);
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
            [OwnershipReply::Done, OwnershipReply::Done],
            "round {round}: the release overtook the batch"
        );
        released.unwrap();
    }
    assert_eq!(script_calls(&server), 0);
}
