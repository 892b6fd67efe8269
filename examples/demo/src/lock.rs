//! The only place the Rust workers call redlatch, kept small so the lock usage reads at a glance.

use crate::worker::{BoxError, LEASE, LOCK_NAME};

/// How the Rust workers lock, for the report header.
pub const LOCK_IMPL: &str = "redlatch::blocking";

/// A connected lock client for [`LOCK_NAME`].
pub struct Locker {
    client: redlatch::blocking::Client,
}

impl Locker {
    /// Connects the lock client to the single node at `url`.
    pub fn connect(url: &str) -> Result<Locker, BoxError> {
        Ok(Locker {
            client: redlatch::blocking::Client::connect(url)?,
        })
    }

    /// Runs `section` while holding [`LOCK_NAME`] (lease [`LEASE`], waiting as long as it
    /// takes), then releases it. A failed section is still released; its error wins.
    pub fn with_lock<T>(&self, section: impl FnOnce() -> Result<T, BoxError>) -> Result<T, BoxError> {
        let guard = self.client.lock(LOCK_NAME).lease(LEASE).acquire()?;
        let result = section();
        let released = guard.release();
        let value = result?;
        released?;
        Ok(value)
    }
}
