//! Checks on what C hands us: pointers, strings and durations, each failing with
//! `InvalidArgument` *before* anything else happens, so bad input never reaches Redis and
//! out-params are written only once everything succeeded.

use redlatch::protocol::timing::MAX_DURATION_MS;
use redlatch::{Error, Result};
use std::ffi::{c_char, CStr};
use std::time::Duration;

use crate::lock::REDLATCH_WAIT_FOREVER;

/// A borrowed `const T *` argument that must not be NULL.
///
/// # Safety
/// `ptr` must be NULL or point to a live `T` for `'a`.
pub(crate) unsafe fn arg<'a, T>(what: &str, ptr: *const T) -> Result<&'a T> {
    // SAFETY: the caller guarantees `ptr` is NULL or valid for 'a.
    unsafe { ptr.as_ref() }.ok_or_else(|| Error::invalid(format!("{what} is NULL")))
}

/// An optional `const T *` argument (NULL = defaults).
///
/// # Safety
/// As [`arg`].
pub(crate) unsafe fn opt_arg<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: the caller guarantees `ptr` is NULL or valid for 'a.
    unsafe { ptr.as_ref() }
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string that lives for `'a`.
pub(crate) unsafe fn str_arg<'a>(what: &str, ptr: *const c_char) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, and the caller guarantees NUL termination and lifetime.
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes
        .to_str()
        .map_err(|_| Error::invalid(format!("{what} is not valid UTF-8")))
}

/// An out-param, checked for NULL up front and written only at the end of a successful call.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks `ptr` for NULL.
    pub(crate) fn new(what: &str, ptr: *mut T) -> Result<Out<T>> {
        if ptr.is_null() {
            Err(Error::invalid(format!("{what} is NULL")))
        } else {
            Ok(Out(ptr))
        }
    }

    /// Writes the value (the previous content is not read or dropped).
    ///
    /// # Safety
    /// The pointer given to [`Out::new`] must be valid for writes of a `T`.
    pub(crate) unsafe fn write(self, value: T) {
        // SAFETY: non-NULL (checked in `new`) and writable (the caller's contract).
        unsafe { self.0.write(value) }
    }
}

/// A lease-like duration in ms: greater than zero and at most 2^53 - 1.
pub(crate) fn millis(what: &str, ms: u64) -> Result<Duration> {
    if ms == 0 {
        return Err(Error::invalid(format!("{what} must be greater than zero")));
    }
    if ms > MAX_DURATION_MS {
        return Err(Error::invalid(format!(
            "{what} of {ms} ms exceeds the maximum of {MAX_DURATION_MS} ms (2^53 - 1)"
        )));
    }
    Ok(Duration::from_millis(ms))
}

/// A wait in ms: 0 = one try, `REDLATCH_WAIT_FOREVER` = `None`, else at most 2^53 - 1.
pub(crate) fn wait_millis(ms: u64) -> Result<Option<Duration>> {
    match ms {
        0 => Ok(Some(Duration::ZERO)),
        REDLATCH_WAIT_FOREVER => Ok(None),
        ms => millis("wait", ms).map(Some),
    }
}

/// An optional setting in ms where 0 means "the default".
pub(crate) fn optional_millis(what: &str, ms: u64) -> Result<Option<Duration>> {
    match ms {
        0 => Ok(None),
        ms => millis(what, ms).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_checked() {
        assert!(millis("lease", 0).is_err());
        assert_eq!(millis("lease", 1).unwrap(), Duration::from_millis(1));
        assert!(millis("lease", MAX_DURATION_MS).is_ok());
        assert!(millis("lease", MAX_DURATION_MS + 1).is_err());
        assert_eq!(wait_millis(0).unwrap(), Some(Duration::ZERO));
        assert_eq!(wait_millis(u64::MAX).unwrap(), None);
        assert!(wait_millis(u64::MAX - 1).is_err());
        assert_eq!(optional_millis("x", 0).unwrap(), None);
        assert!(optional_millis("x", 1 << 60).is_err());
    }

    #[test]
    fn strings_are_checked() {
        // SAFETY: NULL and static NUL-terminated strings.
        unsafe {
            assert!(str_arg("name", std::ptr::null()).is_err());
            assert!(str_arg("name", c"\xff\xfe".as_ptr()).is_err());
            assert_eq!(str_arg("name", c"ok".as_ptr()).unwrap(), "ok");
        }
        assert!(Out::<u64>::new("out", std::ptr::null_mut()).is_err());
    }
}
