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
use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Poll;
use std::time::Duration;

/// A client's transports, one per node: their connections close when the last reference
/// goes.
pub(crate) type Connections = Vec<Arc<dyn Transport>>;

/// What to do with a node's error that comes after a broadcast returned (see
/// [`Nodes::broadcast_until_then`]).
pub(crate) type LateError = fn(&dyn Transport, &Error);

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
    /// `false` until the first broadcast of a lazily connected quorum (see
    /// [`connect_lazily`](Self::connect_lazily)).
    verified: AtomicBool,
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
            verified: AtomicBool::new(true),
        }
    }

    /// These nodes were not connected before the first call (a lazily built client): its
    /// first broadcast waits for every node's answer, not only a majority's, so a node that
    /// its connection finds to be another node's server (`Transport::refused`) refuses that
    /// call, as `connect` refuses such a quorum, instead of being noticed only later.
    #[cfg(feature = "native")]
    pub(crate) fn connect_lazily(&self) {
        self.verified.store(false, Ordering::Release);
    }

    /// The first refusal for its configuration that stands among a quorum's nodes, with its
    /// node's index (see `Transport::refused`); `None` for a single node.
    pub(crate) fn refusal(&self) -> Option<Error> {
        if self.len() < 2 {
            return None;
        }
        self.keep()?.iter().find_map(|t| t.refused())
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

    /// Reports a deployment warning about node `i` through its transport (see
    /// `Transport::warn`); a `tracing` event only once the connections are closed.
    pub(crate) fn warn(&self, i: usize, kind: &'static str, message: String) {
        match self.keep() {
            Some(transports) => transports[i].warn(kind, message),
            None => tracing::warn!(kind, node = self.label(i), "{message}"),
        }
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
        let connections = self.for_call()?;
        call_once_more(&*connections[i], request, &*self.runtime, timeout)
            .await
            .0
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
        self.broadcast_until_then(request, timeout, skip, need, good, None)
            .await
    }

    /// [`broadcast_until`](Self::broadcast_until), calling `late` with each error that comes
    /// after it returned (from the calls it left running), with the node's transport: how a
    /// release reports a node it did not reach although a majority confirmed it.
    pub(crate) async fn broadcast_until_then(
        &self,
        request: &Request,
        timeout: Duration,
        skip: &[bool],
        need: usize,
        good: impl Fn(&Reply) -> bool,
        late: Option<LateError>,
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
            return vec![Some(
                call_once_more(&*connections[0], request, &*self.runtime, timeout).await,
            )];
        }
        let mut pending: FuturesUnordered<BoxFut<'static, (usize, Result<Reply>, bool)>> =
            FuturesUnordered::new();
        for (i, transport) in connections.iter().enumerate() {
            if skipped(i) {
                continue;
            }
            let (transport, request, runtime) = (transport.clone(), request.clone(), self.runtime.clone());
            pending.push(Box::pin(async move {
                let (result, retried) = call_once_more(&*transport, &request, &*runtime, timeout).await;
                (i, result, retried)
            }));
        }
        let mut out: Vec<Option<(Result<Reply>, bool)>> = (0..self.len()).map(|_| None).collect();
        let mut good_count = 0;
        // A lazily connected quorum's first call hears every node (see `connect_lazily`).
        // Read first: the swap (a write on every quorum call) only once, for the first call.
        let first = !self.verified.load(Ordering::Acquire) && !self.verified.swap(true, Ordering::AcqRel);
        let need = if first { usize::MAX } else { need };
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
            self.runtime.spawn(Box::pin(async move {
                while let Some((i, result, _)) = pending.next().await {
                    if let (Some(late), Err(e)) = (late, &result) {
                        late(&*connections[i], e);
                    }
                }
            }));
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

    /// Sends the undo `request` of an attempt of lock `name` to the nodes in `which` (each
    /// bounded by the network timeout) and logs each node where it failed: the grant there
    /// then expires with its lease. `what` names the attempt in the log ("an acquire
    /// attempt", "a multi-lock attempt").
    pub(crate) async fn undo_or_warn(
        &self,
        which: &[usize],
        request: &Request,
        timeout: Duration,
        name: &str,
        what: &str,
    ) {
        let replies = self.call_some(which, request, timeout).await;
        for (&i, reply) in which.iter().zip(replies) {
            if let Err(e) = reply {
                tracing::warn!(lock = %name, node = self.label(i), error = %e, "undoing {what} failed; its grant expires with the lease");
            }
        }
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

/// One call bounded by `timeout`; a connection error is retried (at most [`RETRIES`] times)
/// inside the same bound, as the script form (a plain `SET NX` repeated after it applied
/// would find its own key and look refused; the script recognises its token). Returns the
/// result and whether it came from a retry.
async fn call_once_more(
    transport: &dyn Transport,
    request: &Request,
    runtime: &dyn Runtime,
    timeout: Duration,
) -> (Result<Reply>, bool) {
    let started = runtime.now();
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
    let mut attempts = std::pin::pin!(attempts);
    // The timer is armed only when the reply is not there at the first poll (a calling
    // thread's own blocking I/O has it there, and needs none), and the call is polled once
    // per wake-up (a select would poll it again at once after arming).
    let mut timer: Option<BoxFut<'static, ()>> = None;
    let outcome = futures::future::poll_fn(|cx| {
        if let Poll::Ready(done) = attempts.as_mut().poll(cx) {
            return Poll::Ready(Some(done));
        }
        let timer =
            timer.get_or_insert_with(|| runtime.sleep(timeout.saturating_sub(runtime.now() - started)));
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await;
    match outcome {
        Some((result, retried)) => (labelled(transport.label(), result), retried),
        None => {
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
    // The script's name says which step went unanswered (`semaphore_set`, `rlock_release`);
    // "redlatch's ... script" tells a user it is no command of theirs (a user trial of stop 45
    // read "no reply to semaphore_set" as a name to look up).
    Error::connection(format!(
        "{}: no reply to redlatch's {} script{at} within {} ms",
        transport.label(),
        request.script.name(),
        timeout.as_millis()
    ))
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/nodes.rs"]
mod tests;
