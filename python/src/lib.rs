//! `redlatch._native`: the private native module of the `redlatch` Python package.
//!
//! The public API is Python (`python/redlatch/`): it decides which thread or task owns a hold
//! and adds context managers and the exception tree. This module converts types, releases the
//! GIL around every blocking call, bridges futures to asyncio (`aio.rs`) and keeps the tokio runtime and
//! connections valid across `fork()`. Lock logic is the core's (`redlatch` crate).

mod aio;
mod args;
mod client;
mod errors;
mod family;
mod hold;
mod latch;
mod lock;
mod loop_tasks;
mod multi;
mod permit;
mod runtime;
mod semaphore;

use pyo3::prelude::*;

/// A fresh owner number for a reentrant lock (the asyncio layer gives one to each task).
#[pyfunction]
fn new_owner() -> u64 {
    args::new_owner()
}

/// The calling thread's owner number (what sync reentrant locks use).
#[pyfunction]
fn thread_owner() -> u64 {
    args::thread_owner()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::Client>()?;
    m.add_class::<lock::Lock>()?;
    m.add_class::<hold::Hold>()?;
    m.add_class::<semaphore::Semaphore>()?;
    m.add_class::<semaphore::Grant>()?;
    m.add_class::<permit::PermitSemaphore>()?;
    m.add_class::<permit::Permit>()?;
    m.add_class::<latch::CountDownLatch>()?;
    m.add_class::<multi::MultiLock>()?;
    m.add_class::<multi::MultiHold>()?;
    m.add_function(wrap_pyfunction!(new_owner, m)?)?;
    m.add_function(wrap_pyfunction!(thread_owner, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::shutdown_runtime, m)?)?;
    m.add_function(wrap_pyfunction!(aio::abandon, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
