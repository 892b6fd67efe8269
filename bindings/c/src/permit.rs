//! `redlatch_permit_semaphore` and `redlatch_permit`: Redisson's RPermitExpirableSemaphore,
//! whose permits have ids and leases, so a holder that dies gives its permits back when their
//! leases end.
//!
//! Ownership: both are boxed; a semaphore handle is freed by `redlatch_permit_semaphore_free`,
//! a permit by `redlatch_permit_free` (which releases it when still held). A permit may outlive
//! the semaphore handle it came from. Threads: both may be shared by threads; only their free
//! must come after every other call on them has returned.

use redlatch::blocking::{self, Permit};
use redlatch::protocol::family::validate_count;
use redlatch::{Error, Result};
use std::ffi::{c_char, CString};
use std::time::Duration;

use crate::client::redlatch_client;
use crate::error::redlatch_status;
use crate::ffi::{arg, millis, str_arg, wait_millis, Out};
use crate::fork::{park, Origin};
use crate::panic::{boundary, boundary_value, boundary_void};

/// A permit-expirable semaphore handle (opaque). Thread-safe except for its free.
pub struct redlatch_permit_semaphore {
    inner: blocking::PermitSemaphore,
    origin: Origin,
}

/// One acquired permit (opaque): its id and its hold. Thread-safe except for its free.
pub struct redlatch_permit {
    inner: Permit,
    id: CString,
    origin: Origin,
}

// The thread-safety promised above, checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_permit_semaphore>();
    assert_send_sync::<redlatch_permit>();
};

/// # Safety
/// `sem` NULL or valid for `'a`.
unsafe fn handle<'a>(sem: *const redlatch_permit_semaphore) -> Result<&'a redlatch_permit_semaphore> {
    // SAFETY: the caller's contract.
    let sem = unsafe { arg("permit_semaphore", sem) }?;
    sem.origin.check("permit semaphore")?;
    Ok(sem)
}

/// A permit lease in ms: 0 = no fixed lease (renewed by the watchdog while the permit lives).
fn lease(lease_ms: u64) -> Result<Option<Duration>> {
    match lease_ms {
        0 => Ok(None),
        ms => millis("lease", ms).map(Some),
    }
}

/// Makes a permit-expirable semaphore on key `name` (Redisson 4.7's layout: the count in
/// `name`, the held permits' expiries in the sorted set `{name}:timeout`). `wait_ms` as for
/// `redlatch_semaphore_new`. Sends nothing to Redis. On success `*out` receives a new handle,
/// owned by the caller and freed with `redlatch_permit_semaphore_free`.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL argument, non-UTF-8, empty or over 4096-byte name,
/// `wait_ms` above `REDLATCH_MAX_DURATION_MS`, a client from a parent process).
///
/// # Safety
/// `client` NULL or valid; `name` NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_new(
    client: *const redlatch_client,
    name: *const c_char,
    wait_ms: u64,
    out: *mut *mut redlatch_permit_semaphore,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let client = unsafe { arg("client", client) }?;
        // SAFETY: as above.
        let name = unsafe { str_arg("name", name) }?;
        let out = Out::new("out", out)?;
        redlatch::protocol::keys::validate_name(name)?;
        let wait = wait_millis(wait_ms)?;
        client.origin.check("client")?;
        let mut inner = client.inner.permit_semaphore(name);
        if let Some(wait) = wait {
            inner = inner.wait(wait);
        }
        let sem = Box::new(redlatch_permit_semaphore {
            inner,
            origin: client.origin,
        });
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(Box::into_raw(sem)) };
        Ok(())
    })
}

/// Declares the permits the semaphore starts with: the handle's first acquire, try-acquire or
/// `available` (each retrying within its own wait) first sets them when the semaphore does
/// not exist yet, as `redlatch_permit_semaphore_try_set_permits` does; a count that exists is left as it is. Once per handle:
/// a count gone later (a restart without persistence) is not set again by itself; call
/// `redlatch_permit_semaphore_try_set_permits` then. (Python's `permits=`, Node's `{ permits }`; the core's
/// `initial_permits`.) Sends nothing to Redis. Call it before the handle is used or shared
/// with other threads: it changes the handle.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL; `permits` 0 or above 2^31 - 1: the handle is
/// left as it was; a handle of a parent process).
///
/// # Safety
/// `permit_semaphore` NULL or valid, and not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_set_initial_permits(
    permit_semaphore: *mut redlatch_permit_semaphore,
    permits: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above (valid and not shared while this runs).
        let sem =
            unsafe { permit_semaphore.as_mut() }.ok_or_else(|| Error::invalid("permit_semaphore is NULL"))?;
        sem.origin.check("permit_semaphore")?;
        validate_count("permits", permits)?;
        sem.inner = sem.inner.clone().initial_permits(permits);
        Ok(())
    })
}

/// Sets the number of permits when none is set yet (`trySetPermits`): `*set` receives true when
/// it was set. Errors as `redlatch_semaphore_try_set_permits`.
///
/// # Safety
/// `permit_semaphore` NULL or valid; `set` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_try_set_permits(
    permit_semaphore: *const redlatch_permit_semaphore,
    permits: u64,
    set: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(permit_semaphore) }?;
        let set = Out::new("set", set)?;
        let value = sem.inner.try_set_permits(permits)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { set.write(value) };
        Ok(())
    })
}

fn boxed(inner: Permit, origin: Origin) -> *mut redlatch_permit {
    // Ids are 32 hex digits: no interior NUL.
    let id = CString::new(inner.id()).unwrap_or_default();
    Box::into_raw(Box::new(redlatch_permit { inner, id, origin }))
}

/// Takes one permit, blocking up to the handle's `wait_ms`. `lease_ms` is its lease: Redis gives
/// it back that long after the acquire unless released first; 0 = no fixed lease, renewed by the
/// watchdog while the permit lives (a dead holder's permit comes back one watchdog timeout
/// after its last renewal). On success `*out` receives the permit, owned by the caller and freed
/// with `redlatch_permit_free`.
///
/// Errors: `REDLATCH_NOT_ACQUIRED` (the wait ran out); `REDLATCH_INVALID_ARGUMENT` (NULL,
/// `lease_ms` above `REDLATCH_MAX_DURATION_MS`); `REDLATCH_CONNECTION`, `REDLATCH_REDIS`,
/// `REDLATCH_KEY_CONFLICT`.
///
/// # Safety
/// `permit_semaphore` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_acquire(
    permit_semaphore: *const redlatch_permit_semaphore,
    lease_ms: u64,
    out: *mut *mut redlatch_permit,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(permit_semaphore) }?;
        let out = Out::new("out", out)?;
        let permit = sem.inner.acquire(lease(lease_ms)?)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(boxed(permit, sem.origin)) };
        Ok(())
    })
}

/// Takes one permit like `redlatch_permit_semaphore_acquire`, blocking up to `wait_ms` instead
/// of the handle's wait (0 = one try, `REDLATCH_WAIT_FOREVER` = until one is free). Errors as
/// `redlatch_permit_semaphore_acquire`, plus `REDLATCH_INVALID_ARGUMENT` for a wait above
/// `REDLATCH_MAX_DURATION_MS`.
///
/// # Safety
/// `permit_semaphore` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_acquire_for(
    permit_semaphore: *const redlatch_permit_semaphore,
    lease_ms: u64,
    wait_ms: u64,
    out: *mut *mut redlatch_permit,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(permit_semaphore) }?;
        let out = Out::new("out", out)?;
        let wait = wait_millis(wait_ms)?;
        let permit = sem.inner.acquire_with_wait(lease(lease_ms)?, wait)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(boxed(permit, sem.origin)) };
        Ok(())
    })
}

/// One attempt to take a permit, no waiting: `*out` receives the permit, or NULL when none is
/// available. `lease_ms` and errors as `redlatch_permit_semaphore_acquire` (never
/// `REDLATCH_NOT_ACQUIRED`).
///
/// # Safety
/// `permit_semaphore` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_try_acquire(
    permit_semaphore: *const redlatch_permit_semaphore,
    lease_ms: u64,
    out: *mut *mut redlatch_permit,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(permit_semaphore) }?;
        let out = Out::new("out", out)?;
        let permit = sem.inner.try_acquire(lease(lease_ms)?)?;
        let value = permit.map_or(std::ptr::null_mut(), |p| boxed(p, sem.origin));
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Releases the permit with id `id` (32 hex digits, e.g. from `redlatch_permit_id` of another
/// process or a Redisson client), waking waiters.
///
/// Errors: `REDLATCH_NOT_OWNED` (no such permit is held: unknown, released, or its lease ran
/// out; `redlatch_last_error_reason()` says which); `REDLATCH_INVALID_ARGUMENT` (NULL, not 32
/// hex digits; the id is never echoed in the message); `REDLATCH_CONNECTION`, `REDLATCH_REDIS`.
///
/// # Safety
/// `permit_semaphore` NULL or valid; `id` NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_release(
    permit_semaphore: *const redlatch_permit_semaphore,
    id: *const c_char,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(permit_semaphore) }?;
        // SAFETY: as above.
        let id = unsafe { str_arg("id", id) }?;
        sem.inner.release(id)
    })
}

/// `*available` receives the number of permits available now (expired permits count as given
/// back).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument, a handle of a parent process),
/// `REDLATCH_KEY_CONFLICT`, `REDLATCH_CONNECTION`, `REDLATCH_REDIS`.
///
/// # Safety
/// `permit_semaphore` NULL or valid; `available` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_available(
    permit_semaphore: *const redlatch_permit_semaphore,
    available: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(permit_semaphore) }?;
        let out = Out::new("available", available)?;
        let value = sem.inner.available()?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Frees a permit-expirable semaphore handle (permits acquired through it stay held until
/// released or freed). NULL is a no-op.
///
/// # Safety
/// `permit_semaphore` must be NULL or a handle from `redlatch_permit_semaphore_new` not yet
/// freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_semaphore_free(permit_semaphore: *mut redlatch_permit_semaphore) {
    boundary_void(|| {
        if permit_semaphore.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `redlatch_permit_semaphore_new`, freed only here.
        let sem = unsafe { Box::from_raw(permit_semaphore) };
        if sem.origin.is_foreign() {
            park(sem);
        } else if crate::callback::in_callback() {
            std::thread::spawn(move || drop(sem));
        }
    })
}

/// The permit's id: 32 lower-case hex digits, Redisson's format (a Java client may release it
/// by this id). Owned by the permit, valid until `redlatch_permit_free`. `""` for NULL.
///
/// # Safety
/// `permit` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_id(permit: *const redlatch_permit) -> *const c_char {
    boundary_value(c"".as_ptr(), || {
        // SAFETY: the caller's contract above.
        match unsafe { permit.as_ref() } {
            Some(p) => p.id.as_ptr(),
            None => c"".as_ptr(),
        }
    })
}

/// `*lost` receives whether the permit is known no longer held (no Redis call): its lease ran
/// out (a fixed lease, or watchdog renewals that failed for a whole watchdog timeout, e.g.
/// refused while Redis is out of memory: Redis then gives it back, to any client) or a
/// renewal found it gone; `redlatch_permit_release` then fails with `REDLATCH_LOCK_LOST`.
/// False after a release.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument, a permit of a parent process).
///
/// # Safety
/// `permit` NULL or valid; `lost` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_is_lost(
    permit: *const redlatch_permit,
    lost: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let permit = unsafe { arg("permit", permit) }?;
        permit.origin.check("permit")?;
        let out = Out::new("lost", lost)?;
        let value = permit.inner.is_lost();
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Releases the permit, waking waiters.
///
/// Errors: `REDLATCH_LOCK_LOST` (its lease ran out: reason `EXPIRED`, as for a lock released
/// late); `REDLATCH_NOT_OWNED` (already released: reason `NEVER_HELD`; its entry gone within
/// its lease: reason `DELETED`);
/// `REDLATCH_INVALID_ARGUMENT` (NULL; a permit from a parent process gives `NOT_OWNED`);
/// `REDLATCH_CONNECTION`, `REDLATCH_REDIS` (the outcome is unknown: call again).
///
/// # Safety
/// `permit` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_release(permit: *const redlatch_permit) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let permit = unsafe { arg("permit", permit) }?;
        permit.origin.check_owned()?;
        permit.inner.release()
    })
}

/// Frees a permit, first releasing it when it is still held (best effort, blocking up to a
/// network timeout). NULL is a no-op. Call it once, after every other call on it has returned.
///
/// # Safety
/// `permit` must be NULL or a permit from `redlatch_permit_semaphore_(try_)acquire` not yet
/// freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_permit_free(permit: *mut redlatch_permit) {
    boundary_void(|| {
        if permit.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `boxed`, freed only here.
        let permit = unsafe { Box::from_raw(permit) };
        if permit.origin.is_foreign() {
            park(permit);
            return;
        }
        // Best effort: no caller is left to tell (a release that fails goes on in the
        // background when the permit is dropped).
        let release = move || drop(permit.inner.release());
        if crate::callback::in_callback() {
            std::thread::spawn(release);
        } else {
            release();
        }
    })
}
