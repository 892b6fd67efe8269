//! Unit tests of `nodes.rs` (in their own file to keep that one short), on real servers.

use super::*;
use crate::driver::testing::{self, cmd, raw, within, Faulty};
use crate::protocol::reply::AcquireReply;
use crate::protocol::request::Holder;

fn lease(token: &str) -> Holder {
    Holder::Lease {
        token: token.to_owned(),
    }
}

/// An unfenced lease acquire: `SET key token NX PX` in its plain form.
fn set_nx(key: &str, token: &str) -> Request {
    lease(token).acquire(key, 60_000, None, "", 1_000)
}

fn only(mut out: Vec<Option<(Result<Reply>, bool)>>) -> (Result<Reply>, bool) {
    out.remove(0).expect("the node was asked")
}

#[tokio::test]
async fn a_connection_error_is_retried_twice_at_most_as_the_script() {
    let s = testing::server();
    let config = testing::config();
    let faulty = Faulty::new(testing::transport(&s, &config));
    let engine = testing::engine_over(vec![faulty.clone()], config);
    let mut conn = raw(&s).await;
    let timeout = Duration::from_secs(5);

    faulty.fail_next(1);
    let request = set_nx("n:1", "t1");
    let (result, retried) =
        only(within(engine.nodes.broadcast_until(&request, timeout, &[], 1, |_| true)).await);
    assert!(retried, "the answer came from the retry");
    let reply = lease("t1").decode_acquire(&result.unwrap()).unwrap();
    assert!(matches!(reply, AcquireReply::Acquired { .. }), "{reply:?}");
    assert_eq!(faulty.evals(), 2);
    assert_eq!(
        *faulty.last_plain.lock().unwrap(),
        Some(false),
        "the retry is the script form (a repeated SET NX would find its own key busy)"
    );
    assert_eq!(
        cmd::<Option<String>>(&mut conn, &["GET", "n:1"]).await.as_deref(),
        Some("t1")
    );

    // Two broken connections in a row (a CLIENT KILL breaks the calling thread's and the
    // multiplexed one): the second retry gets through.
    faulty.fail_next(2);
    let (result, retried) = only(
        within(
            engine
                .nodes
                .broadcast_until(&set_nx("n:4", "t4"), timeout, &[], 1, |_| true),
        )
        .await,
    );
    assert!(retried);
    assert!(matches!(
        lease("t4").decode_acquire(&result.unwrap()).unwrap(),
        AcquireReply::Acquired { .. }
    ));
    assert_eq!(faulty.evals(), 5);

    faulty.fail_next(3);
    let (result, retried) = only(
        within(
            engine
                .nodes
                .broadcast_until(&set_nx("n:2", "t2"), timeout, &[], 1, |_| true),
        )
        .await,
    );
    let e = result.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection);
    assert!(e.message().starts_with(&format!("{}: ", s_label(&engine))), "{e}");
    assert!(retried);
    assert_eq!(faulty.evals(), 8, "two retries, not three");
    assert_eq!(cmd::<Option<String>>(&mut conn, &["GET", "n:2"]).await, None);

    // An error reply is Redis' answer: not retried.
    let _: () = cmd(&mut conn, &["SET", "n:3", "application data"]).await;
    let reentrant = Holder::Reentrant {
        owner: "c:1".to_owned(),
    };
    let request = reentrant.acquire("n:3", 60_000, None, "r1", 1_000);
    let e = within(engine.nodes.call(0, &request, timeout)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KeyConflict, "{e}");
    assert_eq!(faulty.evals(), 9);
}

fn s_label(engine: &crate::driver::Engine) -> String {
    engine.nodes.label(0).to_owned()
}

#[tokio::test]
async fn broadcast_until_returns_at_the_needed_answers_and_finishes_the_rest_in_the_background() {
    let (a, b) = (testing::server(), testing::server());
    let engine = testing::engine(&[&a, &b], testing::config()).await;
    let (mut conn_a, mut conn_b) = (raw(&a).await, raw(&b).await);
    b.pause().unwrap();
    let granted = |r: &Reply| matches!(lease("t").decode_acquire(r), Ok(AcquireReply::Acquired { .. }));

    // Needing one grant: the paused node is not awaited (its slot is empty, not a timeout).
    let out =
        within(
            engine
                .nodes
                .broadcast_until(&set_nx("q:1", "t"), Duration::from_secs(10), &[], 1, granted),
        )
        .await;
    assert!(out[0]
        .as_ref()
        .is_some_and(|(r, _)| r.as_ref().is_ok_and(granted)));
    assert!(out[1].is_none(), "not awaited");

    // Needing both: the paused node times out, named in the error.
    let out = within(engine.nodes.broadcast_until(
        &set_nx("q:2", "t"),
        Duration::from_millis(300),
        &[],
        2,
        granted,
    ))
    .await;
    let e = out[1].as_ref().unwrap().0.as_ref().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection);
    assert!(
        e.message().contains("no reply") && e.message().contains(engine.nodes.label(1)),
        "{e}"
    );

    // The request not awaited was still sent: it lands once the node runs again.
    b.resume().unwrap();
    let mut landed = None;
    for _ in 0..200 {
        landed = cmd::<Option<String>>(&mut conn_b, &["GET", "q:1"]).await;
        if landed.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(landed.as_deref(), Some("t"));

    // A skipped node is not asked at all.
    let out = within(engine.nodes.broadcast_until(
        &set_nx("q:3", "t"),
        Duration::from_secs(5),
        &[true, false],
        2,
        granted,
    ))
    .await;
    assert!(out[0].is_none() && out[1].is_some());
    assert_eq!(cmd::<Option<String>>(&mut conn_a, &["GET", "q:3"]).await, None);
    assert_eq!(
        cmd::<Option<String>>(&mut conn_b, &["GET", "q:3"])
            .await
            .as_deref(),
        Some("t")
    );
}
