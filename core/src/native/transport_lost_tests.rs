//! A connection another call found dropped ends the calls still waiting on it, and no
//! undo follows its attempt onto it (see `connection.rs`); a reply timeout does neither.
//! Real redis-server processes, with the replies held back by a proxy where a call must stay
//! in flight.

use super::*;
use crate::error::ErrorKind;
use crate::protocol::request::Holder;
use redlatch_fleet::{HoldingProxy, RedisServer};
use std::time::Instant;

/// A transport to `server` through a proxy holding its replies back, connected, with a
/// network timeout long enough that a call waiting it out is told apart.
async fn held(server: &RedisServer) -> (HoldingProxy, Arc<RedisTransport>) {
    let proxy = HoldingProxy::start(server.port()).expect("proxy");
    let url = format!("redis://127.0.0.1:{}", proxy.port());
    let transport = Arc::new(RedisTransport::new(&url, Duration::from_secs(20)).unwrap());
    transport.ping().await.expect("ping");
    proxy.hold(true);
    (proxy, transport)
}

fn lease(token: &str) -> Holder {
    Holder::Lease {
        token: token.to_owned(),
    }
}

fn acquire() -> Request {
    lease("t1").acquire("lost-conn", 60_000, None, "", 1_000)
}

/// The undo of [`acquire`] (or of the same acquire with `token`).
fn undo_of(token: &str) -> Request {
    lease(token).abort("lost-conn", "", 60_000)
}

/// Starts an acquire on `transport`, waits until it is in flight, and hands back the
/// call and the connection it went out on.
async fn call_in_flight(transport: &Arc<RedisTransport>) -> (tokio::task::JoinHandle<Result<Reply>>, Live) {
    let live = transport.conn.existing().expect("connected");
    let t = transport.clone();
    let call = tokio::spawn(async move { t.eval(&acquire()).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!call.is_finished(), "the reply is held back, so the call waits");
    (call, live)
}

#[tokio::test]
async fn a_call_waiting_on_a_connection_another_call_found_dropped_ends_at_once() {
    let server = RedisServer::start().expect("redis-server");
    let (_proxy, transport) = held(&server).await;
    let (call, live) = call_in_flight(&transport).await;
    let started = Instant::now();
    let broken = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
    let reported = transport.failed(&live, &broken, None);
    assert_eq!(reported.kind(), ErrorKind::Connection);
    let result = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the waiting call ended before its 20 s reply timeout")
        .unwrap();
    let e = result.expect_err("its connection was lost");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.to_string().contains("lost"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_reply_timeout_on_one_call_leaves_the_others_waiting() {
    let server = RedisServer::start().expect("redis-server");
    let (proxy, transport) = held(&server).await;
    let (call, live) = call_in_flight(&transport).await;
    let timed_out = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
    transport.failed(&live, &timed_out, Some(&acquire()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!call.is_finished(), "a slow node is not a lost connection");
    proxy.hold(false);
    let reply = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the reply came once released")
        .unwrap();
    assert!(reply.is_ok(), "{reply:?}");
}

#[tokio::test]
async fn an_undo_does_not_follow_its_attempt_onto_a_connection_found_dropped() {
    let server = RedisServer::start().expect("redis-server");
    let transport = RedisTransport::new(&server.url(), Duration::from_secs(20)).unwrap();
    transport.ping().await.expect("ping");
    let first = transport.conn.existing().expect("connected");
    let timed_out = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
    transport.failed(&first, &timed_out, Some(&acquire()));
    let undo_goes_to = transport.conn.get_for(Some(&undo_of("t1"))).await.unwrap();
    assert_eq!(
        undo_goes_to.id, first.id,
        "after a timeout an undo follows its attempt"
    );
    let broken = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
    transport.failed(&first, &broken, None);
    let undo_goes_to = transport.conn.get_for(Some(&undo_of("t1"))).await.unwrap();
    assert_ne!(
        undo_goes_to.id, first.id,
        "a dropped connection delivers nothing more"
    );
}

/// Two attempts abandoned on two successive connections (the first one's suspicion made the
/// next call connect anew): each undo goes behind its own attempt, and the undo of an attempt
/// that was not abandoned takes the current connection. With one suspect per client, the
/// first attempt's undo went to the second connection, where it could run before its grant.
#[tokio::test]
async fn each_undo_follows_its_own_abandoned_attempt() {
    let server = RedisServer::start().expect("redis-server");
    let transport = RedisTransport::new(&server.url(), Duration::from_secs(20)).unwrap();
    transport.ping().await.expect("ping");
    let timed_out = || redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
    let attempt = |token: &str| lease(token).acquire("lost-conn", 60_000, None, "", 1_000);
    let first = transport.conn.existing().expect("connected");
    transport.failed(&first, &timed_out(), Some(&attempt("t1")));
    let second = transport.conn.get().await.unwrap();
    assert_ne!(second.id, first.id, "a suspect connection is replaced");
    transport.failed(&second, &timed_out(), Some(&attempt("t2")));
    let third = transport.conn.get().await.unwrap();
    assert!(third.id != first.id && third.id != second.id);

    let goes_to = |token: &'static str| {
        let t = &transport;
        async move { t.conn.get_for(Some(&undo_of(token))).await.unwrap().id }
    };
    assert_eq!(goes_to("t1").await, first.id, "the first attempt's undo");
    assert_eq!(goes_to("t2").await, second.id, "the second attempt's undo");
    assert_eq!(goes_to("t3").await, third.id, "an attempt never abandoned");
}

/// The subscriber's connection closed by the server while idle (`CLIENT KILL TYPE pubsub`):
/// the next SUBSCRIBE finds it dropped and is sent again on a new connection, and one alone on
/// a connection whose task just ended does not wait out its reply timeout (see
/// `connection.rs`); nor does the UNSUBSCRIBE of the round before, which holds the
/// subscriptions' lock. On the old code the SUBSCRIBE failed with a broken pipe (a waiter
/// then polls instead of being woken); without `unless_lost` on the UNSUBSCRIBE, a round now
/// and then waited its whole 20 s behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribe_after_the_server_closed_the_subscriber_connection_succeeds() {
    use crate::driver::Transport;
    let server = RedisServer::start().expect("redis-server");
    let transport = RedisTransport::new(&server.url(), Duration::from_secs(20)).unwrap();
    let mut admin = redis::Client::open(server.admin_url())
        .unwrap()
        .get_connection()
        .unwrap();
    // Channel names an ACL user of docs/deployments.md may subscribe to (`make test-acl`).
    let first = transport
        .subscribe("redisson_lock__channel:lost-sub")
        .await
        .expect("subscribe");
    drop(first);
    for round in 0..300 {
        let _: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("pubsub")
            .query(&mut admin)
            .unwrap();
        let channel = format!("redisson_lock__channel:lost-sub:{round}");
        let sub = tokio::time::timeout(Duration::from_secs(10), transport.subscribe(&channel))
            .await
            .unwrap_or_else(|_| panic!("round {round}: SUBSCRIBE waited past 10 s"));
        assert!(
            sub.as_ref().is_ok_and(Option::is_some),
            "round {round}: SUBSCRIBE after CLIENT KILL: {:?}",
            sub.err()
        );
    }
}
