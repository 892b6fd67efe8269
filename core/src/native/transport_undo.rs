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
        let multiplexed = self.on_each(self.conn.suspects_for(undo), undo);
        match join(calling_thread_or_loop, multiplexed).await {
            (Some(Ok(reply)), _) | (_, Some(Ok(reply))) => Some(Ok(reply)),
            (Some(Err(e)), _) => Some(Err(e)),
            (None, other) => other,
        }
    }

    /// Sends a lease release behind every try of its grant that is in flight or was abandoned
    /// on a multiplexed connection that still lingers, and only there: sent elsewhere, it could
    /// run first and the late grant then stay (`Request::follows_its_grant`). `None` when
    /// there is no such try (the usual path sends it).
    pub(super) async fn release_behind_its_grant(&self, release: &Request) -> Option<Result<Reply>> {
        let mut lives = self.conn.suspects_for(release);
        for live in self.conn.grant_tries_of(release).await {
            if !lives.iter().any(|l| l.id == live.id) {
                lives.push(live);
            }
        }
        self.on_each(lives, release).await
    }

    /// Sends `request` on each of `suspects` (connections a try of its attempt went on); a
    /// reply that came, else an error; `None` when there is none.
    async fn on_each(&self, suspects: Vec<super::Live>, request: &Request) -> Option<Result<Reply>> {
        let replies = join_all(suspects.iter().map(|live| async move {
            let mut conn = live.conn.clone();
            let reply = live.unless_lost(self.run(&mut conn, live, request)).await;
            reply.map_err(|e| self.failed(live, &e, Some(request)))
        }))
        .await;
        let mut replies = replies.into_iter();
        let first = replies.next()?;
        Some(replies.fold(first, |kept, next| if kept.is_ok() { kept } else { next }))
    }
}
