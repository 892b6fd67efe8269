//! What the semaphore, permit, latch and multi-lock classes share: a core handle per process
//! (remade in a forked child, as the client is).

use crate::client::Shared;
use crate::runtime::pid;
use pyo3::prelude::*;
use std::sync::Mutex;

/// A core handle made from this process's core client, kept so that its state (a
/// semaphore's count of held permits) lasts across calls. A forked child makes its own: the
/// parent's handle is leaked, like the parent's client (`client.rs`).
pub(crate) struct PerProcess<T: Clone> {
    slot: Mutex<Option<(u32, T)>>,
}

impl<T: Clone> PerProcess<T> {
    pub(crate) fn new() -> PerProcess<T> {
        PerProcess {
            slot: Mutex::new(None),
        }
    }

    /// This process's handle (made with `make` on first use) and the runtime to run it on.
    pub(crate) fn get(
        &self,
        shared: &Shared,
        make: impl FnOnce(&redlatch::Client) -> T,
    ) -> PyResult<(T, tokio::runtime::Handle)> {
        let (client, rt) = shared.client()?;
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some((p, handle)) if *p == pid() => return Ok((handle.clone(), rt)),
            _ => {}
        }
        if let Some(parent) = slot.take() {
            std::mem::forget(parent);
        }
        let handle = make(&client);
        *slot = Some((pid(), handle.clone()));
        Ok((handle, rt))
    }
}

impl<T: Clone> Drop for PerProcess<T> {
    fn drop(&mut self) {
        let slot = self.slot.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(s) = slot {
            if s.0 != pid() {
                std::mem::forget(s);
            }
        }
    }
}
