//! The calling thread's part of [`RedisTransport`]: a blocking call's first poll sends its
//! requests on the calling thread's own connection (see `local_io`), and says where they go
//! when it cannot.

use super::local_io::{self, Sent};
use super::RedisTransport;
use crate::error::Result;
use crate::native::redis_calls::describe;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;

/// Where a request goes after the calling thread's try ([`RedisTransport::eval_local`]).
pub(super) enum Local {
    /// Sent from the calling thread (or followed its attempt): this is the call's outcome.
    Done(Result<Reply>),
    /// Not for the calling thread: the multiplexed connection (or the event loop's).
    Elsewhere,
    /// No calling-thread connection could be set up within half the call's time, the node
    /// holding it (paused, stalled): queued on a connection that exists, even a suspect one
    /// ([`Reconnecting::get_while_set_up_is_held`](super::connection::Reconnecting::get_while_set_up_is_held)).
    SetUpHeld,
}

impl RedisTransport {
    /// The request sent from the calling thread, when this is a blocking call's first poll
    /// on a single-node client (see `local_io`); `None` sends it on the multiplexed
    /// connection. The undo of an attempt that timed out there follows it onto its
    /// connection wherever it runs (off the calling thread on a blocking-pool thread, since
    /// it may wait a network timeout).
    pub(super) async fn eval_local(&self, request: &Request) -> Local {
        let Some(local) = self.local.as_ref() else {
            return Local::Elsewhere;
        };
        let follows_a_timeout = request.is_undo() && local.has_suspect_for(request);
        if !follows_a_timeout && !local_io::active() {
            return Local::Elsewhere; // checked first: the async path pays one thread-local read
        }
        if follows_a_timeout {
            // Whatever state the multiplexed connection is in (being replaced, since an
            // abandoned call there makes it suspect): the undo's place is behind its attempt.
            let sent = if local_io::active() {
                local.follow_up(request)
            } else {
                let (local, undo) = (local.clone(), request.clone());
                tokio::task::spawn_blocking(move || local.follow_up(&undo))
                    .await
                    .ok()
                    .flatten()
            };
            return match sent {
                Some(sent) => Local::Done(sent.map_err(|e| describe(&self.label, &e, &request.args))),
                None => Local::Elsewhere,
            };
        }
        let Some(live) = self.conn.existing() else {
            return Local::Elsewhere;
        };
        let node = live.node;
        if live.facts.ifeq {
            return Local::Elsewhere;
        }
        match local.send(request) {
            Sent::Reply(reply) => Local::Done(Ok(reply)),
            Sent::Failed { timed_out: true, .. } => {
                // The driver's timer cannot interrupt a blocking read; it was started before
                // this attempt and is due by now. As on the multiplexed connection, a reply
                // timeout ends the call by that timer, with no retry elsewhere: a retry on the
                // multiplexed connection could be granted (the same token) and released
                // before this attempt, still queued on the stalled connection, applied, and
                // leave its grant behind for a whole lease (seen in CI under load). Its undo
                // follows it onto that connection (`follow_up`); the rest of the call leaves
                // this thread.
                local_io::end_scope();
                std::future::pending().await
            }
            Sent::Failed { error, .. } => Local::Done(Err(describe(&node, &error, &request.args))),
            Sent::NoConnection => {
                local_io::end_scope();
                Local::SetUpHeld
            }
        }
    }
}
