//! The boundary every exported function runs inside: no Rust panic ever unwinds into C.
//!
//! Unwinding out of an `extern "C"` function aborts the process (Rust 1.81+), and before that
//! it was undefined behaviour; either way a C caller could do nothing about it. So each export
//! wraps its body in one of these functions, which turn a panic into `REDLATCH_PANIC` (with the
//! panic message as the last error) or into a neutral value for functions that return no status.
//! This needs `panic = "unwind"`, the default; the workspace profiles do not change it.
//!
//! `boundary` also refuses calls made from inside a lost-lock callback: that code runs on one
//! of the client's runtime threads, where blocking on the runtime would deadlock or panic.

use redlatch::{Error, ErrorKind};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::callback::in_callback;
use crate::error::{redlatch_status, set_last_error};

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_owned()
    }
}

/// Runs the body of a status-returning export: `Ok` is `REDLATCH_OK`; an error is recorded as
/// the thread's last error and returned as its status; a panic becomes `REDLATCH_PANIC`.
pub(crate) fn boundary(body: impl FnOnce() -> Result<(), Error>) -> redlatch_status {
    let result = if in_callback() {
        Err(Error::invalid(
            "redlatch functions cannot be called from a lost-lock callback (it runs on a \
             redlatch runtime thread); signal another thread instead",
        ))
    } else {
        catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
            Err(Error::new(
                ErrorKind::Panic,
                format!("internal panic: {}", panic_message(payload.as_ref())),
            ))
        })
    };
    match result {
        Ok(()) => redlatch_status::REDLATCH_OK,
        Err(e) => {
            set_last_error(&e);
            redlatch_status::from_kind(e.kind())
        }
    }
}

/// Runs the body of an export that returns a plain value; a panic returns `fallback`.
pub(crate) fn boundary_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        set_last_error(&Error::new(
            ErrorKind::Panic,
            format!("internal panic: {}", panic_message(payload.as_ref())),
        ));
        fallback
    })
}

/// Runs the body of an export that returns nothing (the `_free` functions).
pub(crate) fn boundary_void(body: impl FnOnce()) {
    boundary_value((), body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn a_panic_becomes_the_panic_status() {
        let status = boundary(|| panic!("boom"));
        assert_eq!(status, redlatch_status::REDLATCH_PANIC);
        // SAFETY: redlatch_last_error returns a valid NUL-terminated string.
        let message = unsafe { CStr::from_ptr(crate::error::redlatch_last_error()) };
        assert_eq!(message.to_str().unwrap(), "Panic: internal panic: boom");
        assert_eq!(boundary_value(7, || panic!("value")), 7);
        boundary_void(|| panic!("void"));
    }

    #[test]
    fn errors_become_their_status() {
        assert_eq!(boundary(|| Ok(())), redlatch_status::REDLATCH_OK);
        let status = boundary(|| Err(Error::new(ErrorKind::NotOwned, "x")));
        assert_eq!(status, redlatch_status::REDLATCH_NOT_OWNED);
    }

    /// Every `extern "C"` function in this crate must run inside a boundary function.
    #[test]
    fn every_export_is_inside_the_boundary() {
        let sources = [
            include_str!("callback.rs"),
            include_str!("client.rs"),
            include_str!("error.rs"),
            include_str!("held.rs"),
            include_str!("inspect.rs"),
            include_str!("latch.rs"),
            include_str!("lock.rs"),
            include_str!("multi.rs"),
            include_str!("permit.rs"),
            include_str!("rwlock.rs"),
            include_str!("semaphore.rs"),
            include_str!("version.rs"),
        ];
        let mut exports = 0;
        for source in sources {
            for (i, chunk) in source.split("extern \"C\" fn ").enumerate().skip(1) {
                let name: String = chunk.chars().take_while(|c| *c != '(').collect();
                if !name.starts_with("redlatch_") {
                    continue; // a function pointer type, not an export
                }
                let body = chunk.split("\n}\n").next().unwrap_or_default();
                assert!(
                    body.contains("boundary"),
                    "export #{i} {name} does not run inside the panic boundary"
                );
                exports += 1;
            }
        }
        assert!(exports > 50, "found only {exports} exports");
    }
}
