//! Checking Python arguments before anything reaches Redis: durations in float seconds, lock
//! names, and the owner numbers that make each thread or task its own owner.
//!
//! Durations follow shared/API.md: lease > 0, wait >= 0, both at most 2^53 - 1 ms; positive
//! sub-millisecond values round up to 1 ms; NaN, infinities, negatives, zero leases and
//! `bool` are refused (`ValueError`, or `TypeError` for a non-number).

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBool;
use redlatch::protocol::{keys, timing};
use std::time::Duration;

/// Converts `value` (seconds, int or float) to a `Duration`; `allow_zero` for waits.
///
/// # Errors
/// `TypeError` for a non-number (or a bool); `ValueError` for NaN, infinity, a negative
/// value, zero when not allowed, or more than 2^53 - 1 ms.
pub(crate) fn seconds(what: &str, value: &Bound<'_, PyAny>, allow_zero: bool) -> PyResult<Duration> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a number of seconds, not bool"
        )));
    }
    let secs: f64 = match value.extract() {
        Ok(v) => v,
        Err(e) if e.is_instance_of::<PyOverflowError>(value.py()) => {
            return Err(PyValueError::new_err(format!("{what} is too large")))
        }
        Err(_) => {
            return Err(PyTypeError::new_err(format!(
                "{what} must be a number of seconds (int or float), not {}",
                value.get_type().name()?
            )))
        }
    };
    seconds_f64(what, secs, allow_zero)
}

/// As [`seconds`], from a float.
pub(crate) fn seconds_f64(what: &str, secs: f64, allow_zero: bool) -> PyResult<Duration> {
    if secs.is_nan() {
        return Err(PyValueError::new_err(format!("{what} must be a number, not NaN")));
    }
    if secs < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{what} must not be negative (got {})",
            shown(secs)
        )));
    }
    let max_secs = timing::MAX_DURATION_MS as f64 / 1000.0;
    if secs > max_secs {
        return Err(PyValueError::new_err(format!(
            "{what} of {} s exceeds the maximum of {max_secs} s (2^53 - 1 ms)",
            shown(secs)
        )));
    }
    let mut d = Duration::from_secs_f64(secs);
    if secs > 0.0 && d.is_zero() {
        d = Duration::from_nanos(1); // rounds up to 1 ms on the wire
    }
    timing::to_millis(what, d, allow_zero).map_err(|e| PyValueError::new_err(e.message().to_owned()))?;
    Ok(d)
}

/// `secs` for an error message: plain notation while short, scientific beyond that (so
/// `1e300` is not printed as 301 digits).
fn shown(secs: f64) -> String {
    if secs.abs() < 1e15 {
        secs.to_string()
    } else {
        format!("{secs:e}")
    }
}

/// An optional duration argument (`None` stays `None`).
pub(crate) fn opt_seconds(
    what: &str,
    value: Option<&Bound<'_, PyAny>>,
    allow_zero: bool,
) -> PyResult<Option<Duration>> {
    match value {
        Some(v) if !v.is_none() => seconds(what, v, allow_zero).map(Some),
        _ => Ok(None),
    }
}

/// A flag option: `True` or `False` only (`fenced="no"` was once a fenced lock).
pub(crate) fn flag(what: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a bool, not {}",
            value.get_type().name()?
        )));
    }
    value.extract()
}

/// Checks a lock name (non-empty, at most 4096 bytes of UTF-8).
pub(crate) fn name(name: &str) -> PyResult<()> {
    keys::validate_name(name).map_err(|e| PyValueError::new_err(e.message().to_owned()))
}

/// `acquire(blocking, timeout)` with `threading.Lock` semantics, resolved to a wait
/// (`None` = forever). `timeout=None` means the lock's own wait (`default`), `-1` forever.
pub(crate) fn acquire_wait(
    blocking: bool,
    timeout: Option<&Bound<'_, PyAny>>,
    default: Option<Duration>,
) -> PyResult<Option<Duration>> {
    let timeout = match timeout {
        Some(t) if !t.is_none() => Some(t),
        _ => None,
    };
    if !blocking {
        if let Some(t) = timeout {
            if !is_minus_one(t)? {
                return Err(PyValueError::new_err(
                    "can't specify a timeout for a non-blocking call",
                ));
            }
        }
        return Ok(Some(Duration::ZERO));
    }
    match timeout {
        None => Ok(default),
        Some(t) if is_minus_one(t)? => Ok(None),
        Some(t) => seconds("timeout", t, true).map(Some),
    }
}

fn is_minus_one(t: &Bound<'_, PyAny>) -> PyResult<bool> {
    if t.is_instance_of::<PyBool>() {
        return Ok(false);
    }
    Ok(t.extract::<f64>().is_ok_and(|v| v == -1.0))
}

/// A fresh owner number (the async layer gives one to each task): the core's process-wide
/// owner space, shared by threads, tasks and `rlock` handles.
pub(crate) fn new_owner() -> u64 {
    redlatch::new_owner()
}

/// This OS thread's owner number, assigned on first use and never another thread's.
pub(crate) fn thread_owner() -> u64 {
    redlatch::thread_owner()
}

/// PEM text given as `str` or `bytes`.
pub(crate) struct Pem(pub(crate) Vec<u8>);

impl<'a, 'py> FromPyObject<'a, 'py> for Pem {
    type Error = PyErr;

    fn extract(ob: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.extract::<String>() {
            return Ok(Pem(s.into_bytes()));
        }
        if let Ok(b) = ob.extract::<Vec<u8>>() {
            return Ok(Pem(b));
        }
        Err(PyTypeError::new_err(format!(
            "PEM must be str or bytes, not {}",
            ob.get_type().name()?
        )))
    }
}

/// A count of permits (or a latch count): a Python `int` in 1 ..= 2^31 - 1 (Redisson takes
/// Java `int`), checked by the core's rule (`family::validate_count`, same message in every
/// binding) before anything reaches Redis.
///
/// # Errors
/// `TypeError` for a non-int (a `bool` included: `acquire(False)` is a `threading` habit that
/// would otherwise mean "0 permits"); `ValueError` outside the range.
pub(crate) fn count(what: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<pyo3::types::PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int, not {}",
            value.get_type().name()?
        )));
    }
    let n: i128 = value
        .extract()
        .map_err(|_| PyValueError::new_err(format!("{what} is too large")))?;
    // The core's message for every value it can see; a negative one in the same words.
    let checked = u64::try_from(n).unwrap_or(0);
    redlatch::protocol::family::validate_count(what, checked).map_err(|e| {
        let message = e.message().replace(", got 0", &format!(", got {n}"));
        PyValueError::new_err(message)
    })?;
    Ok(checked)
}
