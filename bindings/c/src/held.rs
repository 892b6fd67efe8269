//! Operations on the caller's current hold of a lock handle: release, extend, fencing token,
//! owned, is-lost. "Current" is the calling owner's most recent acquisition through the handle
//! (see hold.rs for who the owner is).

use redlatch::{Error, Result};

use crate::error::redlatch_status;
use crate::ffi::{arg, millis, Out};
use crate::hold::Slot;
use crate::lock::redlatch_lock;
use crate::panic::boundary;

impl redlatch_lock {
    fn current(&self) -> Result<Slot> {
        self.holds.top(self.owner()).ok_or_else(|| self.not_held())
    }
}

/// Releases the calling owner's most recent hold (for a reentrant lock: one level).
///
/// Errors (`redlatch_last_error_reason()` tells why a hold is not ours):
/// `REDLATCH_NOT_OWNED` (`NEVER_HELD`: not held by this owner through this handle; `DELETED` /
/// `TAKEN`: Redis found the key gone or another owner's, whose key is left alone);
/// `REDLATCH_LOCK_LOST` (the loss was known before the call: the watchdog or an extend saw it,
/// with its reason, or the lease ran out: `EXPIRED`; a lease lock's key that a stalled Redis
/// kept past that is deleted first, by token); `REDLATCH_CONNECTION`,
/// `REDLATCH_QUORUM`, `REDLATCH_REDIS`, `REDLATCH_NO_PERMISSION`, `REDLATCH_OUT_OF_MEMORY`,
/// `REDLATCH_KEY_CONFLICT` (the outcome is unknown or nothing changed: the hold stays with the
/// handle, and calling `redlatch_lock_release` again once Redis is reachable releases it
/// exactly once: the first attempt that applied left an idempotency latch whose answer the
/// retry gets back. That latch lives two network timeouts (at least 1 s) for a lease lock and
/// the hold's lease for the reentrant kinds; a lease-lock retry after it finds the key gone and
/// says `NOT_OWNED`, its message naming the expired latch, as it cannot tell its own release
/// from a loss). After any other outcome the handle forgets the hold.
///
/// # Safety
/// `lock` must be NULL or a valid handle.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_release(lock: *const redlatch_lock) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { release(lock, false) })
}

/// Releases like `redlatch_lock_release`, but the handle forgets the hold whatever the
/// outcome: when the outcome is unknown (`REDLATCH_CONNECTION`, ...), the release goes on in
/// the background, retried while the hold is valid (after that its key expires with its
/// lease). For clean-up paths that cannot retry, such as RAII destructors (the C++
/// `Lock::unlock` uses it). Returns the status of the first attempt.
///
/// Errors: as `redlatch_lock_release`.
///
/// # Safety
/// `lock` must be NULL or a valid handle.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_release_final(lock: *const redlatch_lock) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { release(lock, true) })
}

/// # Safety
/// `lock` must be NULL or a valid handle.
unsafe fn release(lock: *const redlatch_lock, finally: bool) -> Result<()> {
    // SAFETY: the caller's contract (see the exports).
    let lock = unsafe { arg("lock", lock) }?;
    lock.origin.check_owned()?;
    let owner = lock.owner();
    let guard = lock.current()?;
    let result = if finally {
        guard.release_final()
    } else {
        guard.release()
    };
    if finally || !guard.is_held() {
        lock.holds.remove(owner, &guard);
    }
    result
}

/// Resets the remaining lease of the calling owner's hold to `lease_ms` (replace, never add).
/// Never re-creates a lock that is gone. In watchdog mode the next renewal, within a third of
/// `lease_ms`, sets it back to the watchdog timeout (extend is meant for fixed leases).
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
        lock.current()?.extend(lease)
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
        let value = lock.current()?.fencing_token().ok_or_else(|| lock.not_held())?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// `*owned` receives whether the calling owner's most recent hold is still its own, asking
/// Redis (false when it holds nothing through this handle, or in a forked child; false without
/// asking once the hold is known lost or released, although its key may linger past a lost
/// validity: see `redlatch_lock_release`).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument), `REDLATCH_CONNECTION`,
/// `REDLATCH_REDIS`, `REDLATCH_QUORUM` (Redis did not answer or refused; `*owned` unwritten).
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
            Ok(guard) => guard.owned()?,
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
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument).
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
            Ok(guard) => guard.is_lost(),
            Err(_) => false,
        };
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}
