//! A quorum acquire whose undo of a failed attempt arrives late (its reply timed out while the
//! request still waited, as in a stalled connection) keeps its grant: the attempts after it
//! use ids of their own (a lease lock's token, a reentrant lock's request id), so that undo
//! takes back only what its own attempt took. Real servers; the late undo is the real
//! request, sent to the real node after a delay.

use crate::driver::acquire::acquire;
use crate::driver::acquire::LockSpec;
use crate::driver::hold::Hold;
use crate::driver::testing::{self, cmd, lease_spec, raw, rlock_spec, within};
use crate::driver::transport::{BoxFut, Subscription, Transport};
use crate::driver::Config;
use crate::driver::Engine;
use crate::error::Result;
use crate::native::RedisTransport;
use crate::protocol::reply::Reply;
use crate::protocol::request::{Holder, Request};
use redlatch_fleet::RedisServer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A real node's transport whose first undo of an acquire attempt ([`Request::is_undo`])
/// gets no reply, and reaches the node only after `delay` (beyond the network timeout).
struct LateUndo {
    inner: Arc<RedisTransport>,
    delay: Duration,
    delayed: AtomicBool,
    landed: Arc<AtomicBool>,
}

impl Transport for LateUndo {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        if request.is_undo() && !self.delayed.swap(true, Ordering::SeqCst) {
            let (inner, request, landed) = (self.inner.clone(), request.clone(), self.landed.clone());
            let delay = self.delay;
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                inner.eval(&request).await.expect("the late undo runs");
                landed.store(true, Ordering::SeqCst);
            });
            return Box::pin(std::future::pending());
        }
        self.inner.eval(request)
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        self.inner.subscribe(channel)
    }

    fn label(&self) -> &str {
        self.inner.label()
    }
}

/// Three real nodes, the third behind [`LateUndo`] with `delay` (its `landed` flag); the
/// network timeout is 500 ms, an acquire's latch lives 1 s.
async fn nodes(delay: Duration) -> (Vec<RedisServer>, Arc<Engine>, Arc<AtomicBool>) {
    let servers = vec![testing::server(), testing::server(), testing::server()];
    let config = Config {
        node_timeout: Some(Duration::from_millis(150)),
        ..testing::config()
    };
    let mut transports: Vec<Arc<dyn Transport>> = Vec::new();
    for s in &servers[..2] {
        let t = testing::transport(s, &config);
        t.ping().await.unwrap();
        transports.push(t);
    }
    let inner = testing::transport(&servers[2], &config);
    inner.ping().await.unwrap();
    let landed = Arc::new(AtomicBool::new(false));
    transports.push(Arc::new(LateUndo {
        inner,
        delay,
        delayed: AtomicBool::new(false),
        landed: landed.clone(),
    }));
    (servers, testing::engine_over(transports, config), landed)
}

/// Another owner holds nodes 0 and 1 (`take_other` on each), so the first attempt at `spec`
/// is granted by node 2 only and its undo there is the late one; node 1 frees up
/// (`free_other`) while node 2 is still being cleaned up, node 0 stays held, so from then on
/// a grant needs node 2. Returns the hold once the late undo has landed.
async fn acquire_past_a_late_undo(
    servers: &[RedisServer],
    engine: &Arc<Engine>,
    landed: &AtomicBool,
    spec: LockSpec,
    take_other: &[&str],
    free_other: &[&str],
) -> Hold {
    let mut conns = Vec::new();
    for s in servers {
        conns.push(raw(s).await);
    }
    for conn in &mut conns[..2] {
        let _: redis::Value = cmd(conn, take_other).await;
        let _: i64 = cmd(conn, &["PEXPIRE", &spec.name, "60000"]).await;
    }
    let acquiring = {
        let engine = engine.clone();
        tokio::spawn(async move { acquire(&engine, &spec, Some(Duration::from_secs(10))).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _: i64 = cmd(&mut conns[1], free_other).await;
    let hold = within(acquiring)
        .await
        .unwrap()
        .expect("acquired once nodes 1 and 2 grant");
    within(async {
        while !landed.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    hold
}

#[tokio::test]
async fn a_late_undo_of_a_failed_attempt_leaves_the_next_attempts_grant() {
    let (servers, engine, landed) = nodes(Duration::from_millis(1_500)).await;
    let spec = lease_spec("lu:1", Some(Duration::from_secs(60)));
    let hold = acquire_past_a_late_undo(
        &servers,
        &engine,
        &landed,
        spec,
        &["SET", "lu:1", "another owner"],
        &["DEL", "lu:1"],
    )
    .await;
    let Holder::Lease { token } = &hold.holder else {
        panic!("a lease lock: {:?}", hold.holder);
    };
    let mut holding = 0;
    for s in &servers {
        if cmd::<Option<String>>(&mut raw(s).await, &["GET", "lu:1"])
            .await
            .as_ref()
            == Some(token)
        {
            holding += 1;
        }
    }
    assert!(
        holding >= 2,
        "the hold's token must stay on a majority after the late undo; it is on {holding} of 3"
    );
    hold.release().await.expect("released by a majority");
}

#[tokio::test]
async fn a_late_undo_of_a_failed_reentrant_attempt_leaves_the_next_attempts_count() {
    // The late undo lands after its call timed out (500 ms: the node is asked again) and
    // while the first attempt's latch still lives (1 s): with that attempt's request id, the
    // next attempt would be a replay of it there, and the undo would take its count back.
    let (servers, engine, landed) = nodes(Duration::from_millis(800)).await;
    let spec = rlock_spec(&engine, "lu:2", 1, Some(Duration::from_secs(60)));
    let field = spec.owner.clone().expect("a reentrant owner");
    let hold = acquire_past_a_late_undo(
        &servers,
        &engine,
        &landed,
        spec,
        &["HSET", "lu:2", "another:1", "1"],
        &["DEL", "lu:2"],
    )
    .await;
    let mut holding = 0;
    for s in &servers {
        let count = cmd::<Option<i64>>(&mut raw(s).await, &["HGET", "lu:2", &field]).await;
        if count.is_some_and(|c| c >= 1) {
            holding += 1;
        }
    }
    assert!(
        holding >= 2,
        "the owner's count must stay on a majority after the late undo; it is on {holding} of 3"
    );
    hold.release().await.expect("released by a majority");
}
