//! Fan-out of one request to every node at once, each bounded by a timeout.
//!
//! Every request is retried after a connection error, at most twice, inside its timeout: Redis
//! closes idle connections (`timeout`), `CLIENT KILL` and restarts break them, and the client
//! library only notices on the next request, which then fails with "broken pipe" although
//! the server is fine. Twice, because one `CLIENT KILL` or restart breaks every connection at
//! once: a call sent on the calling thread's or event loop's connection (`local_io`,
//! `loop_io`) fails over to the multiplexed one, which may be just as dead and not know it yet
//! (stop 36: `async with` on a semaphore after `CLIENT KILL TYPE normal` raised "broken pipe"
//! although its release applied later in the background). Every request redlatch sends is safe to repeat: reads; the acquire as
//! its script form (idempotent by token, or by the reentrant acquire's latch); releases
//! (token-checked, or by the release latch); extends and renewals (`PEXPIRE`); aborts (token-
//! or latch-checked); force unlock (a repeat after an applied one reports "nothing deleted").

use super::registry::CLOSED;
use super::transport::{BoxFut, Runtime, Transport};
use crate::error::{Error, ErrorKind, NodeOutcome, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use futures::future::{join_all, select, Either};
use futures::stream::{FuturesUnordered, StreamExt};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// A client's transports, one per node: their connections close when the last reference
/// goes.
pub(crate) type Connections = Vec<Arc<dyn Transport>>;

/// The nodes of one client.
///
/// Why the connections are not simply owned: locks, guards and background tasks all share
/// the client's engine, and bindings keep their locks and guards until their garbage
/// collector runs, so "close when the last reference goes" kept a closed client's
/// connections open indefinitely. Instead the open client owns them (`open`), and every
/// call borrows them for its duration (`live`, weak). [`close`](Self::close) gives the
/// client's reference up: the connections close as soon as the calls and background tasks
/// still using them finish ([`keep`](Self::keep), taken by the engine's `spawn` and by each
/// acquire, covers the releases and roll-backs `Client::close` leaves running), and later
/// calls fail with `Connection` ("the client is closed").
pub(crate) struct Nodes {
    open: Mutex<Option<Arc<Connections>>>,
    live: Weak<Connections>,
    labels: Vec<String>,
    runtime: Arc<dyn Runtime>,
}

impl Nodes {
    pub(crate) fn new(transports: Connections, runtime: Arc<dyn Runtime>) -> Self {
        let labels = transports.iter().map(|t| t.label().to_owned()).collect();
        let open = Arc::new(transports);
        Nodes {
            live: Arc::downgrade(&open),
            open: Mutex::new(Some(open)),
            labels,
            runtime,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.labels.len()
    }

    /// The transports while they are open (empty after `close` once nothing uses them).
    pub(crate) fn transports(&self) -> Connections {
        self.keep().map(|c| c.to_vec()).unwrap_or_default()
    }

    pub(crate) fn label(&self, i: usize) -> &str {
        &self.labels[i]
    }

    /// A reference that keeps the connections open while it lives (`None` once they are
    /// closed): for work that must reach Redis after `close`, such as a roll-back.
    pub(crate) fn keep(&self) -> Option<Arc<Connections>> {
        self.live.upgrade()
    }

    /// The connections for a call: `Connection` once closed, and (permanent: nothing can
    /// run) once the client's runtime was shut down (see `TokioRuntime`).
    fn for_call(&self) -> Result<Arc<Connections>> {
        if self.runtime.is_shut_down() {
            return Err(Error::runtime_gone());
        }
        self.keep().ok_or_else(|| Error::connection(CLOSED))
    }

    /// Gives up the client's reference to the connections (`Client::close`): they close once
    /// the calls and tasks holding a [`keep`](Self::keep) are done.
    pub(crate) fn close(&self) {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(open);
    }

    /// Sends `request` to node `i`, giving up after `timeout`.
    pub(crate) async fn call(&self, i: usize, request: &Request, timeout: Duration) -> Result<Reply> {
        self.call_noting_retry(i, request, timeout).await.0
    }

    /// As [`call`](Self::call), and whether the answer came from a retry after a connection
    /// error (so an earlier try of the same request may have applied).
    pub(crate) async fn call_noting_retry(
        &self,
        i: usize,
        request: &Request,
        timeout: Duration,
    ) -> (Result<Reply>, bool) {
        let connections = match self.for_call() {
            Ok(connections) => connections,
            Err(e) => return (Err(e), false),
        };
        let sleep = self.runtime.sleep(timeout);
        call_once_more(&*connections[i], request, sleep, timeout).await
    }

    /// Sends `request` to every node concurrently; one result per node, in node order.
    pub(crate) async fn broadcast(&self, request: &Request, timeout: Duration) -> Vec<Result<Reply>> {
        if self.len() == 1 {
            return vec![self.call(0, request, timeout).await];
        }
        join_all((0..self.len()).map(|i| self.call(i, request, timeout))).await
    }

    /// Sends `request` to every node concurrently, except those `skip` marks (empty: none),
    /// and returns once `need` replies satisfy `good`, or every node answered. Nodes skipped
    /// or not awaited are `None`; the calls not awaited run on to completion in the
    /// background (a dropped redis-rs request may never be sent, and a grant or release must
    /// reach every node it can). The flag beside each result tells whether the answer came
    /// from the retry after a connection error.
    pub(crate) async fn broadcast_until(
        &self,
        request: &Request,
        timeout: Duration,
        skip: &[bool],
        need: usize,
        good: impl Fn(&Reply) -> bool,
    ) -> Vec<Option<(Result<Reply>, bool)>> {
        let skipped = |i: usize| skip.get(i).copied().unwrap_or(false);
        let connections = match self.for_call() {
            Ok(connections) => connections,
            Err(e) => {
                return (0..self.len())
                    .map(|i| (!skipped(i)).then(|| (Err(e.clone()), false)))
                    .collect()
            }
        };
        if connections.len() == 1 && !skipped(0) {
            let sleep = self.runtime.sleep(timeout);
            return vec![Some(
                call_once_more(&*connections[0], request, sleep, timeout).await,
            )];
        }
        let mut pending: FuturesUnordered<BoxFut<'static, (usize, Result<Reply>, bool)>> =
            FuturesUnordered::new();
        for (i, transport) in connections.iter().enumerate() {
            if skipped(i) {
                continue;
            }
            let (transport, request, sleep) =
                (transport.clone(), request.clone(), self.runtime.sleep(timeout));
            pending.push(Box::pin(async move {
                let (result, retried) = call_once_more(&*transport, &request, sleep, timeout).await;
                (i, result, retried)
            }));
        }
        let mut out: Vec<Option<(Result<Reply>, bool)>> = (0..self.len()).map(|_| None).collect();
        let mut good_count = 0;
        while let Some((i, result, retried)) = pending.next().await {
            if result.as_ref().is_ok_and(&good) {
                good_count += 1;
            }
            out[i] = Some((result, retried));
            if good_count >= need {
                break;
            }
        }
        if !pending.is_empty() {
            self.runtime
                .spawn(Box::pin(async move { while pending.next().await.is_some() {} }));
        }
        out
    }

    /// Sends `request` to the nodes in `which` concurrently (results in that order).
    pub(crate) async fn call_some(
        &self,
        which: &[usize],
        request: &Request,
        timeout: Duration,
    ) -> Vec<Result<Reply>> {
        join_all(which.iter().map(|&i| self.call(i, request, timeout))).await
    }

    /// Per-node outcomes for a quorum error: `Ok` where `granted(i)`, else the reason.
    pub(crate) fn outcomes(&self, reasons: Vec<Result<(), String>>) -> Vec<NodeOutcome> {
        reasons
            .into_iter()
            .enumerate()
            .map(|(i, result)| NodeOutcome {
                node: self.label(i).to_owned(),
                result,
            })
            .collect()
    }
}

/// Tries after a connection error, beyond the first (see the module docs).
const RETRIES: usize = 2;

/// One call bounded by `sleep`; a connection error is retried (at most [`RETRIES`] times)
/// inside the same bound, as the script form (a plain `SET NX` repeated after it applied
/// would find its own key and look refused; the script recognises its token). Returns the
/// result and whether it came from a retry.
async fn call_once_more(
    transport: &dyn Transport,
    request: &Request,
    sleep: BoxFut<'static, ()>,
    timeout: Duration,
) -> (Result<Reply>, bool) {
    let attempts = async {
        let mut result = transport.eval(request).await;
        let mut retries = 0;
        while retries < RETRIES {
            match &result {
                Err(e) if e.kind() == ErrorKind::Connection => {
                    tracing::debug!(node = transport.label(), error = %e, "retrying after a connection error");
                }
                _ => break,
            }
            retries += 1;
            let again = request.clone().script_only();
            result = transport.eval(&again).await;
        }
        (result, retries > 0)
    };
    match select(Box::pin(attempts), sleep).await {
        Either::Left(((result, retried), _)) => (labelled(transport.label(), result), retried),
        Either::Right(_) => {
            let error = match transport.stalled() {
                Some(why) => Error::connection(format!("{}: {why}", transport.label())),
                None => timed_out(transport, request, timeout),
            };
            (Err(error), false)
        }
    }
}

/// Prefixes an error with the node it came from.
fn labelled(label: &str, result: Result<Reply>) -> Result<Reply> {
    result.map_err(|e| e.prefixed(label))
}

fn timed_out(transport: &dyn Transport, request: &Request, timeout: Duration) -> Error {
    let at = transport
        .locate(request)
        .map(|at| format!(" ({at})"))
        .unwrap_or_default();
    Error::connection(format!(
        "{}: no reply to {}{at} within {} ms",
        transport.label(),
        request.script.name(),
        timeout.as_millis()
    ))
}

#[cfg(all(test, feature = "native"))]
mod tests {
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
        let out = within(engine.nodes.broadcast_until(
            &set_nx("q:1", "t"),
            Duration::from_secs(10),
            &[],
            1,
            granted,
        ))
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
}
