//! Fan-out of one request to every node at once, each bounded by a timeout.

use super::transport::{BoxFut, Runtime, Transport};
use crate::error::{Error, ErrorKind, NodeOutcome, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use futures::future::{join_all, select, Either};
use futures::stream::{FuturesUnordered, StreamExt};
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Nodes {
    transports: Vec<Arc<dyn Transport>>,
    runtime: Arc<dyn Runtime>,
}

impl Nodes {
    pub(crate) fn new(transports: Vec<Arc<dyn Transport>>, runtime: Arc<dyn Runtime>) -> Self {
        Nodes { transports, runtime }
    }

    pub(crate) fn len(&self) -> usize {
        self.transports.len()
    }

    pub(crate) fn transports(&self) -> &[Arc<dyn Transport>] {
        &self.transports
    }

    pub(crate) fn label(&self, i: usize) -> &str {
        self.transports[i].label()
    }

    /// Sends `request` to node `i`, giving up after `timeout`.
    pub(crate) async fn call(&self, i: usize, request: &Request, timeout: Duration) -> Result<Reply> {
        let transport = &self.transports[i];
        let reply = transport.eval(request);
        match select(reply, self.runtime.sleep(timeout)).await {
            Either::Left((result, _)) => {
                result.map_err(|e| Error::new(e.kind(), format!("{}: {}", transport.label(), e.message())))
            }
            Either::Right(_) => Err(Error::connection(format!(
                "{}: no reply to {} within {} ms",
                transport.label(),
                request.script.name(),
                timeout.as_millis()
            ))),
        }
    }

    /// Like [`Self::call`], but a connection error (a killed connection, a reconnect in
    /// progress) is retried once within the same `timeout`. Only for requests that are safe
    /// to repeat. The flag tells whether the answer came from the retry.
    pub(crate) async fn call_retrying(
        &self,
        i: usize,
        request: &Request,
        timeout: Duration,
    ) -> (Result<Reply>, bool) {
        let transport = &self.transports[i];
        let attempts = async {
            match transport.eval(request).await {
                Err(e) if e.kind() == ErrorKind::Connection => {
                    tracing::debug!(node = transport.label(), error = %e, "retrying once after a connection error");
                    (transport.eval(request).await, true)
                }
                other => (other, false),
            }
        };
        match select(Box::pin(attempts), self.runtime.sleep(timeout)).await {
            Either::Left(((result, retried), _)) => (
                result.map_err(|e| Error::new(e.kind(), format!("{}: {}", transport.label(), e.message()))),
                retried,
            ),
            Either::Right(_) => (
                Err(Error::connection(format!(
                    "{}: no reply to {} within {} ms",
                    transport.label(),
                    request.script.name(),
                    timeout.as_millis()
                ))),
                false,
            ),
        }
    }

    /// [`Self::call_retrying`] on every node concurrently, in node order.
    pub(crate) async fn broadcast_retrying(
        &self,
        request: &Request,
        timeout: Duration,
    ) -> Vec<(Result<Reply>, bool)> {
        if self.transports.len() == 1 {
            return vec![self.call_retrying(0, request, timeout).await];
        }
        join_all((0..self.transports.len()).map(|i| self.call_retrying(i, request, timeout))).await
    }

    /// Sends `request` to every node concurrently; one result per node, in node order.
    pub(crate) async fn broadcast(&self, request: &Request, timeout: Duration) -> Vec<Result<Reply>> {
        if self.transports.len() == 1 {
            return vec![self.call(0, request, timeout).await];
        }
        join_all((0..self.transports.len()).map(|i| self.call(i, request, timeout))).await
    }

    /// Sends `request` to every node concurrently and returns once `need` replies satisfy
    /// `good`, or all nodes answered. Nodes not awaited are `None`; their calls run on to
    /// completion in the background (a dropped redis-rs request may never be sent, and a
    /// grant must reach every node it can).
    pub(crate) async fn broadcast_until(
        &self,
        request: &Request,
        timeout: Duration,
        need: usize,
        good: impl Fn(&Reply) -> bool,
    ) -> Vec<Option<Result<Reply>>> {
        if self.transports.len() == 1 {
            return vec![Some(self.call(0, request, timeout).await)];
        }
        let mut pending: FuturesUnordered<BoxFut<'static, (usize, Result<Reply>)>> = FuturesUnordered::new();
        for (i, transport) in self.transports.iter().enumerate() {
            let (transport, request, sleep) =
                (transport.clone(), request.clone(), self.runtime.sleep(timeout));
            pending.push(Box::pin(async move {
                let result = match select(transport.eval(&request), sleep).await {
                    Either::Left((result, _)) => result
                        .map_err(|e| Error::new(e.kind(), format!("{}: {}", transport.label(), e.message()))),
                    Either::Right(_) => Err(Error::connection(format!(
                        "{}: no reply to {} within {} ms",
                        transport.label(),
                        request.script.name(),
                        timeout.as_millis()
                    ))),
                };
                (i, result)
            }));
        }
        let mut out: Vec<Option<Result<Reply>>> = (0..self.transports.len()).map(|_| None).collect();
        let mut good_count = 0;
        while let Some((i, result)) = pending.next().await {
            if result.as_ref().is_ok_and(&good) {
                good_count += 1;
            }
            out[i] = Some(result);
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
