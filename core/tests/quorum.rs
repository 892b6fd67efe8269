//! Redlock quorum mode with nodes stopped, paused and killed.

mod common;
use common::*;
use redlatch::{Client, ErrorKind};
use std::time::{Duration, Instant};

async fn quorum_of(nodes: &[redlatch_fleet::RedisServer]) -> Client {
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    Client::quorum(&urls).await.unwrap()
}

async fn holders(nodes: &[redlatch_fleet::RedisServer], key: &str) -> usize {
    let mut n = 0;
    for s in nodes {
        if s.is_running() && !s.is_paused() {
            let mut conn = raw(s).await;
            n += cmd::<i64>(&mut conn, &["EXISTS", key]).await as usize;
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_writes_every_node_and_release_clears_them() {
    let nodes = servers(5);
    let client = quorum_of(&nodes).await;
    let g = client
        .lock("q:all")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    // Acquire returns once a majority granted; the other nodes' requests were sent too.
    let mut seen = 0;
    for _ in 0..40 {
        seen = holders(&nodes, "q:all").await;
        if seen == 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen, 5);
    g.release().await.unwrap();
    assert_eq!(holders(&nodes, "q:all").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_five_stopped_still_acquires_three_stopped_fails_with_quorum() {
    let nodes = servers(5);
    let client = quorum_of(&nodes).await;
    nodes[0].stop().unwrap();
    nodes[1].kill().unwrap();
    for lock in [
        client.lock("q:deg").lease(Duration::from_secs(10)),
        client.rlock("q:deg-r"),
    ] {
        let g = within(Duration::from_secs(10), lock.acquire()).await.unwrap();
        assert!(g.owned().await.unwrap());
        g.extend(Duration::from_secs(10)).await.unwrap();
        g.release().await.unwrap();
    }
    nodes[2].pause().unwrap();
    let started = Instant::now();
    let err = within(
        Duration::from_secs(15),
        client
            .lock("q:deg")
            .lease(Duration::from_secs(10))
            .wait(Duration::from_secs(1))
            .acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Quorum, "{err}");
    assert_eq!(err.nodes().len(), 5);
    assert_eq!(
        err.nodes().iter().filter(|n| n.result.is_err()).count(),
        3,
        "{:?}",
        err.nodes()
    );
    // Bounded by wait + network timeout, never a hang (generous bound: shared machines).
    assert!(started.elapsed() < Duration::from_secs(10));
    // The partial grants were rolled back on the reachable nodes.
    assert_eq!(holders(&nodes, "q:deg").await, 0);
    // Without a wait, persistent errors end the call after the network timeout.
    let err = within(
        Duration::from_secs(15),
        client.lock("q:deg").lease(Duration::from_secs(10)).acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Quorum);
    nodes[2].resume().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_node_is_skipped_by_the_node_timeout() {
    let nodes = servers(3);
    let client = quorum_of(&nodes).await;
    nodes[0].pause().unwrap();
    let lock = client.lock("q:slow").lease(Duration::from_secs(2));
    let g = within(Duration::from_secs(5), lock.acquire()).await.unwrap();
    // Reads and force unlock use the per-node timeout (100 ms for this lease, 250 ms for the
    // default one) too, not the 3 s network timeout: a generous bound well below the latter.
    let bound = Duration::from_millis(2_000);
    assert!(within(bound, lock.locked()).await.unwrap());
    assert!(within(bound, lock.ttl()).await.unwrap().is_some());
    g.release().await.unwrap();
    assert!(!within(bound, client.force_unlock("q:slow")).await.unwrap());
    // With a majority unreachable, force unlock cannot tell: a Quorum error, not `false`.
    nodes[1].pause().unwrap();
    let err = within(bound, client.force_unlock("q:slow")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Quorum, "{err}");
    let unreachable: Vec<bool> = err.nodes().iter().map(|n| n.result.is_err()).collect();
    assert_eq!(unreachable, [true, true, false]);
    // So can `locked()`; its error lists the nodes too (a user trial found an empty list).
    let err = within(bound, lock.locked()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Quorum, "{err}");
    let unreachable: Vec<bool> = err.nodes().iter().map(|n| n.result.is_err()).collect();
    assert_eq!(unreachable, [true, true, false], "{err}");
    nodes[1].resume().unwrap();
    nodes[0].resume().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minority_held_by_others_means_busy_not_error() {
    let nodes = servers(3);
    let client = quorum_of(&nodes).await;
    let other = quorum_of(&nodes).await;
    let held = other
        .lock("q:busy")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    let err = client
        .lock("q:busy")
        .lease(Duration::from_secs(10))
        .wait(Duration::from_millis(200))
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired);
    held.release().await.unwrap();
    // Split vote: another holder on 1 node only; we still get 2 of 3.
    let mut conn = raw(&nodes[0]).await;
    let _: () = cmd(&mut conn, &["SET", "q:split", "someone", "PX", "10000"]).await;
    let g = client
        .lock("q:split")
        .lease(Duration::from_secs(10))
        .try_acquire()
        .await
        .unwrap()
        .expect("2 of 3");
    g.release().await.unwrap();
    let v: String = cmd(&mut conn, &["GET", "q:split"]).await;
    assert_eq!(v, "someone", "release leaves the other holder's key alone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_is_refused_in_quorum_mode() {
    let nodes = servers(3);
    let client = quorum_of(&nodes).await;
    let err = client.lock("q:f").fenced().acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(holders(&nodes, "q:f").await, 0);
}

/// A user trial found `[a, a, down]` accepted: one live server cast two votes, so every
/// lock was decided by it alone. The same server under another database number is no
/// independent node either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_given_twice_is_refused_before_any_node_is_asked() {
    let nodes = servers(2);
    let (a, b) = (nodes[0].url(), nodes[1].url());
    let other_db = format!("{}/1", a.trim_end_matches('/').trim_end_matches("/0"));
    for urls in [
        vec![a.clone(), a.clone(), b.clone()],
        vec![a.clone(), b.clone(), other_db],
    ] {
        let err = Client::quorum(&urls).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{urls:?}: {err}");
        assert!(err.message().contains("more than once"), "{err}");
        let checked = Client::quorum_builder(&urls).check().unwrap_err();
        assert_eq!(checked.kind(), ErrorKind::InvalidArgument);
    }
    assert!(Client::quorum(&[a, b]).await.is_ok(), "distinct nodes are fine");
    for s in &nodes {
        let mut conn = raw(s).await;
        assert_eq!(cmd::<i64>(&mut conn, &["DBSIZE"]).await, 0, "nothing written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_connect_needs_a_majority() {
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    nodes[0].kill().unwrap();
    assert!(Client::quorum(&urls).await.is_ok());
    nodes[1].kill().unwrap();
    let err = within(Duration::from_secs(15), Client::quorum(&urls))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Quorum);
    // Per-node outcomes, in the order of the URLs: the two stopped nodes failed.
    let failed: Vec<bool> = err.nodes().iter().map(|n| n.result.is_err()).collect();
    assert_eq!(failed, [true, true, false], "{:?}", err.nodes());
    assert!(urls[0].ends_with(&err.nodes()[0].node), "{:?}", err.nodes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_watchdog_reports_loss_when_the_majority_loses_the_key() {
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    // A short watchdog for a short test, with a per-node timeout that a loaded CI machine
    // can meet (the default would be 300 ms / 20 = 15 ms).
    let client = Client::quorum_builder(&urls)
        .watchdog_timeout(Duration::from_millis(300))
        .node_timeout(Duration::from_millis(100))
        .connect()
        .await
        .unwrap();
    let g = client.lock("q:wd").acquire().await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!g.is_lost());
    // One node losing its key is survivable...
    let mut c0 = raw(&nodes[0]).await;
    let _: () = cmd(&mut c0, &["DEL", "q:wd"]).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!g.is_lost());
    // ...a majority is not.
    let mut c1 = raw(&nodes[1]).await;
    let _: () = cmd(&mut c1, &["DEL", "q:wd"]).await;
    within(Duration::from_secs(3), g.lost()).await;
}

/// The clean-up of a failed attempt finishes on a slow node whose script cache is empty: the
/// undo there is an EVALSHA answered NOSCRIPT, then an EVAL, both slower than the per-node
/// timeout (issue #10, item 5). It used to be cut at the node timeout, leaving the grant for
/// the whole lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempt_is_undone_on_a_slow_node_with_an_empty_script_cache() {
    let nodes = servers(3);
    let slow = common::relay::Relay::start(nodes[2].port()).await;
    slow.delay_replies(Duration::from_millis(500));
    let mut direct: Vec<_> = Vec::new();
    for n in &nodes {
        direct.push(raw(n).await);
    }
    // Another owner holds the name on nodes 1 and 2.
    for conn in &mut direct[..2] {
        let _: () = cmd(
            conn,
            &["SET", "q:slow", "0123456789abcdef0123456789abcdef", "PX", "30000"],
        )
        .await;
    }
    let _: () = cmd(&mut direct[2], &["SCRIPT", "FLUSH"]).await;
    let urls = [nodes[0].url(), nodes[1].url(), slow.url()];
    let client = Client::quorum_builder(&urls)
        .node_timeout(Duration::from_millis(100))
        .connect()
        .await
        .unwrap();
    let err = within(
        Duration::from_secs(5),
        client
            .lock("q:slow")
            .lease(Duration::from_secs(20))
            .wait(Duration::ZERO)
            .acquire(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotAcquired, "{err}");
    // The slow node granted (its reply came after the node timeout); the undo must land.
    let mut gone = false;
    for _ in 0..60 {
        if cmd::<i64>(&mut direct[2], &["EXISTS", "q:slow"]).await == 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stats: String = cmd(&mut direct[2], &["INFO", "commandstats"]).await;
    assert!(
        stats.contains("cmdstat_set:"),
        "the slow node got the attempt: {stats}"
    );
    // Valkey undoes a lease lock's grant without a script (one DELIFEQ transaction).
    let undo = if nodes[2].is_valkey() {
        "cmdstat_delifeq:"
    } else {
        "cmdstat_eval:"
    };
    assert!(stats.contains(undo), "the undo was sent ({undo}): {stats}");
    assert!(
        gone,
        "the slow node's grant was undone, not left for the 20 s lease"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_waits_error_says_why_each_node_failed() {
    // A user trial: with 3 of 5 nodes stopped and a wait, the error listed the stopped nodes as
    // "not asked: undoing an earlier attempt there" and hid why they failed.
    let nodes = servers(5);
    let client = quorum_of(&nodes).await;
    for n in &nodes[..3] {
        n.pause().unwrap();
    }
    let lock = client
        .lock("q:why")
        .lease(Duration::from_secs(2))
        .wait(Duration::from_millis(800));
    let err = within(Duration::from_secs(10), lock.acquire()).await.unwrap_err();
    for n in &nodes[..3] {
        n.resume().unwrap();
    }
    assert_eq!(err.kind(), ErrorKind::Quorum, "{err}");
    for outcome in &err.nodes()[..3] {
        let why = outcome.result.as_ref().unwrap_err();
        assert!(why.contains("no reply"), "{}: {why}", outcome.node);
    }
}

/// Deletes `key` on the first `n` of `nodes` (as a restart without persistence would).
async fn delete_on(nodes: &[redlatch_fleet::RedisServer], n: usize, key: &str) {
    for s in &nodes[..n] {
        let _: () = cmd(&mut raw(s).await, &["DEL", key]).await;
    }
}

// Redlock: a release counts only if a majority still held the lock, as `owned()` and extends
// count; with fewer, another owner could have held a majority meanwhile (`owned()` would have
// said so, and made the loss known: then the release reports `LockLost`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_finds_no_majority_reports_the_loss_and_clears_the_rest() {
    let nodes = servers(3);
    let client = quorum_of(&nodes).await;
    let g = client
        .lock("q:minority")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    delete_on(&nodes, 2, "q:minority").await;
    let err = g.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotOwned, "{err}"); // as on one node
    assert_eq!(err.reason(), Some(redlatch::Reason::Deleted), "{err}");
    assert_eq!(
        holders(&nodes, "q:minority").await,
        0,
        "its key on the third node is deleted"
    );
}

// A hold already known lost (here by a refused extend) still deletes its key where it is left,
// instead of keeping that node from the next owner for the rest of the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_release_of_a_lost_quorum_hold_deletes_its_key_on_the_minority() {
    let nodes = servers(3);
    let client = quorum_of(&nodes).await;
    let g = client
        .lock("q:lost")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    delete_on(&nodes, 2, "q:lost").await;
    let refused = g.extend(Duration::from_secs(10)).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::NotOwned, "{refused}");
    assert!(g.is_lost());
    assert_eq!(holders(&nodes, "q:lost").await, 1);
    let err = g.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockLost, "{err}");
    assert_eq!(
        holders(&nodes, "q:lost").await,
        0,
        "left for the rest of its lease"
    );
    // Someone else's key is never touched by that clean-up.
    let other = client
        .lock("q:lost")
        .lease(Duration::from_secs(10))
        .acquire()
        .await
        .unwrap();
    assert_eq!(holders(&nodes, "q:lost").await, 3);
    assert!(g.release().await.is_err());
    assert!(other.owned().await.unwrap());
    other.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minority_key_written_late_is_deleted_by_the_release_after_the_loss() {
    // A user trial of stop 43 (Node): node 0 paused through the acquire (its SET queued), node
    // 1 paused until the hold was lost; on resume node 0 ran the SET, with a fresh lease,
    // after the loss was reported. The release after the loss deletes it.
    let nodes = servers(3);
    let urls: Vec<String> = nodes.iter().map(|s| s.url()).collect();
    let client = Client::quorum_builder(&urls)
        .watchdog_timeout(Duration::from_millis(3000))
        .network_timeout(Duration::from_millis(500))
        .connect()
        .await
        .unwrap();
    nodes[0].pause().unwrap();
    let guard = client.lock("q:late").acquire().await.unwrap();
    nodes[1].pause().unwrap();
    within(Duration::from_secs(10), guard.lost()).await;
    nodes[0].resume().unwrap();
    nodes[1].resume().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // the queued SET runs
    let e = guard.release().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LockLost, "{e}");
    assert_eq!(
        holders(&nodes, "q:late").await,
        0,
        "a node keeps the lost hold's key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_reaches_a_paused_node_behind_its_grant() {
    // A C trial of stop 49: node 1 paused through an acquire, a contender's failed wait, the
    // release, a second acquire and its release. Resumed at once, it ran the second grant
    // after that hold's release (both had waited for one new connection; the release went
    // first) and kept the key for the whole lease. Each release now goes behind its grant.
    let nodes = servers(3);
    let client = quorum_of(&nodes).await;
    let lease = Duration::from_secs(5);
    for run in 0..3 {
        let name = format!("q:behind:{run}");
        nodes[1].pause().unwrap();
        let first = client.lock(&name).lease(lease).acquire().await.unwrap();
        let contender = client.lock(&name).lease(lease).wait(Duration::from_secs(1));
        let e = contender.acquire().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotAcquired, "{e}");
        first.release().await.unwrap();
        let second = contender.acquire().await.unwrap();
        second.release().await.unwrap();
        nodes[1].resume().unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(holders(&nodes, &name).await, 0, "run {run}: a node keeps the key");
    }
}
