//! A quorum acquire whose undo of a failed attempt arrives late (its reply timed out while the
//! request still waited, as in a stalled connection) keeps its grant: the attempts after it
//! use a token of their own, so that undo deletes only what its own attempt took. Real
//! servers; the late undo is the real request, sent to the real node after a delay.

use crate::driver::acquire::acquire;
use crate::driver::testing::{self, cmd, lease_spec, raw, within};
use crate::driver::transport::{BoxFut, Subscription, Transport};
use crate::driver::Config;
use crate::error::Result;
use crate::native::RedisTransport;
use crate::protocol::reply::Reply;
use crate::protocol::request::{Holder, Request};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the first undo waits before it reaches its node (beyond the network timeout).
const UNDO_DELAY: Duration = Duration::from_millis(1_500);

/// A real node's transport whose first undo of an acquire attempt ([`Request::is_undo`]) gets no reply, and reaches the node only after [`UNDO_DELAY`].
struct LateUndo {
    inner: Arc<RedisTransport>,
    delayed: AtomicBool,
    landed: Arc<AtomicBool>,
}

impl Transport for LateUndo {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        if request.is_undo() && !self.delayed.swap(true, Ordering::SeqCst) {
            let (inner, request, landed) = (self.inner.clone(), request.clone(), self.landed.clone());
            tokio::spawn(async move {
                tokio::time::sleep(UNDO_DELAY).await;
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

#[tokio::test]
async fn a_late_undo_of_a_failed_attempt_leaves_the_next_attempts_grant() {
    let servers = [testing::server(), testing::server(), testing::server()];
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
        delayed: AtomicBool::new(false),
        landed: landed.clone(),
    }));
    let engine = testing::engine_over(transports, config);
    let mut conns = Vec::new();
    for s in &servers {
        conns.push(raw(s).await);
    }
    // Another owner holds nodes 0 and 1: the first attempt is granted by node 2 only, and
    // its undo there is the late one.
    for conn in &mut conns[..2] {
        let _: () = cmd(conn, &["SET", "lu:1", "another owner", "PX", "60000"]).await;
    }
    let spec = lease_spec("lu:1", Some(Duration::from_secs(60)));
    let acquiring = {
        let engine = engine.clone();
        tokio::spawn(async move { acquire(&engine, &spec, Some(Duration::from_secs(10))).await })
    };
    // Node 1 frees up while node 2 is still being cleaned up; node 0 stays held, so from
    // now on a grant needs node 2.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _: i64 = cmd(&mut conns[1], &["DEL", "lu:1"]).await;
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
    let Holder::Lease { token } = &hold.holder else {
        panic!("a lease lock: {:?}", hold.holder);
    };
    let mut holding = 0;
    for conn in &mut conns {
        if cmd::<Option<String>>(conn, &["GET", "lu:1"]).await.as_ref() == Some(token) {
            holding += 1;
        }
    }
    assert!(
        holding >= 2,
        "the hold's token must stay on a majority after the late undo; it is on {holding} of 3"
    );
    hold.release().await.expect("released by a majority");
}
