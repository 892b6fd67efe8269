//! [`CountDownLatch`]: Redisson's `RCountDownLatch`.

use crate::client::Client;
use crate::driver::waiting::{self, Waiter};
use crate::driver::{Engine, CLOSED};
use crate::error::{Error, Result};
use crate::protocol::family::latch::{self, CountDownReply};
use crate::protocol::family::{keys as family_keys, validate_count, PUBLISH};
use crate::protocol::{keys, timing, token};
use futures::future::{select, Either};
use std::sync::Arc;
use std::time::Duration;

/// A count-down latch on key `name`, in Redisson 4.7's `RCountDownLatch` layout: a STRING
/// holding the count, and the channel `redisson_countdownlatch__channel__{name}`, on which `0`
/// opens the waiters (redlatch's and Redisson's `await`) and `1` says a new count was set.
/// Made by [`Client::count_down_latch`].
///
/// An opened latch is gone (its key is deleted at zero) until the next
/// [`try_set_count`](Self::try_set_count); [`count`](Self::count) is then 0 and
/// [`wait`](Self::wait) returns at once. Single-node, Cluster and Sentinel clients; a quorum
/// client is refused with `InvalidArgument`.
#[derive(Clone)]
pub struct CountDownLatch {
    engine: Arc<Engine>,
    name: String,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch")
            .field("name", &self.name)
            .finish()
    }
}

impl Client {
    /// A count-down latch on key `name` (Redisson `RCountDownLatch`; see [`CountDownLatch`]).
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let ready = client.count_down_latch("workers-ready");
    /// ready.try_set_count(3).await?;
    /// ready.count_down().await?; // each of 3 workers, anywhere
    /// let opened = ready.wait(Some(Duration::from_secs(30))).await?; // `false` if the 30 s ran out
    /// # let _ = opened;
    /// # Ok(()) }
    /// ```
    pub fn count_down_latch(&self, name: impl Into<String>) -> CountDownLatch {
        CountDownLatch {
            engine: self.engine.clone(),
            name: name.into(),
        }
    }
}

impl CountDownLatch {
    /// The latch's name (its Redis key).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> Result<()> {
        keys::validate_name(&self.name)?;
        waiting::single_node(&self.engine)
    }

    /// Sets the count if the latch is not set (Redisson `trySetCount`; publishes `1`).
    /// `Ok(false)` when a count is already set (left untouched).
    /// The transport's repeat of a request whose reply was lost answers what the first
    /// application answered (`true`), not "already set": each call leaves a short-lived latch
    /// `redlatch_acquire_latch:{name}:<id>` (a key Redisson never reads).
    ///
    /// # Errors
    /// `InvalidArgument` for a count of 0 or above `i32::MAX`, a bad name or a quorum client
    /// (nothing sent); `Connection`/`Redis`/`NoPermission`/`OutOfMemory` when Redis fails.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        self.check()?;
        validate_count("latch count", count)?;
        let request = latch::try_set_count_once(
            &self.name,
            count,
            PUBLISH,
            &token::new_token()?,
            self.engine.latch_ttl_ms(),
        )?;
        latch::decode_try_set(&waiting::call(&self.engine, &request).await?)
    }

    /// Counts down by one (Redisson `countDown`); at zero the latch opens (its key is deleted
    /// and `0` is published, waking every waiter). On a latch that is not set, nothing
    /// happens (as Redisson). The client's own retry of a request whose reply was lost gets
    /// the first answer back (latch key `redisson_unlock_latch:{name}:<id>`, short-lived), so
    /// one call counts down at most once.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name or a quorum client; `Redis` when Redis refuses it
    /// (nothing changed); `Connection` when Redis did not answer: the outcome is unknown (a
    /// stalled Redis may still apply it when it runs again), and calling again may count
    /// down twice (a C trial of stop 49 saw a count of 2 reach 0 so).
    pub async fn count_down(&self) -> Result<()> {
        self.check()?;
        let engine = &self.engine;
        let request =
            latch::count_down_once(&self.name, PUBLISH, &token::new_token()?, engine.latch_ttl_ms());
        match latch::decode_count_down(&waiting::call(engine, &request).await?)? {
            CountDownReply::Left(left) => tracing::debug!(latch = %self.name, left, "counted down"),
            CountDownReply::NotSet => {
                tracing::debug!(latch = %self.name, "count down of a latch that is not set")
            }
        }
        Ok(())
    }

    /// The count now (0 when not set or open).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name or a quorum client; `Connection`/`Redis` when Redis
    /// fails.
    pub async fn count(&self) -> Result<u64> {
        self.check()?;
        let reply = waiting::call(&self.engine, &latch::count(&self.name)).await?;
        Ok(latch::decode_count(&reply)?.max(0) as u64)
    }

    /// Waits until the count is zero (Redisson `await`): `Ok(true)` once it is (at once for
    /// a latch that is not set), `Ok(false)` when `timeout` ran out first (`None`: no limit;
    /// `Duration::ZERO`: one look). Woken by the `0` on the latch channel, with polling every
    /// poll interval as the fallback. Each wake-up reads the count again, so a latch that
    /// opens and is set again (`try_set_count`) before the waiter looks is not seen open, and
    /// the wait goes on (Redisson's `await` behaves the same; unlike `threading.Event.wait`).
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name, timeout or a quorum client; `Connection` when Redis
    /// keeps failing for the network timeout or the client was closed meanwhile;
    /// `Redis`/`NoPermission` at once.
    pub async fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        self.check()?;
        if let Some(t) = timeout {
            timing::to_millis("timeout", t, true)?;
        }
        let waiting = std::pin::pin!(self.wait_loop(timeout));
        let closed = std::pin::pin!(self.engine.registry.until_closed());
        match select(waiting, closed).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(Error::connection(CLOSED)),
        }
    }

    async fn wait_loop(&self, timeout: Option<Duration>) -> Result<bool> {
        let engine = &self.engine;
        let request = latch::count(&self.name);
        let mut waiter = Waiter::new(engine, family_keys::latch_channel(&self.name), timeout);
        loop {
            let started = waiter.attempt_starts();
            match waiting::call(engine, &request)
                .await
                .and_then(|r| latch::decode_count(&r))
            {
                Ok(count) if count <= 0 => return Ok(true),
                Ok(_) => {
                    if !waiter.not_yet(None).await {
                        return Ok(false);
                    }
                }
                Err(e) => waiter.failed(e, started).await?,
            }
        }
    }
}
