//! The clock shared by every worker process: Linux `CLOCK_MONOTONIC`, the same clock as
//! Python's `time.monotonic_ns()`, Node's `process.hrtime.bigint()` and C's
//! `clock_gettime(CLOCK_MONOTONIC)`, so intervals logged by workers in different languages can
//! be compared. `std::time::Instant` uses it too, but does not expose the raw value.

/// Nanoseconds on `CLOCK_MONOTONIC`.
#[allow(unsafe_code)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs * 1_000_000_000 + nanos
}
