//! Questions about a lock that anyone may ask: is it locked, how long does its lease still run,
//! how many holds does the calling owner have (these ask Redis and change nothing), and which
//! kind of lock a handle is (answered locally).

use crate::error::redlatch_status;
use crate::ffi::{arg, Out};
use crate::lock::redlatch_lock;
use crate::panic::{boundary, boundary_value};
use redlatch::LockKind;
use std::ffi::c_int;

/// The kind of a lock handle, as `redlatch_lock_kind()` returns it: the core's `LockKind`, one
/// to one (the same kinds, and words, as `lock.kind` in the other redlatch languages).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum redlatch_kind {
    /// `"lease"`: a lease lock (`redlatch_lock_new`), the redis-py / node-redlock format; not
    /// reentrant.
    REDLATCH_KIND_LEASE = 0,
    /// `"reentrant"`: a reentrant lock (`redlatch_rlock_new`), Redisson's RLock.
    REDLATCH_KIND_REENTRANT = 1,
    /// `"fair"`: a fair lock (`redlatch_fair_lock_new`), Redisson's RFairLock.
    REDLATCH_KIND_FAIR = 2,
    /// `"read"`: the read side of a read/write lock (`redlatch_rw_lock_read`).
    REDLATCH_KIND_READ = 3,
    /// `"write"`: the write side of a read/write lock (`redlatch_rw_lock_write`).
    REDLATCH_KIND_WRITE = 4,
}

impl redlatch_kind {
    /// The C value of a core kind; `None` for a kind added to the core later (the unit test
    /// fails until it gets a value).
    pub fn from_kind(kind: LockKind) -> Option<redlatch_kind> {
        match kind {
            LockKind::Lease => Some(redlatch_kind::REDLATCH_KIND_LEASE),
            LockKind::Reentrant => Some(redlatch_kind::REDLATCH_KIND_REENTRANT),
            LockKind::Fair => Some(redlatch_kind::REDLATCH_KIND_FAIR),
            LockKind::Read => Some(redlatch_kind::REDLATCH_KIND_READ),
            LockKind::Write => Some(redlatch_kind::REDLATCH_KIND_WRITE),
            _ => None,
        }
    }
}

/// The kind of `lock`: a `redlatch_kind` value (`REDLATCH_KIND_LEASE`, `_REENTRANT`, `_FAIR`,
/// `_READ` or `_WRITE`), fixed when the handle was made. Sends nothing to Redis and never
/// fails; -1 when `lock` is NULL. Returns an `int` so that a kind added later cannot be an
/// enum value the caller's compiler does not know.
///
/// # Safety
/// `lock` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_kind(lock: *const redlatch_lock) -> c_int {
    boundary_value(-1, || {
        // SAFETY: the caller's contract above.
        unsafe { lock.as_ref() }
            .and_then(|lock| redlatch_kind::from_kind(lock.base.kind()))
            .map_or(-1, |k| k as c_int)
    })
}

/// `*locked` receives true when anyone holds the lock (a majority of nodes in quorum mode).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument, a handle of a parent process),
/// `REDLATCH_KEY_CONFLICT` (application data under the name), `REDLATCH_CONNECTION`,
/// `REDLATCH_REDIS`, `REDLATCH_QUORUM`.
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
/// Errors: as `redlatch_lock_is_locked`.
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
/// Errors: as `redlatch_lock_is_locked`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_value() {
        let all = [
            (LockKind::Lease, 0),
            (LockKind::Reentrant, 1),
            (LockKind::Fair, 2),
            (LockKind::Read, 3),
            (LockKind::Write, 4),
        ];
        for (kind, value) in all {
            assert_eq!(
                redlatch_kind::from_kind(kind).map(|k| k as c_int),
                Some(value),
                "{kind}"
            );
        }
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { redlatch_lock_kind(std::ptr::null()) }, -1);
    }
}
