//! Option objects and millisecond arguments, checked before anything reaches Redis.
//!
//! JavaScript numbers are doubles, so every duration is checked here: finite, an integer, in
//! `0 / 1 ..= 2^53 - 1` ms (shared/API.md "Durations"). "Forever" (a wait of `Infinity` or no
//! wait) is `null` by the time it gets here: the facade maps it.

use crate::deployment::{Deployment, TlsOptions};
use crate::error::invalid;
use napi_derive::napi;
use redlatch::protocol::timing::MAX_DURATION_MS;
use std::time::Duration;

/// Settings of a client (`Client.connect(url, options)`, `Client.quorum(urls, options)`,
/// `Client.cluster(urls, options)`). All durations are integer milliseconds.
// No `Debug`: it carries passwords and private keys.
#[napi(object)]
#[derive(Default, Clone)]
pub struct ClientOptions {
    /// Lease of locks acquired without `leaseMs` (watchdog mode), renewed every third of it.
    /// Default 30000 ms; at least 3 ms.
    pub watchdog_timeout_ms: Option<f64>,
    /// Timeout of one command on a single node and of connecting; also how long consecutive
    /// errors are retried while waiting. Default 3000 ms.
    pub network_timeout_ms: Option<f64>,
    /// Quorum mode: per-node timeout. Default `min(lease / 20, 250 ms)`.
    pub node_timeout_ms: Option<f64>,
    /// Longest pause between two attempts while waiting for a lease or fair lock, or without
    /// pub/sub (release messages usually wake waiters sooner). Default 50 ms. Waiters of
    /// reentrant and read/write locks, semaphores and latches that hear the release messages
    /// poll at most every `max(pollIntervalMs, 1000)`.
    pub poll_interval_ms: Option<f64>,
    /// TLS settings of `rediss://` URLs (CA, client certificate, server name, insecure).
    pub tls: Option<TlsOptions>,
    /// ACL user of the sentinels (`redis+sentinel://` URLs; the URL's credentials are the
    /// data nodes').
    pub sentinel_username: Option<String>,
    /// Password of the sentinels.
    pub sentinel_password: Option<String>,
    /// Replicas that must confirm each grant and renewal (`WAIT`, Redisson's
    /// `checkLockSyncedSlaves`); too few make an acquire fail (rolled back) or a hold be
    /// reported lost. Default 0 (off).
    pub sync_replicas: Option<f64>,
    /// How long each `WAIT` may block, below `networkTimeoutMs`. Default 1000 ms.
    pub sync_replicas_timeout_ms: Option<f64>,
    /// Set by the facade, not a user option: the CA certificates Node's TLS trusts (its
    /// bundled roots and NODE_EXTRA_CA_CERTS) as PEM text, given only when
    /// NODE_EXTRA_CA_CERTS is set and every URL is a TLS one (lib/deployment.mjs).
    pub node_trusted_ca: Option<String>,
}

impl ClientOptions {
    /// The deployment part (TLS, Sentinel, `syncReplicas`).
    pub(crate) fn deployment(&mut self) -> Deployment {
        Deployment {
            tls: self.tls.take(),
            sentinel_username: self.sentinel_username.take(),
            sentinel_password: self.sentinel_password.take(),
            sync_replicas: self.sync_replicas.take(),
            sync_replicas_timeout_ms: self.sync_replicas_timeout_ms.take(),
        }
    }
}

/// Converts a millisecond count from JavaScript. `allow_zero` for waits.
pub(crate) fn millis(what: &str, ms: f64, allow_zero: bool) -> napi::Result<Duration> {
    if ms.is_nan() {
        return Err(invalid(format!(
            "{what} must be a number of milliseconds, not NaN"
        )));
    }
    if ms < 0.0 {
        return Err(invalid(format!("{what} must not be negative (got {ms})")));
    }
    if ms == 0.0 && !allow_zero {
        return Err(invalid(format!("{what} must be greater than zero")));
    }
    if ms > MAX_DURATION_MS as f64 {
        return Err(invalid(format!(
            "{what} of {ms} ms exceeds the maximum of {MAX_DURATION_MS} ms (2^53 - 1)"
        )));
    }
    if ms.fract() != 0.0 {
        return Err(invalid(format!(
            "{what} must be an integer number of milliseconds (got {ms})"
        )));
    }
    Ok(Duration::from_millis(ms as u64))
}

/// An optional duration (`None` stays `None`).
pub(crate) fn opt_millis(what: &str, ms: Option<f64>, allow_zero: bool) -> napi::Result<Option<Duration>> {
    ms.map(|v| millis(what, v, allow_zero)).transpose()
}

/// An owner number for a reentrant lock: an integer in `1 ..= 2^53 - 1`.
pub(crate) fn owner(n: f64) -> napi::Result<u64> {
    if !(n >= 1.0 && n <= MAX_DURATION_MS as f64 && n.fract() == 0.0) {
        return Err(invalid(format!("owner must be a positive integer (got {n})")));
    }
    Ok(n as u64)
}

/// A fresh reentrant owner number from the core's one process-wide owner space
/// (`redlatch::new_owner`: 1 ..= 2^53 - 1, exact as a JavaScript number), shared with the
/// owners the core picks itself, so none collide. The facade numbers its owners with it
/// (`lib/facade/owner.mjs`).
#[napi]
pub fn new_owner() -> f64 {
    redlatch::new_owner() as f64
}
