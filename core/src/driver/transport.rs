//! The seams between the driver and the outside world: a [`Transport`] per Redis node, and a
//! [`Runtime`] for time, sleeping and background tasks.
//!
//! Native builds implement them with redis-rs and tokio (`crate::native`); the wasm binding
//! implements them with a host-supplied JS `eval` function and JS timers. Futures must be
//! `Send` off wasm32 (tokio's multi-thread scheduler) and need not be on wasm32 (JS promises
//! are not `Send`).

use crate::error::{Error, Result};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// `Send + Sync` off wasm32, nothing on wasm32.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSend: Send + Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + Sync + ?Sized> MaybeSend for T {}

/// `Send + Sync` off wasm32, nothing on wasm32.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSend {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSend for T {}

/// A boxed future, `Send` off wasm32.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future, `Send` off wasm32.
#[cfg(target_arch = "wasm32")]
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One Redis node.
pub trait Transport: MaybeSend + 'static {
    /// Runs `request.script` with its keys and arguments (EVALSHA, falling back to EVAL or
    /// SCRIPT LOAD on `NOSCRIPT`). Connection problems are `ErrorKind::Connection`, error
    /// replies `ErrorKind::Redis`. The driver applies its own timeout around this call.
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>>;

    /// Subscribes to `channel` for wake-ups. `Ok(None)` means this transport has no pub/sub;
    /// waiters then poll. The returned subscription is confirmed by the server.
    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>>;

    /// The node's address for messages, without credentials (e.g. `127.0.0.1:6379`).
    fn label(&self) -> &str;

    /// `true` for a Redis Cluster transport, where one script may only touch keys of one hash
    /// slot (the multi-lock then takes members of different slots one by one). Default `false`.
    fn is_cluster(&self) -> bool {
        false
    }

    /// Why a call that got no reply within the driver's timeout got none, when the transport
    /// knows better than "no reply" (a TLS connection still waiting for the server's side of
    /// the handshake: a plain-text port). Default `None`.
    fn stalled(&self) -> Option<String> {
        None
    }

    /// A refusal of this node for its configuration that stands (it reached the server of
    /// another node of its quorum: `QuorumServers`): every quorum call then refuses at once
    /// with it, as `connect` refuses such a quorum. Default `None`.
    fn refused(&self) -> Option<Error> {
        None
    }

    /// Where `request` went, for a message about it, when the label alone does not say (a
    /// Cluster: `sent to the node serving key slot 1234`). Default `None`.
    fn locate(&self, _request: &Request) -> Option<String> {
        None
    }

    /// Reports a deployment warning about this node: `kind` is stable for matching (see
    /// `Warning::kind`), `message` the full text without credentials. Native transports hand
    /// it to the client's warning handler once per node and kind (`ClientBuilder::on_warning`,
    /// which the bindings turn into their language's warning). Default: a `tracing` event only.
    fn warn(&self, kind: &'static str, message: String) {
        tracing::warn!(kind, node = self.label(), "{message}");
    }
}

/// A live subscription to one unlock channel. Dropping it unsubscribes (when it was the last).
pub trait Subscription: MaybeSend {
    /// Called before each attempt: forget wake-ups this waiter already acted on (transports
    /// whose wake-ups are consumed by [`Self::changed`] may do nothing).
    fn mark_seen(&mut self);
    /// Resolves when this waiter should try again: a release was published (possibly while
    /// it was busy with an attempt, then at once), or the subscription connection was
    /// interrupted (messages may have been missed).
    fn changed(&mut self) -> BoxFut<'_, ()>;
}

/// Monotonic time since this process first read it: the clock of the native runtimes
/// ([`TokioRuntime`](crate::TokioRuntime), the Node addon's local one). One origin for every
/// runtime of the process, so a client whose renewals run on another runtime
/// ([`Client::renew_through`](crate::Client::renew_through)) compares its holds' deadlines
/// on one clock. Never goes backwards; wall-clock jumps do not affect it.
#[cfg(not(target_arch = "wasm32"))]
pub fn process_clock() -> Duration {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(std::time::Instant::now).elapsed()
}

/// Time, sleeping and background tasks.
pub trait Runtime: MaybeSend + 'static {
    /// Monotonic time since an arbitrary origin. Never goes backwards; wall-clock jumps do not
    /// affect it. Native runtimes use [`process_clock`].
    fn now(&self) -> Duration;
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> BoxFut<'static, ()>;
    /// Runs `task` in the background (the watchdog, releases of dropped guards).
    fn spawn(&self, task: BoxFut<'static, ()>);

    /// `true` once the runtime is gone for good (a tokio runtime that was shut down): calls
    /// then fail at once with a permanent `Connection` error instead of using it. Default:
    /// never.
    fn is_shut_down(&self) -> bool {
        false
    }

    /// Wall-clock time in ms since the Unix epoch. Fair locks store their waiters' deadlines
    /// as absolute wall-clock times, because Redisson does (`System.currentTimeMillis()`).
    /// Default: the system clock (0 if it reads before 1970).
    #[cfg(not(target_arch = "wasm32"))]
    fn wall_clock_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    /// Wall-clock time in ms since the Unix epoch (the host's `Date.now()`): fair locks store
    /// their waiters' deadlines as absolute wall-clock times, because Redisson does. wasm32
    /// has no system clock of its own, so the runtime must provide it.
    #[cfg(target_arch = "wasm32")]
    fn wall_clock_ms(&self) -> u64;
}

/// A random number in `[0, 1)` from the OS CSPRNG (jitter only; 0.5 if the source fails).
pub(crate) fn random_unit() -> f64 {
    match getrandom::u64() {
        Ok(v) => (v >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use super::*;
    use crate::native::TokioRuntime;

    #[test]
    fn jitter_is_uniform_in_the_unit_interval() {
        let samples: Vec<f64> = (0..2_000).map(|_| random_unit()).collect();
        assert!(samples.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        // The mean of 2,000 uniform draws is within 0.05 of 0.5 but for odds of about 1e-12;
        // a constant (the 0.5 fallback) or a skewed source fails the spread check below.
        assert!((mean - 0.5).abs() < 0.05, "mean {mean}");
        let (lo, hi) = samples
            .iter()
            .fold((1.0f64, 0.0f64), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        assert!(lo < 0.01 && hi > 0.99, "spread {lo}..{hi}");
    }

    #[tokio::test]
    async fn the_default_wall_clock_is_the_system_clock_in_ms() {
        let rt = TokioRuntime::current();
        let system = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let wall = rt.wall_clock_ms();
        assert!(wall.abs_diff(system) < 60_000, "{wall} vs {system}");
        let before = rt.now();
        rt.sleep(Duration::from_millis(5)).await;
        assert!(
            rt.now() >= before + Duration::from_millis(5),
            "monotonic and past the sleep"
        );
    }
}
