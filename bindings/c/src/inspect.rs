//! Questions about a lock that anyone may ask: is it locked, how long does its lease still run,
//! how many holds does the calling owner have. They ask Redis and change nothing.

use crate::error::redlatch_status;
use crate::ffi::{arg, Out};
use crate::lock::redlatch_lock;
use crate::panic::boundary;

/// `*locked` receives true when anyone holds the lock (a majority of nodes in quorum mode).
///
/// # Safety
/// `lock` NULL or valid; `locked` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_is_locked(
    lock: *const redlatch_lock,
    locked: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let out = Out::new("locked", locked)?;
        lock.origin.check("lock")?;
        let value = lock.base.locked()?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Remaining lease of whoever holds the lock: `*held` receives whether it is held (with a
/// TTL), `*ttl_ms` the remaining ms (0 when not held).
///
/// # Safety
/// `lock` NULL or valid; `held`, `ttl_ms` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_ttl(
    lock: *const redlatch_lock,
    held: *mut bool,
    ttl_ms: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let held = Out::new("held", held)?;
        let ttl_ms = Out::new("ttl_ms", ttl_ms)?;
        lock.origin.check("lock")?;
        let ttl = lock.base.ttl()?;
        // SAFETY: both checked non-NULL; writable by the caller's contract.
        unsafe {
            held.write(ttl.is_some());
            ttl_ms.write(ttl.map_or(0, |d| d.as_millis() as u64));
        }
        Ok(())
    })
}

/// Reentrant locks: the calling owner's hold count in Redis (0 when it does not hold it).
/// Lease locks: always 0.
///
/// # Safety
/// `lock` NULL or valid; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_hold_count(
    lock: *const redlatch_lock,
    count: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let out = Out::new("count", count)?;
        lock.origin.check("lock")?;
        let value = lock.core_lock(lock.owner()).hold_count()?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}
