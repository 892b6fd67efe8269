//! [`redlatch_status`], the return value of every fallible function, and the message of the
//! last failure on the calling thread.
//!
//! The status values are the core's [`ErrorKind`] codes, unchanged, so a number logged by C,
//! Python or JavaScript means the same condition everywhere (a unit test checks every kind).
//! The message is kept per thread because the C API blocks: the failing call and the
//! `redlatch_last_error()` that follows run on the same thread, with nothing in between.

use redlatch::{Error, ErrorKind, Reason};
use std::cell::{Cell, RefCell};
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
    /// Redis unreachable, connection dropped, a network timeout, or a refused or missing password (`WRONGPASS`, `NOAUTH`).
    REDLATCH_CONNECTION = 5,
    /// Bad input (NULL, non-UTF-8, empty name, zero or too large duration, misuse); nothing
    /// was sent to Redis.
    REDLATCH_INVALID_ARGUMENT = 6,
    /// Redis answered with an error reply (OOM, NOPERM, WRONGTYPE, ...).
    REDLATCH_REDIS = 7,
    /// Internal failure: a Rust panic caught at the boundary, or the OS random source failed.
    REDLATCH_PANIC = 8,
    /// Redis refused a command, key or channel to this ACL user (`NOPERM`); nothing changed.
    REDLATCH_NO_PERMISSION = 9,
    /// Redis is out of memory (`OOM`, `maxmemory` reached under `noeviction`).
    REDLATCH_OUT_OF_MEMORY = 10,
    /// The lock's name collides with application data: a key of a type no lock of this kind
    /// uses, a hash (reentrant lock) without TTL that is no lock, or a string (lease lock)
    /// without TTL that does not look like a lock token (16 to 128 characters of hex, base64
    /// or uuid text; one that does is taken for a lock held without a lease).
    REDLATCH_KEY_CONFLICT = 11,
    /// A write acquire of a read/write lock by an owner that holds a read hold of it: refused
    /// at once, nothing changed in Redis (Redisson would wait forever). Release the read holds
    /// first.
    REDLATCH_WOULD_DEADLOCK = 12,
}

/// Why a hold is not (or no longer) this owner's: the reason of the last `REDLATCH_NOT_OWNED`
/// or `REDLATCH_LOCK_LOST` on this thread (`redlatch_last_error_reason()`). The same words
/// and numbers in every redlatch language (`redlatch_reason_name`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum redlatch_reason {
    /// The last error has no reason (it is not NOT_OWNED / LOCK_LOST), or none yet.
    REDLATCH_REASON_NONE = 0,
    /// `"expired"`: the hold's lease (validity) ran out.
    REDLATCH_REASON_EXPIRED = 1,
    /// `"taken"`: another owner holds the lock now.
    REDLATCH_REASON_TAKEN = 2,
    /// `"deleted"`: the key was deleted while the hold was valid (DEL, force unlock, eviction,
    /// restart).
    REDLATCH_REASON_DELETED = 3,
    /// `"never_held"`: nothing held to act on (never acquired by this owner, or released).
    REDLATCH_REASON_NEVER_HELD = 4,
}

impl redlatch_reason {
    /// The C value of a core reason (the same number as `reason.code()`).
    pub fn from_reason(reason: Option<Reason>) -> redlatch_reason {
        match reason {
            None => redlatch_reason::REDLATCH_REASON_NONE,
            Some(Reason::Expired) => redlatch_reason::REDLATCH_REASON_EXPIRED,
            Some(Reason::Taken) => redlatch_reason::REDLATCH_REASON_TAKEN,
            Some(Reason::Deleted) => redlatch_reason::REDLATCH_REASON_DELETED,
            Some(Reason::NeverHeld) => redlatch_reason::REDLATCH_REASON_NEVER_HELD,
            // A reason added to the core later; the unit test fails until it gets a value.
            Some(_) => redlatch_reason::REDLATCH_REASON_NONE,
        }
    }
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
            ErrorKind::NoPermission => redlatch_status::REDLATCH_NO_PERMISSION,
            ErrorKind::OutOfMemory => redlatch_status::REDLATCH_OUT_OF_MEMORY,
            ErrorKind::KeyConflict => redlatch_status::REDLATCH_KEY_CONFLICT,
            ErrorKind::WouldDeadlock => redlatch_status::REDLATCH_WOULD_DEADLOCK,
            // A kind added to the core later: still an error, never a silent success. The
            // unit test `every_kind_maps_to_its_code` fails until it gets its own value.
            _ => redlatch_status::REDLATCH_PANIC,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    static LAST_REASON: Cell<redlatch_reason> = const { Cell::new(redlatch_reason::REDLATCH_REASON_NONE) };
}

/// Records `error` as this thread's last error (message and reason).
pub(crate) fn set_last_error(error: &Error) {
    let text = error.to_string().replace('\0', "\\0");
    let text = CString::new(text).unwrap_or_default();
    // During thread teardown the slot may be gone; the status code still reports the failure.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = text);
    let _ = LAST_REASON.try_with(|slot| slot.set(redlatch_reason::from_reason(error.reason())));
}

/// The reason of the last failed redlatch call on this thread: set for `REDLATCH_NOT_OWNED`
/// and `REDLATCH_LOCK_LOST` (expired, taken, deleted, never held), `REDLATCH_REASON_NONE` for
/// other failures and before any. Successful calls leave it unchanged, like
/// `redlatch_last_error()`. May be called from the lost-lock callback.
#[no_mangle]
pub extern "C" fn redlatch_last_error_reason() -> redlatch_reason {
    boundary_value(redlatch_reason::REDLATCH_REASON_NONE, || {
        LAST_REASON
            .try_with(Cell::get)
            .unwrap_or(redlatch_reason::REDLATCH_REASON_NONE)
    })
}

/// The stable word of a reason, the same in every redlatch language: `"expired"`,
/// `"taken"`, `"deleted"`, `"never_held"`; `""` for `REDLATCH_REASON_NONE` and any other value.
/// Takes an `int` so that any value is safe to pass. The string is static. Never NULL.
#[no_mangle]
pub extern "C" fn redlatch_reason_name(reason: c_int) -> *const c_char {
    boundary_value(c"".as_ptr(), || reason_cstr(reason).as_ptr())
}

fn reason_cstr(reason: c_int) -> &'static CStr {
    match Reason::from_code(reason) {
        Some(Reason::Expired) => c"expired",
        Some(Reason::Taken) => c"taken",
        Some(Reason::Deleted) => c"deleted",
        Some(Reason::NeverHeld) => c"never_held",
        _ => c"",
    }
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
        Some(ErrorKind::NoPermission) => c"NoPermission",
        Some(ErrorKind::OutOfMemory) => c"OutOfMemory",
        Some(ErrorKind::KeyConflict) => c"KeyConflict",
        Some(ErrorKind::WouldDeadlock) => c"WouldDeadlock",
        _ => c"Unknown",
    }
}

/// The stable name of a status, the same in every redlatch language: `"Ok"`, `"NotAcquired"`,
/// `"NotOwned"`, `"LockLost"`, `"Quorum"`, `"Connection"`, `"InvalidArgument"`, `"Redis"`,
/// `"Panic"`, `"NoPermission"`, `"OutOfMemory"`, `"KeyConflict"`, `"WouldDeadlock"`;
/// `"Unknown"` for any other value.
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
            redlatch_status::REDLATCH_WOULD_DEADLOCK as i32,
            ErrorKind::ALL.len() as i32
        );
        assert_eq!(redlatch_status::REDLATCH_WOULD_DEADLOCK as i32, 12);
        assert_eq!(status_cstr(0), c"Ok");
        assert_eq!(status_cstr(13), c"Unknown");
        assert_eq!(status_cstr(-1), c"Unknown");
    }

    #[test]
    fn every_reason_maps_to_its_code_and_word() {
        for reason in Reason::ALL {
            let c = redlatch_reason::from_reason(Some(reason));
            assert_eq!(c as i32, reason.code(), "{reason:?}");
            assert_eq!(reason_cstr(reason.code()).to_str().unwrap(), reason.as_str());
        }
        assert_eq!(reason_cstr(0), c"");
        assert_eq!(reason_cstr(99), c"");
        set_last_error(&Error::not_owned(true, Reason::Expired, "late"));
        assert_eq!(
            redlatch_last_error_reason(),
            redlatch_reason::REDLATCH_REASON_EXPIRED
        );
        set_last_error(&Error::invalid("x"));
        assert_eq!(
            redlatch_last_error_reason(),
            redlatch_reason::REDLATCH_REASON_NONE
        );
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
