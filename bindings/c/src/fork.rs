//! What a forked child may do with handles it inherited from its parent.
//!
//! A client's runtime threads do not survive `fork()`, so in the child an inherited handle
//! cannot talk to Redis, and its holds are the parent's, not the child's (shared/API.md,
//! "Fork"). Every call on an inherited handle is answered without touching the runtime:
//! release/extend give `NOT_OWNED`, `owned` gives false, anything else `INVALID_ARGUMENT`.
//! Freeing an inherited handle parks it here instead of running its destructor (which would
//! wait for threads that do not exist in the child). New clients made in the child work.

use redlatch::{Error, Reason};
use std::any::Any;
use std::sync::Mutex;

/// The process a handle was made in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin(u32);

impl Origin {
    /// The current process.
    pub(crate) fn here() -> Origin {
        Origin(std::process::id())
    }

    /// `true` in a forked child of the process that made the handle.
    pub(crate) fn is_foreign(self) -> bool {
        self.0 != std::process::id()
    }

    /// `InvalidArgument` when the handle came from the parent process.
    pub(crate) fn check(self, what: &str) -> Result<(), Error> {
        if self.is_foreign() {
            return Err(Error::invalid(format!(
                "this {what} was created before fork() in the parent process; create a new \
                 client in the child"
            )));
        }
        Ok(())
    }

    /// `NotOwned` when the handle came from the parent process.
    pub(crate) fn check_owned(self) -> Result<(), Error> {
        if self.is_foreign() {
            return Err(Error::not_owned(
                false,
                Reason::NeverHeld,
                "a forked child does not own its parent's holds",
            ));
        }
        Ok(())
    }
}

static PARKED: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

/// Keeps an inherited handle alive (and reachable) until the child exits.
pub(crate) fn park(value: Box<dyn Any + Send>) {
    PARKED.lock().unwrap_or_else(|p| p.into_inner()).push(value);
}
