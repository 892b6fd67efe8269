//! [`redlatch_status`], the return value of every fallible function, and the message of the
//! last failure on the calling thread.
//!
//! The status values are the core's [`ErrorKind`] codes, unchanged, so a number logged by C,
//! Python or JavaScript means the same condition everywhere (a unit test checks every kind).
//! The message is kept per thread because the C API blocks: the failing call and the
//! `redlatch_last_error()` that follows run on the same thread, with nothing in between.

use redlatch::{Error, ErrorKind};
use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};

use crate::panic::boundary_value;

/// Result of every fallible redlatch function: `REDLATCH_OK` (0) or the kind of failure.
///
/// The values equal the core's `ErrorKind` codes (stable across releases and languages). On
/// failure, `redlatch_last_error()` gives the message on the same thread.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum redlatch_status {
    /// Success.
    REDLATCH_OK = 0,
    /// The wait ran out before the lock could be acquired.
    REDLATCH_NOT_ACQUIRED = 1,
    /// Release or extend of a hold that this owner does not have (never held, expired, taken).
    REDLATCH_NOT_OWNED = 2,
    /// The hold had already been seen lost (watchdog, validity or extend): a kind of NOT_OWNED.
    REDLATCH_LOCK_LOST = 3,
    /// Quorum mode: no majority of nodes granted the request.
    REDLATCH_QUORUM = 4,
    /// Redis unreachable, connection dropped or a network timeout.
    REDLATCH_CONNECTION = 5,
    /// Bad input (NULL, non-UTF-8, empty name, zero or too large duration, misuse); nothing
    /// was sent to Redis.
    REDLATCH_INVALID_ARGUMENT = 6,
    /// Redis answered with an error reply (OOM, NOPERM, WRONGTYPE, ...).
    REDLATCH_REDIS = 7,
    /// Internal failure: a Rust panic caught at the boundary, or the OS random source failed.
    REDLATCH_PANIC = 8,
}

impl redlatch_status {
    /// The status for a core error kind (same number as `kind.code()`).
    pub fn from_kind(kind: ErrorKind) -> redlatch_status {
        match kind {
            ErrorKind::NotAcquired => redlatch_status::REDLATCH_NOT_ACQUIRED,
            ErrorKind::NotOwned => redlatch_status::REDLATCH_NOT_OWNED,
            ErrorKind::LockLost => redlatch_status::REDLATCH_LOCK_LOST,
            ErrorKind::Quorum => redlatch_status::REDLATCH_QUORUM,
            ErrorKind::Connection => redlatch_status::REDLATCH_CONNECTION,
            ErrorKind::InvalidArgument => redlatch_status::REDLATCH_INVALID_ARGUMENT,
            ErrorKind::Redis => redlatch_status::REDLATCH_REDIS,
            ErrorKind::Panic => redlatch_status::REDLATCH_PANIC,
            // A kind added to the core later: still an error, never a silent success. The
            // unit test `every_kind_maps_to_its_code` fails until it gets its own value.
            _ => redlatch_status::REDLATCH_PANIC,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `error` as this thread's last error.
pub(crate) fn set_last_error(error: &Error) {
    let text = error.to_string().replace('\0', "\\0");
    let text = CString::new(text).unwrap_or_default();
    // During thread teardown the slot may be gone; the status code still reports the failure.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = text);
}

/// The message of the last failed redlatch call on this thread, e.g.
/// `"NotAcquired: lock \"job\" was not acquired within 500 ms"`; `""` before any failure.
///
/// Successful calls leave it unchanged (like `errno`). The pointer is owned by the library and
/// stays valid until the next failing redlatch call on this thread; copy it to keep it.
/// Never NULL. May be called from the lost-lock callback.
#[no_mangle]
pub extern "C" fn redlatch_last_error() -> *const c_char {
    boundary_value(c"".as_ptr(), || {
        LAST_ERROR
            .try_with(|slot| slot.borrow().as_ptr())
            .unwrap_or(c"".as_ptr())
    })
}

fn status_cstr(status: c_int) -> &'static CStr {
    if status == 0 {
        return c"Ok";
    }
    match ErrorKind::from_code(status) {
        Some(ErrorKind::NotAcquired) => c"NotAcquired",
        Some(ErrorKind::NotOwned) => c"NotOwned",
        Some(ErrorKind::LockLost) => c"LockLost",
        Some(ErrorKind::Quorum) => c"Quorum",
        Some(ErrorKind::Connection) => c"Connection",
        Some(ErrorKind::InvalidArgument) => c"InvalidArgument",
        Some(ErrorKind::Redis) => c"Redis",
        Some(ErrorKind::Panic) => c"Panic",
        _ => c"Unknown",
    }
}

/// The stable name of a status, the same in every redlatch language: `"Ok"`, `"NotAcquired"`,
/// `"NotOwned"`, `"LockLost"`, `"Quorum"`, `"Connection"`, `"InvalidArgument"`, `"Redis"`,
/// `"Panic"`; `"Unknown"` for any other value.
///
/// Takes an `int` so that any value is safe to pass. The string is static. Never NULL.
#[no_mangle]
pub extern "C" fn redlatch_status_name(status: c_int) -> *const c_char {
    boundary_value(c"Unknown".as_ptr(), || status_cstr(status).as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_to_its_code() {
        for kind in ErrorKind::ALL {
            let status = redlatch_status::from_kind(kind);
            assert_eq!(status as i32, kind.code(), "{kind:?}");
            assert_eq!(status_cstr(kind.code()).to_str().unwrap(), kind.name());
        }
        assert_eq!(redlatch_status::REDLATCH_OK as i32, 0);
        assert_eq!(
            redlatch_status::REDLATCH_PANIC as i32,
            ErrorKind::ALL.len() as i32
        );
        assert_eq!(status_cstr(0), c"Ok");
        assert_eq!(status_cstr(9), c"Unknown");
        assert_eq!(status_cstr(-1), c"Unknown");
    }

    #[test]
    fn last_error_is_per_thread() {
        set_last_error(&Error::invalid("here"));
        // SAFETY: redlatch_last_error returns a valid NUL-terminated string.
        let here = unsafe { CStr::from_ptr(redlatch_last_error()) }
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(here, "InvalidArgument: here");
        std::thread::spawn(|| {
            // SAFETY: as above.
            let there = unsafe { CStr::from_ptr(redlatch_last_error()) };
            assert_eq!(there.to_bytes(), b"");
        })
        .join()
        .unwrap();
    }
}
