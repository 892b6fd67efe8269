//! Operations on the caller's current hold of a lock handle: release, extend, fencing token,
//! owned, is-lost. "Current" is the calling owner's most recent acquisition through the handle
//! (see hold.rs for who the owner is).

use redlatch::{Error, Result};

use crate::error::redlatch_status;
use crate::ffi::{arg, millis, Out};
use crate::hold::{lock_slot, Slot};
use crate::lock::redlatch_lock;
use crate::panic::boundary;

impl redlatch_lock {
    fn current(&self) -> Result<Slot> {
        self.holds.top(self.owner()).ok_or_else(|| self.not_held())
    }
}

/// Releases the calling owner's most recent hold (for a reentrant lock: one level).
///
/// Errors: `REDLATCH_NOT_OWNED` (not held by this owner through this handle, or the lock
/// expired or was taken: the new holder's key is left alone); `REDLATCH_LOCK_LOST` (the loss
/// had already been seen: watchdog, lease validity or extend); `REDLATCH_CONNECTION`,
/// `REDLATCH_REDIS`, `REDLATCH_QUORUM` (the key then expires with its lease). The hold is
/// forgotten by the handle in every case.
///
/// # Safety
/// `lock` must be NULL or a valid handle.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_release(lock: *const redlatch_lock) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        lock.origin.check_owned()?;
        let slot = lock.holds.pop(lock.owner()).ok_or_else(|| lock.not_held())?;
        let guard = lock_slot(&slot).take().ok_or_else(|| lock.not_held())?;
        guard.release()
    })
}

/// Resets the remaining lease of the calling owner's hold to `lease_ms` (replace, never add).
/// Never re-creates a lock that is gone. In watchdog mode the next renewal sets it back to the
/// watchdog timeout (extend is meant for fixed leases).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (`lease_ms` 0 or above `REDLATCH_MAX_DURATION_MS`);
/// `REDLATCH_NOT_OWNED` (not held, or found gone or taken: the hold is then lost);
/// `REDLATCH_LOCK_LOST` (already seen lost); `REDLATCH_CONNECTION`, `REDLATCH_REDIS`,
/// `REDLATCH_QUORUM`.
///
/// # Safety
/// `lock` must be NULL or a valid handle.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_extend(lock: *const redlatch_lock, lease_ms: u64) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let lease = millis("lease", lease_ms)?;
        lock.origin.check_owned()?;
        let slot = lock.current()?;
        let held = lock_slot(&slot);
        let guard = held.as_ref().ok_or_else(|| lock.not_held())?;
        guard.extend(lease)
    })
}

/// `*token` receives the fencing token of the calling owner's most recent hold: a strictly
/// increasing number per lock name, to pass to the resource you protect so it can reject
/// writes from older holders.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL; the lock was not made with `fenced`);
/// `REDLATCH_NOT_OWNED` (not held by this owner through this handle).
///
/// # Safety
/// `lock` NULL or valid; `token` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_fencing_token(
    lock: *const redlatch_lock,
    token: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let out = Out::new("token", token)?;
        if !lock.fenced {
            return Err(Error::invalid(
                "fencing tokens need a lock made with the fenced option",
            ));
        }
        lock.origin.check_owned()?;
        let slot = lock.current()?;
        let value = lock_slot(&slot)
            .as_ref()
            .and_then(|g| g.fencing_token())
            .ok_or_else(|| lock.not_held())?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// `*owned` receives whether the calling owner's most recent hold is still its own, asking
/// Redis (false when it holds nothing through this handle, or in a forked child).
///
/// # Safety
/// `lock` NULL or valid; `owned` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_owned(
    lock: *const redlatch_lock,
    owned: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let out = Out::new("owned", owned)?;
        let value = match lock.origin.check_owned().and_then(|()| lock.current()) {
            Ok(slot) => match lock_slot(&slot).as_ref() {
                Some(guard) => guard.owned()?,
                None => false,
            },
            Err(_) => false,
        };
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// `*lost` receives whether the calling owner's most recent hold was seen lost (no Redis
/// call; false when it holds nothing through this handle).
///
/// # Safety
/// `lock` NULL or valid; `lost` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_is_lost(
    lock: *const redlatch_lock,
    lost: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let out = Out::new("lost", lost)?;
        let value = match lock.origin.check_owned().and_then(|()| lock.current()) {
            Ok(slot) => lock_slot(&slot).as_ref().is_some_and(|g| g.is_lost()),
            Err(_) => false,
        };
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}
