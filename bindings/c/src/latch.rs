//! `redlatch_count_down_latch`: Redisson's RCountDownLatch. A count set once
//! (`try_set_count`), counted down by anyone; waiters in any process wake when it reaches zero
//! (Redisson's latch channel). An opened latch is gone until a new `try_set_count`.
//!
//! Ownership: made by `redlatch_count_down_latch_new` (boxed), freed by
//! `redlatch_count_down_latch_free`. Threads: a handle may be shared by threads.

use redlatch::blocking;
use redlatch::Result;
use std::ffi::c_char;

use crate::client::redlatch_client;
use crate::error::redlatch_status;
use crate::ffi::{arg, str_arg, wait_millis, Out};
use crate::fork::{park, Origin};
use crate::panic::{boundary, boundary_void};

/// A count-down latch handle (opaque). Thread-safe except for its free.
pub struct redlatch_count_down_latch {
    inner: blocking::CountDownLatch,
    origin: Origin,
}

// The thread-safety promised above, checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_count_down_latch>();
};

/// # Safety
/// `latch` NULL or valid for `'a`.
unsafe fn handle<'a>(latch: *const redlatch_count_down_latch) -> Result<&'a redlatch_count_down_latch> {
    // SAFETY: the caller's contract.
    let latch = unsafe { arg("latch", latch) }?;
    latch.origin.check("count-down latch")?;
    Ok(latch)
}

/// Makes a count-down latch on key `name` (a string key holding the count; waiters listen on
/// `redisson_countdownlatch__channel__{name}`, Redisson 4.7's layout). Sends nothing to Redis.
/// On success `*out` receives a new handle, owned by the caller and freed with
/// `redlatch_count_down_latch_free`.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL argument, non-UTF-8, empty or over 4096-byte name,
/// a client from a parent process).
///
/// # Safety
/// `client` NULL or valid; `name` NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_count_down_latch_new(
    client: *const redlatch_client,
    name: *const c_char,
    out: *mut *mut redlatch_count_down_latch,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let client = unsafe { arg("client", client) }?;
        // SAFETY: as above.
        let name = unsafe { str_arg("name", name) }?;
        let out = Out::new("out", out)?;
        redlatch::protocol::keys::validate_name(name)?;
        client.origin.check("client")?;
        let latch = Box::new(redlatch_count_down_latch {
            inner: client.inner.count_down_latch(name),
            origin: client.origin,
        });
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(Box::into_raw(latch)) };
        Ok(())
    })
}

/// Sets the count to `count` when no latch is set (Redisson's `trySetCount`): `*set` receives
/// true when it was set, false when a count already existed (left unchanged).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL; `count` 0 or above 2^31 - 1; nothing is sent);
/// `REDLATCH_CONNECTION`, `REDLATCH_REDIS`, `REDLATCH_KEY_CONFLICT`.
///
/// # Safety
/// `latch` NULL or valid; `set` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_count_down_latch_try_set_count(
    latch: *const redlatch_count_down_latch,
    count: u64,
    set: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let latch = unsafe { handle(latch) }?;
        let set = Out::new("set", set)?;
        let value = latch.inner.try_set_count(count)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { set.write(value) };
        Ok(())
    })
}

/// Counts down by one; at zero the latch opens (its key is deleted) and every waiter wakes. A
/// count-down of a latch that is not set changes nothing (Redisson's `countDown`).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL); `REDLATCH_REDIS`, `REDLATCH_KEY_CONFLICT`
/// (nothing changed); `REDLATCH_CONNECTION`: Redis did not answer within the network
/// timeout, so the outcome is unknown (a stalled Redis may still apply it when it runs
/// again): calling again may count down twice.
///
/// # Safety
/// `latch` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_count_down_latch_count_down(
    latch: *const redlatch_count_down_latch,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let latch = unsafe { handle(latch) }?;
        latch.inner.count_down()
    })
}

/// `*count` receives the current count (0 when the latch is open or was never set).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL argument, a handle of a parent process),
/// `REDLATCH_KEY_CONFLICT`, `REDLATCH_CONNECTION`, `REDLATCH_REDIS`.
///
/// # Safety
/// `latch` NULL or valid; `count` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_count_down_latch_count(
    latch: *const redlatch_count_down_latch,
    count: *mut u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let latch = unsafe { handle(latch) }?;
        let out = Out::new("count", count)?;
        let value = latch.inner.count()?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Waits until the count reaches zero, at most `timeout_ms` (0 = look once,
/// `REDLATCH_WAIT_FOREVER` = no limit): `*reached` receives true when the latch is open (count
/// zero, or never set), false when the timeout ran out first.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL; `timeout_ms` above `REDLATCH_MAX_DURATION_MS`);
/// `REDLATCH_CONNECTION`, `REDLATCH_REDIS`.
///
/// # Safety
/// `latch` NULL or valid; `reached` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_count_down_latch_wait(
    latch: *const redlatch_count_down_latch,
    timeout_ms: u64,
    reached: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let latch = unsafe { handle(latch) }?;
        let out = Out::new("reached", reached)?;
        let timeout = wait_millis(timeout_ms)?;
        let value = latch.inner.wait(timeout)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(value) };
        Ok(())
    })
}

/// Frees a count-down latch handle (the latch in Redis stays). NULL is a no-op.
///
/// # Safety
/// `latch` must be NULL or a handle from `redlatch_count_down_latch_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_count_down_latch_free(latch: *mut redlatch_count_down_latch) {
    boundary_void(|| {
        if latch.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `redlatch_count_down_latch_new`, freed only here.
        let latch = unsafe { Box::from_raw(latch) };
        if latch.origin.is_foreign() {
            park(latch);
        } else if crate::callback::in_callback() {
            std::thread::spawn(move || drop(latch));
        }
    })
}
