//! The lost-lock callback: how C learns at once that a hold is gone.
//!
//! Once a handle has had a callback, every hold made through it is watched (the core's
//! `Guard::on_lost`, one small task per hold that ends with the hold; see `hold.rs` for why
//! not before). When the core sees a hold lost - the watchdog found
//! the key gone or taken, a fixed lease's validity ran out, or an extend was refused - the
//! handle's current callback is called with its `user_data` and the lock's name.
//!
//! Threads: the callback runs on one of the client's runtime threads (named `redlatch`),
//! never on the thread that acquired. It must return quickly and must not call redlatch
//! functions that return a status (they return `REDLATCH_INVALID_ARGUMENT` there, because
//! blocking on the runtime from its own thread would deadlock); `redlatch_last_error`,
//! `redlatch_status_name`, `redlatch_version` and the `_free` functions are allowed (a free
//! made there completes on a helper thread once the callback has returned).
//!
//! The callback is called with the slot's mutex held. That is what makes
//! `redlatch_lock_set_lost_callback(lock, NULL, NULL)` and `redlatch_lock_free` safe points: when
//! they return, the callback is not running and will not be called again, so `user_data` may
//! be freed.

use redlatch::blocking::Guard;
use std::cell::Cell;
use std::ffi::{c_char, c_void, CString};
use std::sync::{Arc, Mutex, MutexGuard};

/// `void (*)(void *user_data, const char *name)`: called once per hold that is lost.
///
/// `name` is the lock's name, valid only during the call. See
/// `redlatch_lock_set_lost_callback` for the thread it runs on and what it may do.
pub type redlatch_lost_callback = Option<unsafe extern "C" fn(user_data: *mut c_void, name: *const c_char)>;

thread_local! {
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// `true` while this thread runs a lost-lock or warning callback.
pub(crate) fn in_callback() -> bool {
    IN_CALLBACK.try_with(Cell::get).unwrap_or(false)
}

/// Marks this thread as running a callback (until [`leave_callback`]).
pub(crate) fn enter_callback() {
    IN_CALLBACK.with(|c| c.set(true));
}

/// Ends [`enter_callback`].
pub(crate) fn leave_callback() {
    IN_CALLBACK.with(|c| c.set(false));
}

struct Registered {
    callback: unsafe extern "C" fn(*mut c_void, *const c_char),
    user_data: *mut c_void,
}

// SAFETY: `user_data` is the caller's pointer, handed back to its callback on a runtime thread;
// `redlatch_lock_set_lost_callback` documents that it must be usable from another thread.
unsafe impl Send for Registered {}

/// The callback slot of one lock handle, shared with the watchers of its holds.
pub(crate) struct LostCallback {
    slot: Mutex<Option<Registered>>,
    name: CString,
}

impl LostCallback {
    /// An empty slot for lock `name`.
    pub(crate) fn new(name: &str) -> Arc<LostCallback> {
        Arc::new(LostCallback {
            slot: Mutex::new(None),
            // Names come from C strings, so they have no interior NUL.
            name: CString::new(name).unwrap_or_default(),
        })
    }

    fn slot(&self) -> MutexGuard<'_, Option<Registered>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets or clears the callback; waits for a running call to return first.
    pub(crate) fn set(&self, callback: redlatch_lost_callback, user_data: *mut c_void) {
        *self.slot() = callback.map(|callback| Registered { callback, user_data });
    }

    /// Watches one hold: calls the callback (the one set at that moment) if it is lost.
    pub(crate) fn watch(self: &Arc<Self>, guard: &Guard) {
        let me = Arc::clone(self);
        guard.on_lost(move || me.fire());
    }

    fn fire(&self) {
        let slot = self.slot();
        if let Some(r) = slot.as_ref() {
            enter_callback();
            // SAFETY: a C function pointer with the documented signature, its user_data, and
            // a NUL-terminated name that outlives the call. C code cannot unwind into us.
            unsafe { (r.callback)(r.user_data, self.name.as_ptr()) };
            leave_callback();
        }
    }
}
