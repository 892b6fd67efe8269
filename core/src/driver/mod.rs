//! The I/O half: acquire, release, extend, watchdog and wait loops, written once over
//! [`Transport`] + [`Runtime`] and shared by the native (tokio + redis-rs) and wasm builds.
//!
//! Every decision is delegated to [`crate::protocol`]; this layer only sends requests, measures
//! time and sleeps.

mod acquire;
mod attempt;
pub(crate) mod cleanup;
mod connect_ping;
pub(crate) mod dropped;
mod grant;
mod hold;
mod line;
pub(crate) mod multi;
pub(crate) mod multi_release;
mod nodes;
pub(crate) mod owner;
mod registry;
mod release;
mod rollback;
pub(crate) mod signal;
#[cfg(all(test, feature = "native"))]
mod testing;
pub mod transport;
pub(crate) mod waiting;
mod waker;
mod watchdog;

pub(crate) use acquire::{acquire, LockSpec};
pub use connect_ping::ping_at_connect;
pub(crate) use hold::Hold;
pub(crate) use nodes::Nodes;
pub(crate) use registry::{OnClose, CLOSED};
pub(crate) use signal::End;
use signal::Validity;
#[cfg(not(target_arch = "wasm32"))]
pub use transport::process_clock;
pub(crate) use transport::random_unit;
pub use transport::{BoxFut, MaybeSend, Runtime, Subscription, Transport};
pub(crate) use watchdog::Watchdog;

use crate::protocol::request::Holder;
use crate::protocol::{quorum, timing, token};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Awaits `fut`, whose requests go out together (several members' releases), with
/// the calling thread's blocking I/O off (see `native::local_io::concurrently`): they share
/// one network timeout instead of taking one each, one after another.
pub(crate) async fn concurrently<F: std::future::Future>(fut: F) -> F::Output {
    #[cfg(feature = "native")]
    return crate::native::concurrently(fut).await;
    #[cfg(not(feature = "native"))]
    fut.await
}

/// A node's outcome in a quorum error when its answer was not awaited (the call ended first).
pub(crate) const NOT_AWAITED: &str = "no answer awaited: the call ended before it came";

/// Tunables shared by every lock of a client. All durations are wall durations measured on the
/// runtime's monotonic clock.
#[derive(Debug, Clone)]
pub struct Config {
    /// Lease of locks acquired without one; renewed every third of it. Default 30 s.
    pub watchdog_timeout: Duration,
    /// Timeout of one command on a single-node client, and how long consecutive errors are
    /// retried by a wait without an end before the error is returned (a wait with one
    /// retries them until it ends). Default 3 s.
    pub network_timeout: Duration,
    /// Per-node timeout in quorum mode; `None` = `min(lease / 20, 250 ms)`.
    pub node_timeout: Option<Duration>,
    /// Longest pause between two acquire attempts while waiting for a lease or fair lock, or
    /// without pub/sub. Default 50 ms. A waiter of a reentrant or read/write lock, a semaphore
    /// or a latch that hears every node's release messages waits for them (or the holder's
    /// lease) and polls at most every `max(poll_interval, 1 s)` (`timing::LISTENING_POLL`).
    pub poll_interval: Duration,
    /// After releasing a lock that had waiters, this client's own next acquire of it waits
    /// this long first, so a woken waiter (possibly in another process) can take it instead
    /// of losing the race to the releaser every time. `Duration::ZERO` disables. Default 2 ms.
    pub handoff_grace: Duration,
    /// Base of the full-jitter back-off after failed attempts. Default 10 ms.
    pub retry_base: Duration,
    /// Cap of that back-off. Default 250 ms.
    pub retry_cap: Duration,
}

impl Config {
    /// Checks the settings (every builder and `Client::from_transports` call it).
    ///
    /// # Errors
    /// `InvalidArgument` for a zero (hand-off grace and back-off: allowed) or too large
    /// duration (over 2^53 - 1 ms), or a watchdog timeout under 3 ms
    /// (it is renewed every third of it).
    pub fn validate(&self) -> crate::error::Result<()> {
        let wd = timing::to_millis("watchdog timeout", self.watchdog_timeout, false)?;
        if wd < 3 {
            return Err(crate::error::Error::invalid(
                "watchdog timeout must be at least 3 ms",
            ));
        }
        timing::to_millis("network timeout", self.network_timeout, false)?;
        timing::to_millis("poll interval", self.poll_interval, false)?;
        if let Some(t) = self.node_timeout {
            timing::to_millis("node timeout", t, false)?;
        }
        // Zero is allowed here (no grace; no back-off floor), too large is not: each is added
        // to the clock (a user trial of stop 37 found `handoff_grace` unchecked).
        timing::to_millis("hand-off grace", self.handoff_grace, true)?;
        timing::to_millis("retry base", self.retry_base, true)?;
        timing::to_millis("retry cap", self.retry_cap, true)?;
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            watchdog_timeout: timing::DEFAULT_WATCHDOG_TIMEOUT,
            network_timeout: timing::DEFAULT_NETWORK_TIMEOUT,
            node_timeout: None,
            poll_interval: timing::DEFAULT_POLL_INTERVAL,
            handoff_grace: Duration::from_millis(2),
            retry_base: Duration::from_millis(10),
            retry_cap: Duration::from_millis(250),
        }
    }
}

/// Everything a client shares with its locks, guards and watchdog.
pub(crate) struct Engine {
    pub(crate) nodes: Nodes,
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) config: Config,
    pub(crate) client_id: String,
    pub(crate) watchdog: Watchdog,
    /// The engine whose watchdog renews this one's holds, if not this one
    /// ([`Client::renew_through`](crate::Client::renew_through)).
    pub(crate) renewer: OnceLock<Arc<Engine>>,
    /// Lock name -> end of the hand-off grace after this client released it to a waiter.
    handoffs: Mutex<HashMap<String, Duration>>,
    /// The validity shared by the holds of each reentrant owner (see `signal.rs`).
    pub(crate) validities: Arc<owner::Validities>,
    /// Live holds and the closed state (see `registry.rs`).
    pub(crate) registry: registry::Registry,
    /// This client's waiters for each exclusive lock, in order (see `line.rs`).
    pub(crate) lines: Arc<line::Lines>,
    /// Background releases of dropped guards in flight (see `dropped.rs`).
    pub(crate) dropped: Arc<dropped::DroppedReleases>,
}

impl Engine {
    pub(crate) fn new(
        transports: Vec<Arc<dyn Transport>>,
        runtime: Arc<dyn Runtime>,
        config: Config,
    ) -> crate::error::Result<Arc<Self>> {
        let nodes = Nodes::new(transports, runtime.clone());
        let runtime: Arc<dyn Runtime> = Arc::new(KeepingRuntime {
            connections: nodes.keep().as_ref().map_or_else(Weak::new, Arc::downgrade),
            inner: runtime,
        });
        Ok(Arc::new(Engine {
            nodes,
            runtime,
            config,
            client_id: token::new_client_id()?,
            watchdog: Watchdog::default(),
            renewer: OnceLock::new(),
            handoffs: Mutex::default(),
            validities: Arc::default(),
            registry: registry::Registry::default(),
            lines: Arc::default(),
            dropped: Arc::default(),
        }))
    }

    pub(crate) fn is_quorum(&self) -> bool {
        self.nodes.len() > 1
    }

    pub(crate) fn majority(&self) -> usize {
        quorum::majority(self.nodes.len())
    }

    /// Timeout of one request to one node for a lock with `lease`.
    pub(crate) fn node_timeout(&self, lease: Duration) -> Duration {
        if self.is_quorum() {
            self.config
                .node_timeout
                .unwrap_or_else(|| timing::quorum_node_timeout(lease))
        } else {
            self.config.network_timeout
        }
    }

    /// How long the latch of a reentrant acquire lives: long enough for the retry after a
    /// lost reply inside one acquire call (two network timeouts), at least 1 s.
    pub(crate) fn latch_ttl_ms(&self) -> u64 {
        (self.config.network_timeout * 2)
            .max(Duration::from_secs(1))
            .as_millis() as u64
    }

    /// Whether the idempotency latch of a request first sent at `sent` (engine clock), which
    /// lives `latch_ttl` from when the request applied (no earlier than `sent`), is surely
    /// still there when the request, sent again now, reaches Redis: one sent now may leave up
    /// to a network timeout later (after a new connection's set-up, or queued behind a suspect
    /// connection while that set-up is held: `native/connection.rs`), and 50 ms are kept back
    /// for the trip. The one rule of every retry that a latch makes exact (lock and semaphore
    /// releases): past it, a retry could apply twice, or could not tell its own success from
    /// a loss. (Counted from the check alone, a semaphore re-send queued behind a set-up held
    /// by a slow node left after the latch had gone and gave the permits back twice.)
    pub(crate) fn latch_may_tell(&self, sent: Duration, latch_ttl: Duration) -> bool {
        let may_leave_within = self.config.network_timeout + Duration::from_millis(50);
        self.now().saturating_sub(sent) + may_leave_within < latch_ttl
    }

    /// How long the latch of a release of `holder`'s hold with `lease` lives.
    ///
    /// Reentrant: at least as long as an acquire's latch, and a whole lease, because a release
    /// whose outcome is unknown may be retried (by the caller, or in the background for a
    /// dropped guard) for as long as the hold could still be valid, and without its latch a
    /// retry could decrement a count twice (it is then refused instead).
    ///
    /// Lease: an acquire's latch (two network timeouts, at least 1 s), which covers the retry
    /// inside one call and a prompt retry by the caller. A lease release is safe to repeat
    /// whenever (compare-and-delete on the token); its latch only lets a retry tell "my first
    /// attempt released it" from "it was lost", and a later retry that finds the key gone says
    /// so instead. Kept short because every release writes one: a lease-long latch would hold
    /// rate x lease keys (300,000 at 10,000 releases/s in 30 s watchdog mode).
    pub(crate) fn release_latch_ttl_ms(&self, holder: &Holder, lease: Duration) -> u64 {
        match holder {
            Holder::Lease { .. } => self.latch_ttl_ms(),
            // Every kind that counts holds per owner.
            _ => self
                .latch_ttl_ms()
                .max(lease.as_millis().min(u128::from(timing::MAX_DURATION_MS)) as u64),
        }
    }

    /// Ends the watchdog and closes the connections once the background work still using
    /// them is done (`Client::close`, for this engine and its renewer).
    pub(crate) fn stop_renewing_and_disconnect(&self) {
        self.watchdog.close();
        self.nodes.close();
    }

    /// The engine that renews this one's watchdog-mode holds: its renewer, else itself.
    pub(crate) fn renewals(self: &Arc<Self>) -> &Arc<Engine> {
        self.renewer.get().unwrap_or(self)
    }

    /// A call through one of an owner's holds (a re-entry, an extend, a partial release) set
    /// the TTL of the hash that all the owner's holds share to `lease`, at `started`. Its
    /// watchdog-mode holds would renew only a third of the watchdog timeout after their last
    /// renewal, after a shorter lease ran out (a user trial: a watchdog hold expired after an
    /// inner re-entry with a 500 ms lease, and another client took the lock): they renew
    /// within a third of `lease` instead, as a watchdog hold's own extend does. One pass over
    /// the watchdog's holds: called for re-entries, extends and partial releases of the
    /// reentrant kinds only, not for first acquires.
    pub(crate) fn ttl_set_for_owner(
        self: &Arc<Self>,
        validity: &Arc<Validity>,
        lease: Duration,
        started: Duration,
    ) {
        let renewals = self.renewals();
        if lease < renewals.config.watchdog_timeout {
            renewals
                .watchdog
                .renew_sharing(validity, started + timing::renewal_period(lease));
        }
    }

    /// `now` on the runtime's monotonic clock.
    pub(crate) fn now(&self) -> Duration {
        self.runtime.now()
    }

    /// Waits before the next try of a background release that failed `failures` times: the
    /// client's back-off (`retry_base` .. `retry_cap`, jittered), at least `retry_base`.
    pub(crate) async fn pause_before_retry(&self, failures: u32) {
        let config = &self.config;
        let pause = timing::backoff(failures, config.retry_base, config.retry_cap, random_unit());
        self.runtime.sleep(pause.max(config.retry_base)).await;
    }

    fn handoffs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Duration>> {
        self.handoffs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that this client just handed lock `name` to a waiter.
    pub(crate) fn note_handoff(&self, name: &str) {
        if self.config.handoff_grace.is_zero() {
            return;
        }
        let now = self.now();
        let mut map = self.handoffs();
        map.retain(|_, until| *until > now);
        map.insert(name.to_owned(), now + self.config.handoff_grace);
    }

    /// How long this client should hold back before acquiring `name` again (hand-off grace).
    pub(crate) fn handoff_pause(&self, name: &str) -> Option<Duration> {
        let mut map = self.handoffs();
        if map.is_empty() {
            return None; // the usual case: no hashing of the name
        }
        let until = map.remove(name)?;
        until.checked_sub(self.now()).filter(|d| !d.is_zero())
    }

    /// Counts an acquire, release or rollback of `holder` on `name` as in flight while the
    /// returned value lives (holders whose holds share one validity only:
    /// [`Holder::shared_field`]; see `owner::Validities`).
    pub(crate) fn in_flight(&self, name: &str, holder: &Holder) -> Option<owner::InFlight> {
        holder
            .shared_field()
            .map(|field| self.validities.begin(name, &field))
    }
}

/// The runtime a client's engine spawns its background tasks with: each task keeps the
/// client's connections open while it runs (a release retried in the background, a
/// roll-back), also after `Client::close` gave up the client's own reference (see
/// [`Nodes`]). Long-lived tasks (the watchdog, permit renewals) end at `close`.
struct KeepingRuntime {
    inner: Arc<dyn Runtime>,
    connections: Weak<nodes::Connections>,
}

impl Runtime for KeepingRuntime {
    fn now(&self) -> Duration {
        self.inner.now()
    }

    fn sleep(&self, duration: Duration) -> BoxFut<'static, ()> {
        self.inner.sleep(duration)
    }

    fn spawn(&self, task: BoxFut<'static, ()>) {
        let keep = self.connections.upgrade();
        self.inner.spawn(Box::pin(async move {
            task.await;
            drop(keep);
        }));
    }

    fn wall_clock_ms(&self) -> u64 {
        self.inner.wall_clock_ms()
    }

    fn is_shut_down(&self) -> bool {
        self.inner.is_shut_down()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.watchdog.close();
    }
}
