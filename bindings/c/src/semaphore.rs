//! `redlatch_semaphore`: a counting semaphore (Redisson's RSemaphore).
//!
//! Permits are not owned in Redis: any client may release any number, and a holder that dies
//! keeps its permits taken forever (use `redlatch_permit_semaphore` when that matters). The
//! handle counts what it acquired, and releasing more than that through it is refused with
//! `REDLATCH_NOT_OWNED` (reason `NEVER_HELD`), as the core decides.
//!
//! Ownership: made by `redlatch_semaphore_new` (boxed), freed by `redlatch_semaphore_free`,
//! which first gives back the permits still held through the handle. Threads: a handle may be
//! shared by threads; its count is the handle's, not a thread's.

use redlatch::blocking;
use redlatch::protocol::family::validate_count;
use redlatch::{Error, Result};
use std::ffi::c_char;

use crate::client::redlatch_client;
use crate::error::redlatch_status;
use crate::ffi::{arg, str_arg, wait_millis, Out};
use crate::fork::{park, Origin};
use crate::panic::{boundary, boundary_void};

/// A semaphore handle (opaque). Thread-safe except for `redlatch_semaphore_free`.
pub struct redlatch_semaphore {
    inner: blocking::Semaphore,
    origin: Origin,
}

// The thread-safety promised above, checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_semaphore>();
};

/// # Safety
/// `sem` NULL or valid for `'a`.
unsafe fn handle<'a>(sem: *const redlatch_semaphore) -> Result<&'a redlatch_semaphore> {
    // SAFETY: the caller's contract.
    let sem = unsafe { arg("semaphore", sem) }?;
    sem.origin.check("semaphore")?;
    Ok(sem)
}

/// Makes a semaphore on key `name` (a string key holding the number of permits available,
/// Redisson 4.7's RSemaphore layout; waiters are woken on `redisson_sc:{name}`). `wait_ms` is
/// how long `redlatch_semaphore_acquire` may block: 0 = one try, `REDLATCH_WAIT_FOREVER` =
/// until the permits are free. Sends nothing to Redis. On success `*out` receives a new handle,
/// owned by the caller and freed with `redlatch_semaphore_free`; on failure it is not written.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL argument, non-UTF-8, empty or over 4096-byte name,
/// `wait_ms` above `REDLATCH_MAX_DURATION_MS`, a client from a parent process).
///
/// # Safety
/// `client` NULL or valid; `name` NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_new(
    client: *const redlatch_client,
    name: *const c_char,
    wait_ms: u64,
    out: *mut *mut redlatch_semaphore,
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
        let mut inner = client.inner.semaphore(name);
        if let Some(wait) = wait {
            inner = inner.wait(wait);
        }
        let sem = Box::new(redlatch_semaphore {
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
/// not exist yet, as `redlatch_semaphore_try_set_permits` does; a count that exists is left as it is. Once per handle:
/// a count gone later (a restart without persistence) is not set again by itself; call
/// `redlatch_semaphore_try_set_permits` then. (Python's `permits=`, Node's `{ permits }`; the core's
/// `initial_permits`.) Sends nothing to Redis. Call it before the handle is used or shared
/// with other threads: it changes the handle.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL; `permits` 0 or above 2^31 - 1: the handle is
/// left as it was; a handle of a parent process).
///
/// # Safety
/// `semaphore` NULL or valid, and not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_set_initial_permits(
    semaphore: *mut redlatch_semaphore,
    permits: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above (valid and not shared while this runs).
        let sem = unsafe { semaphore.as_mut() }.ok_or_else(|| Error::invalid("semaphore is NULL"))?;
        sem.origin.check("semaphore")?;
        validate_count("permits", permits)?;
        sem.inner = sem.inner.clone().initial_permits(permits);
        Ok(())
    })
}

/// Sets the number of permits to `permits` when the semaphore has none set yet (Redisson's
/// `trySetPermits`): `*set` receives true when it was set, false when a count already existed
/// (left unchanged).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL; `permits` 0 or above 2^31 - 1: nothing is sent);
/// `REDLATCH_CONNECTION`, `REDLATCH_REDIS`, `REDLATCH_KEY_CONFLICT` (the key holds other data).
///
/// # Safety
/// `semaphore` NULL or valid; `set` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_try_set_permits(
    semaphore: *const redlatch_semaphore,
    permits: u64,
    set: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(semaphore) }?;
        let set = Out::new("set", set)?;
        let value = sem.inner.try_set_permits(permits)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { set.write(value) };
        Ok(())
    })
}

/// Takes `n` permits, blocking up to the handle's `wait_ms` until `n` are available (all or
/// none; woken by releases).
///
/// Errors: `REDLATCH_NOT_ACQUIRED` (the wait ran out; nothing taken); `REDLATCH_INVALID_ARGUMENT`
/// (NULL; `n` 0 or above 2^31 - 1); `REDLATCH_CONNECTION`, `REDLATCH_REDIS`,
/// `REDLATCH_KEY_CONFLICT`.
///
/// # Safety
/// `semaphore` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_acquire(
    semaphore: *const redlatch_semaphore,
    n: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(semaphore) }?;
        sem.inner.acquire(n)
    })
}

/// Takes `n` permits like `redlatch_semaphore_acquire`, blocking up to `wait_ms` instead of the
/// handle's wait: 0 = one try (`REDLATCH_NOT_ACQUIRED` when too few are free),
/// `REDLATCH_WAIT_FOREVER` = until they are. Errors as `redlatch_semaphore_acquire`, plus
/// `REDLATCH_INVALID_ARGUMENT` for a wait above `REDLATCH_MAX_DURATION_MS`.
///
/// # Safety
/// `semaphore` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_acquire_for(
    semaphore: *const redlatch_semaphore,
    n: u64,
    wait_ms: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(semaphore) }?;
        let wait = wait_millis(wait_ms)?;
        sem.inner.acquire_with_wait(n, wait)
    })
}

/// One attempt to take `n` permits, no waiting: `*acquired` receives true when they were taken.
/// Errors as `redlatch_semaphore_acquire` (never `REDLATCH_NOT_ACQUIRED`).
///
/// # Safety
/// `semaphore` NULL or valid; `acquired` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_try_acquire(
    semaphore: *const redlatch_semaphore,
    n: u64,
    acquired: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(semaphore) }?;
        let acquired = Out::new("acquired", acquired)?;
        let got = sem.inner.try_acquire(n)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { acquired.write(got) };
        Ok(())
    })
}

/// Gives back `n` of the permits this handle acquired, waking waiters.
///
/// Errors: `REDLATCH_NOT_OWNED` (reason `NEVER_HELD`: more than the handle holds; nothing
/// released; reason `DELETED`: the semaphore's count is gone (deleted, expired, a restart of
/// Redis without persistence): nothing written, the permits leave the handle, and
/// `redlatch_semaphore_try_set_permits` sets the count again); `REDLATCH_INVALID_ARGUMENT`
/// (NULL; `n` 0 or above 2^31 - 1);
/// `REDLATCH_CONNECTION`, `REDLATCH_REDIS`.
///
/// # Safety
/// `semaphore` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_release(
    semaphore: *const redlatch_semaphore,
    n: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { arg("semaphore", semaphore) }?;
        // A child does not own its parent's permits: NOT_OWNED, as an inherited lock's or
        // permit's release (the README's fork rule; a user trial found INVALID_ARGUMENT).
        sem.origin.check_owned()?;
        sem.inner.release(n)
    })
}

/// Gives back `n` permits for a clean-up path that cannot call again (a scope guard's
/// destructor): as [`redlatch_semaphore_release`], except that when the outcome stays unknown
/// (`REDLATCH_CONNECTION`) the permits leave this handle's count anyway and the release is
/// settled in the background by its request id (the core's `Semaphore::release_final`), so
/// freeing the handle later does not give them back a second time.
///
/// Errors: as [`redlatch_semaphore_release`].
///
/// # Safety
/// `semaphore` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_release_final(
    semaphore: *const redlatch_semaphore,
    n: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(semaphore) }?;
        sem.inner.release_final(n)
    })
}

/// `*available` receives the number of permits available in Redis now (0 when none was set,
/// and 0 when the count is below zero: Redisson's `reducePermits` can take it there).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument, a handle of a parent process),
/// `REDLATCH_KEY_CONFLICT`, `REDLATCH_CONNECTION`, `REDLATCH_REDIS`.
///
/// # Safety
/// `semaphore` NULL or valid; `available` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_available(
    semaphore: *const redlatch_semaphore,
    available: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { handle(semaphore) }?;
        let out = Out::new("available", available)?;
        let value = sem.inner.available()?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// `*held` receives the number of permits acquired through this handle and not yet released
/// (no Redis call).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument, a handle of a parent process).
///
/// # Safety
/// `semaphore` NULL or valid; `held` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_held(
    semaphore: *const redlatch_semaphore,
    held: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let sem = unsafe { arg("semaphore", semaphore) }?;
        sem.origin.check("semaphore")?;
        let out = Out::new("held", held)?;
        let value = sem.inner.held();
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Frees a semaphore handle, first giving back the permits still held through it (best
/// effort, blocking up to a network timeout; a release of unknown outcome it still counts is
/// sent again with its request id, so that permits it gave back are not given back twice).
/// NULL is a no-op. Call it once, after every other call on the handle has returned.
///
/// # Safety
/// `semaphore` must be NULL or a handle from `redlatch_semaphore_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_semaphore_free(semaphore: *mut redlatch_semaphore) {
    boundary_void(|| {
        if semaphore.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `redlatch_semaphore_new`, freed only here.
        let sem = unsafe { Box::from_raw(semaphore) };
        if sem.origin.is_foreign() {
            park(sem);
            return;
        }
        let give_back = move || {
            if sem.inner.held() > 0 {
                // Best effort: no caller is left to tell (releases of unknown outcome are
                // settled by their latch, not given back twice).
                sem.inner.release_all_final();
            }
        };
        if crate::callback::in_callback() {
            // Blocking on the runtime from one of its own threads would deadlock.
            std::thread::spawn(give_back);
        } else {
            give_back();
        }
    })
}
