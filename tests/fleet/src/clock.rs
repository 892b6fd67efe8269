//! The clock shared by every process on this machine: Linux `CLOCK_MONOTONIC`, the same clock
//! as Python's `time.monotonic_ns()`, Node's `process.hrtime.bigint()` and C's
//! `clock_gettime(CLOCK_MONOTONIC)`, so intervals logged by workers in different processes
//! (and languages) can be compared by [`check_no_overlap`](crate::check_no_overlap).
//! `std::time::Instant` uses it too, but does not expose the raw value.

/// Nanoseconds on `CLOCK_MONOTONIC` (since an unspecified point, usually boot).
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

#[cfg(test)]
mod tests {
    #[test]
    fn never_goes_back_and_follows_instant() {
        let started = std::time::Instant::now();
        let a = super::monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = super::monotonic_ns();
        assert!(b >= a + 5_000_000, "{a} -> {b}");
        assert!(u128::from(b - a) <= started.elapsed().as_nanos() + 1_000_000);
    }
}
