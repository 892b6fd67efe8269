//! Core errors as Python exceptions.
//!
//! The exception classes live in Python (`redlatch/_errors.py`), because the tree needs
//! multiple inheritance (`NotAcquiredError` is also a `TimeoutError`, `RedisConnectionError`
//! also a `ConnectionError`), which reads far better as Python than as type objects built by
//! hand. This module looks them up once and maps each core [`ErrorKind`] to one of them
//! mechanically; every instance gets `.code`, the kind's stable number (C status value), and
//! `NotOwnedError` / `LockLostError` get `.reason`, the core's word for why.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyType};
use redlatch::{Error, ErrorKind};

const MODULE: &str = "redlatch._errors";

static LOCK_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static NOT_ACQUIRED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static NOT_OWNED: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static LOCK_LOST: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static QUORUM: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CONNECTION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static NO_PERMISSION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static OUT_OF_MEMORY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static KEY_CONFLICT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static WOULD_DEADLOCK: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn class<'py>(py: Python<'py>, kind: ErrorKind) -> PyResult<&'py Bound<'py, PyType>> {
    let (cell, name) = match kind {
        ErrorKind::NotAcquired => (&NOT_ACQUIRED, "NotAcquiredError"),
        ErrorKind::NotOwned => (&NOT_OWNED, "NotOwnedError"),
        ErrorKind::LockLost => (&LOCK_LOST, "LockLostError"),
        ErrorKind::Quorum => (&QUORUM, "QuorumError"),
        ErrorKind::Connection => (&CONNECTION, "RedisConnectionError"),
        ErrorKind::NoPermission => (&NO_PERMISSION, "NoPermissionError"),
        ErrorKind::OutOfMemory => (&OUT_OF_MEMORY, "OutOfMemoryError"),
        ErrorKind::KeyConflict => (&KEY_CONFLICT, "KeyConflictError"),
        ErrorKind::WouldDeadlock => (&WOULD_DEADLOCK, "WouldDeadlockError"),
        _ => (&LOCK_ERROR, "LockError"),
    };
    cell.import(py, MODULE, name)
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let message = err.message().to_owned();
    if err.kind() == ErrorKind::InvalidArgument {
        return Ok(PyValueError::new_err(message));
    }
    let cls = class(py, err.kind())?;
    let nodes = PyList::empty(py);
    for n in err.nodes() {
        let outcome = match &n.result {
            Ok(()) => None,
            Err(why) => Some(why.as_str()),
        };
        nodes.append(PyTuple::new(
            py,
            [
                n.node.as_str().into_pyobject(py)?.into_any(),
                outcome.into_pyobject(py)?,
            ],
        )?)?;
    }
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("code", err.code())?;
    if let Some(reason) = err.reason() {
        kwargs.set_item("reason", reason.as_str())?;
    }
    if !err.nodes().is_empty() {
        kwargs.set_item("nodes", nodes)?;
    }
    let exc = cls.call((message,), Some(&kwargs))?;
    Ok(PyErr::from_value(exc))
}

/// The Python exception for a core error (`ValueError` for `InvalidArgument`).
pub(crate) fn to_py(err: Error) -> PyErr {
    Python::attach(|py| build(py, &err).unwrap_or_else(|e| e))
}

/// `NotOwnedError` (reason `never_held`) raised by the binding itself: no hold to act on.
pub(crate) fn not_owned(message: impl Into<String>) -> PyErr {
    to_py(Error::not_owned(false, redlatch::Reason::NeverHeld, message))
}

/// Extension so `?` maps core results in one call.
pub(crate) trait IntoPy<T> {
    /// Maps the core error, if any, to its Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
