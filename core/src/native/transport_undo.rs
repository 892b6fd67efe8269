//! The undo of an acquire attempt goes behind every abandoned try of that attempt: the driver
//! retries a timed-out try once on the multiplexed connection with the same mark (the same
//! token or request id), so an attempt whose first try waits on the calling thread's or the
//! event loop's connection may have a second one waiting on the multiplexed connection. Its
//! undo followed only the first, and the second's grant, applied later (a Redis paused past
//! the network timeout, with the script cached), stayed: a semaphore's permits for good (found
//! by a user trial of the sync Python client, stop 35). Each undo is safe to repeat: it gives
//! back only what its attempt's latch (or token) proves, and only once.

use super::Local;
use super::RedisTransport;
use crate::error::Result;
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use futures::future::{join, join_all};

impl RedisTransport {
    /// Sends `undo` behind its attempt's tries: on the calling thread's or the loop's
    /// connection ([`Self::eval_local`], [`Self::eval_on_loop`]) and, at the same time, on the
    /// multiplexed connection a try of it was abandoned on. `None` when it goes to none of
    /// them (the usual path then sends it). Answers with a reply that came, else an error.
    pub(super) async fn undo_behind_its_attempt(&self, undo: &Request) -> Option<Result<Reply>> {
        let calling_thread_or_loop = async {
            match self.eval_local(undo).await {
                Local::Done(reply) => Some(reply),
                Local::Elsewhere | Local::SetUpHeld => self.eval_on_loop(undo).await,
            }
        };
        // Behind every try abandoned on a multiplexed connection, not only the latest (an
        // acquire retried within its wait leaves one per timeout).
        let multiplexed = async {
            let suspects = self.conn.suspects_for(undo);
            let replies = join_all(suspects.iter().map(|live| async move {
                let mut conn = live.conn.clone();
                let reply = live.unless_lost(self.run(&mut conn, live, undo)).await;
                reply.map_err(|e| self.failed(live, &e, Some(undo)))
            }))
            .await;
            let mut replies = replies.into_iter();
            let first = replies.next()?;
            Some(replies.fold(first, |kept, next| if kept.is_ok() { kept } else { next }))
        };
        match join(calling_thread_or_loop, multiplexed).await {
            (Some(Ok(reply)), _) | (_, Some(Ok(reply))) => Some(Ok(reply)),
            (Some(Err(e)), _) => Some(Err(e)),
            (None, other) => other,
        }
    }
}
