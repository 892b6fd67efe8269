//! Which process made a hold or a blocking client, for the fork rule (shared/API.md, "Fork").
//!
//! `fork()` copies a process's memory but only the thread that called it: a forked child
//! inherits its parent's guards and clients, but not the runtime threads that renew, release
//! and wait for them, and the holds are the parent's, not the child's. So a hold records the
//! process that made it, and its operations in another process answer without touching Redis:
//! `owned()` is false, `release()`/`extend()` are `NotOwned` (reason `never_held`), dropping it
//! releases nothing. A blocking client records the process that built its runtime, and its
//! calls in another process fail at once with `InvalidArgument` (as the C binding's inherited
//! handles do) instead of waiting for a thread that does not exist.
//!
//! The check is `std::process::id()`, a system call (a few hundred ns; glibc does not cache
//! it), made once per hold operation or blocking call: next to a Redis round trip it is
//! noise. Caching it needs a `pthread_atfork` handler, i.e. unsafe code, which this crate
//! forbids. On wasm32 there is no fork and no process id: every origin is "here".

use crate::error::{Error, Reason};

/// The process something was made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin(#[cfg(not(target_arch = "wasm32"))] u32);

impl Origin {
    /// The current process.
    pub(crate) fn here() -> Origin {
        #[cfg(not(target_arch = "wasm32"))]
        return Origin(std::process::id());
        #[cfg(target_arch = "wasm32")]
        return Origin();
    }

    /// `true` in a forked child of the process that made it.
    pub(crate) fn is_foreign(self) -> bool {
        self != Origin::here()
    }
}

/// The message of every refusal of an inherited hold.
pub(crate) const FORKED_HOLD: &str = "a forked child does not own its parent's holds";

/// `NotOwned` (`never_held`): the answer to `release()`/`extend()` of an inherited hold.
pub(crate) fn inherited_hold(what: &str, name: &str) -> Error {
    Error::not_owned(
        false,
        Reason::NeverHeld,
        format!("cannot {what} {name:?}: {FORKED_HOLD} (made before fork() in the parent process)"),
    )
}
