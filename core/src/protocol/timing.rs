//! Durations and retry timing, pure functions of their inputs.
//!
//! Randomness is passed in (`unit` in `[0, 1)`) so these stay deterministic under test.

use crate::error::{Error, Result};
use std::time::Duration;

/// Largest lease or wait accepted: 2^53 - 1 ms, the largest integer exact in every language
/// redlatch serves (shared/API.md, "Durations").
pub const MAX_DURATION_MS: u64 = (1 << 53) - 1;

/// Default watchdog timeout: the lease used when none is given, renewed every third of it
/// (Redisson `lockWatchdogTimeout`, 30 000 ms).
pub const DEFAULT_WATCHDOG_TIMEOUT: Duration = Duration::from_secs(30);

/// Default network timeout for one command on a single-node client, and the longest a call may
/// run past its wait.
pub const DEFAULT_NETWORK_TIMEOUT: Duration = Duration::from_secs(3);

/// Default upper bound between two acquire attempts while waiting. Pub/sub normally wakes a
/// waiter first; the poll catches releases by clients that do not publish (redis-py).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The longest pause between two attempts of a waiter that hears the release messages of every
/// node, for a kind whose holders all publish them (Redisson's: reentrant, read/write locks,
/// semaphores, latches), when the poll interval is shorter. Such a waiter is woken by the
/// message, by the end of the holder's lease when the busy reply told it, and by its
/// subscription's interruption (messages may have been missed); this poll only catches a key
/// deleted without a message (a bare `DEL`). Redisson's waiters do not poll at all; at 50 ms
/// ten waiters sent ~250 commands a second to a shared Redis (a user trial of stop 43).
pub const LISTENING_POLL: Duration = Duration::from_secs(1);

/// Converts a duration to whole milliseconds for Redis, rounding positive sub-millisecond
/// values up to 1 ms (shared/API.md).
///
/// # Errors
/// `InvalidArgument` when the value is above [`MAX_DURATION_MS`], or zero and `allow_zero` is false.
pub fn to_millis(what: &str, d: Duration, allow_zero: bool) -> Result<u64> {
    if d.is_zero() {
        return if allow_zero {
            Ok(0)
        } else {
            Err(Error::invalid(format!("{what} must be greater than zero")))
        };
    }
    let whole = d.as_millis();
    let ms = if d.subsec_nanos() % 1_000_000 != 0 {
        whole + 1
    } else {
        whole
    };
    if ms > u128::from(MAX_DURATION_MS) {
        // The C++ wrapper saturates a std::chrono duration beyond 2^64 ms at UINT64_MAX - 1:
        // that number is not what the caller gave (a user trial), so it is not shown.
        let shown = if ms >= u128::from(u64::MAX - 1) {
            "more than 2^64 - 2".to_owned()
        } else {
            ms.to_string()
        };
        return Err(Error::invalid(format!(
            "{what} of {shown} ms exceeds the maximum of {MAX_DURATION_MS} ms (2^53 - 1)"
        )));
    }
    Ok(ms as u64)
}

/// Per-node timeout in quorum mode: `min(lease / 20, 250 ms)`, at least 1 ms (shared/API.md).
pub fn quorum_node_timeout(lease: Duration) -> Duration {
    (lease / 20).clamp(Duration::from_millis(1), Duration::from_millis(250))
}

/// Watchdog renewal period: a third of the watchdog timeout (Redisson).
pub fn renewal_period(watchdog_timeout: Duration) -> Duration {
    (watchdog_timeout / 3).max(Duration::from_millis(1))
}

/// Delay before the next acquire attempt while a lock is busy.
///
/// Waits at most `poll`, less when the holder's remaining lease (`pttl`, ms; negative when
/// unknown) ends sooner, and never past `remaining` wait. Jittered into `[half, full]` so that
/// waiters that woke together spread out.
pub fn busy_retry_delay(pttl_ms: i64, poll: Duration, remaining: Option<Duration>, unit: f64) -> Duration {
    let mut cap = poll;
    if pttl_ms >= 0 {
        cap = cap.min(Duration::from_millis(pttl_ms as u64 + 1));
    }
    let jittered = cap.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0));
    match remaining {
        Some(r) => jittered.min(r),
        None => jittered,
    }
}

/// Back-off after a failed attempt (error or quorum miss): "full jitter", a uniform draw from
/// `[0, min(cap, base * 2^attempt)]` (AWS Architecture Blog, "Exponential Backoff And Jitter";
/// Redlock's "retry after a random delay").
pub fn backoff(attempt: u32, base: Duration, cap: Duration, unit: f64) -> Duration {
    let exp = base.saturating_mul(1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX));
    exp.min(cap).mul_f64(unit.clamp(0.0, 1.0))
}

/// Whether a wait ends on an error of an attempt, its errors having persisted since the
/// attempt that failed first (`erring_for`): at once for a permanent error (retrying cannot
/// cure it: `ErrorKind::is_permanent`) or when the wait ran out (`out_of_time`); a wait with
/// an end (`finite`) otherwise retries until that end, so a waiter rides out a failover that
/// is shorter than its wait (a Cluster master or a Sentinel master killed and replaced takes
/// seconds); a wait without one gives up once errors have persisted for `network_timeout`,
/// so no call hangs on an unreachable Redis. Either way a call ends within its wait plus one
/// network timeout (docs/reliability.md, "Bounded calls").
pub fn wait_ends_on_error(
    permanent: bool,
    out_of_time: bool,
    finite: bool,
    erring_for: Duration,
    network_timeout: Duration,
) -> bool {
    permanent || out_of_time || (!finite && erring_for >= network_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_round_up_and_bound() {
        assert_eq!(to_millis("lease", Duration::from_micros(1), false).unwrap(), 1);
        assert_eq!(to_millis("lease", Duration::from_micros(1500), false).unwrap(), 2);
        assert_eq!(to_millis("lease", Duration::from_millis(7), false).unwrap(), 7);
        assert!(to_millis("lease", Duration::ZERO, false).is_err());
        assert_eq!(to_millis("wait", Duration::ZERO, true).unwrap(), 0);
        assert_eq!(
            to_millis("x", Duration::from_millis(MAX_DURATION_MS), false).unwrap(),
            MAX_DURATION_MS
        );
        let err = to_millis("lease", Duration::from_millis(MAX_DURATION_MS + 1), false).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(to_millis("lease", Duration::MAX, false).is_err());
        // The C++ wrapper's saturation value is not shown as if the caller gave it.
        let sentinel = to_millis("lease", Duration::from_millis(u64::MAX - 1), false).unwrap_err();
        assert!(
            sentinel.message().starts_with("lease of more than 2^64 - 2 ms"),
            "{sentinel}"
        );
    }

    #[test]
    fn node_timeout_follows_lease() {
        assert_eq!(
            quorum_node_timeout(Duration::from_secs(30)),
            Duration::from_millis(250)
        );
        assert_eq!(
            quorum_node_timeout(Duration::from_secs(1)),
            Duration::from_millis(50)
        );
        assert_eq!(
            quorum_node_timeout(Duration::from_millis(5)),
            Duration::from_millis(1)
        );
        assert_eq!(renewal_period(Duration::from_secs(30)), Duration::from_secs(10));
    }

    #[test]
    fn busy_delay_respects_pttl_poll_and_wait() {
        let poll = Duration::from_millis(100);
        assert_eq!(busy_retry_delay(10_000, poll, None, 1.0), poll);
        assert_eq!(busy_retry_delay(10_000, poll, None, 0.0), poll / 2);
        assert_eq!(busy_retry_delay(9, poll, None, 1.0), Duration::from_millis(10));
        assert_eq!(busy_retry_delay(-1, poll, None, 1.0), poll);
        assert_eq!(
            busy_retry_delay(10_000, poll, Some(Duration::from_millis(3)), 1.0),
            Duration::from_millis(3)
        );
    }

    #[test]
    fn backoff_is_bounded_full_jitter() {
        let base = Duration::from_millis(10);
        let cap = Duration::from_millis(500);
        assert_eq!(backoff(0, base, cap, 1.0), base);
        assert_eq!(backoff(3, base, cap, 1.0), Duration::from_millis(80));
        assert_eq!(backoff(30, base, cap, 1.0), cap);
        assert_eq!(backoff(3, base, cap, 0.0), Duration::ZERO);
        assert_eq!(backoff(3, base, cap, 0.5), Duration::from_millis(40));
    }
}
