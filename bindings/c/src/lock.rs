//! `redlatch_lock`: a named lock (lease, reentrant, fair, or one side of a read/write lock)
//! with its options, and acquiring it.
//!
//! Ownership: made by `redlatch_lock_new` / `redlatch_rlock_new` / `redlatch_fair_lock_new` /
//! `redlatch_rw_lock_read` / `redlatch_rw_lock_write` (boxed), freed by `redlatch_lock_free`,
//! which first releases whatever is still held through the handle.
//!
//! Threads: a lock handle may be shared by threads, like a `pthread_mutex_t`. Each acquisition
//! belongs to its owner - the calling thread, or the handle's `owner_id` when one was given -
//! and release, extend, fencing token, owned and is-lost act on that owner's most recent hold.
//! Only `redlatch_lock_free` must come after every other call on the handle has returned.

use redlatch::blocking::{self, Guard};
use redlatch::{Error, Reason, Result};
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::Duration;

use crate::callback::{in_callback, redlatch_lost_callback, LostCallback};
use crate::client::redlatch_client;
use crate::error::redlatch_status;
use crate::ffi::{arg, wait_millis, Out};
use crate::fork::{park, Origin};
use crate::hold::{thread_owner, Holds};
use crate::panic::{boundary, boundary_value, boundary_void};
use crate::settings::{new_lock, Maker};

/// `wait_ms` value meaning "wait until acquired" (`UINT64_MAX`).
pub const REDLATCH_WAIT_FOREVER: u64 = u64::MAX;

/// Largest lease or wait in ms: 2^53 - 1, the largest integer exact in every redlatch
/// language. Larger values (other than `REDLATCH_WAIT_FOREVER` for waits) are
/// `REDLATCH_INVALID_ARGUMENT`.
pub const REDLATCH_MAX_DURATION_MS: u64 = 9_007_199_254_740_991_u64;

/// Largest explicit `owner_id` (2^63 - 1); larger values are reserved for thread owners.
pub const REDLATCH_MAX_OWNER_ID: u64 = 9_223_372_036_854_775_807_u64;

/// Lock settings. Get defaults from `redlatch_lock_options_default()` and change fields;
/// passing NULL means the defaults too. Note that a zero-initialised struct has `wait_ms` 0,
/// which means one try, not the default wait-forever.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct redlatch_lock_options {
    /// Fixed lease in ms: Redis drops the lock that long after acquire (or the last extend)
    /// unless released; no renewal. 0 = watchdog mode (default): lease = the client's watchdog
    /// timeout, renewed every third of it while held.
    pub lease_ms: u64,
    /// How long `redlatch_lock_acquire` may block: 0 = one try, `REDLATCH_WAIT_FOREVER`
    /// (default) = until acquired.
    pub wait_ms: u64,
    /// Reentrant locks: who owns the holds, 1..=`REDLATCH_MAX_OWNER_ID`, for callers that map
    /// their own tasks or threads to owners; any thread may then release them. Lease locks:
    /// the holds belong to this id instead of the calling thread. 0 (default) = the calling
    /// thread.
    pub owner_id: u64,
    /// Fenced lock: every acquire gets a fencing token (`redlatch_lock_fencing_token`).
    /// Single-node clients only. A re-entry of a reentrant lock gets the outer hold's token.
    pub fenced: bool,
    /// Fenced locks: the fencing counter key `redisson_lock_token:{name}` expires this many ms
    /// after the last fenced acquire. 0 (default): it persists, one key per name ever fenced.
    /// Not 0 without `fenced`: `REDLATCH_INVALID_ARGUMENT` when the handle is made.
    /// Hazard: after it expired, tokens start again at 1, so a resource that remembers a
    /// higher token rejects new holders until the counter catches up, and one that forgot
    /// may accept an old holder's higher token; use a TTL far longer than any hold, pause and
    /// resource memory (days).
    pub fence_ttl_ms: u64,
}

impl Default for redlatch_lock_options {
    fn default() -> Self {
        redlatch_lock_options {
            lease_ms: 0,
            wait_ms: REDLATCH_WAIT_FOREVER,
            owner_id: 0,
            fenced: false,
            fence_ttl_ms: 0,
        }
    }
}

/// A lock handle (opaque). Thread-safe except for `redlatch_lock_free`.
pub struct redlatch_lock {
    pub(crate) base: blocking::Lock,
    pub(crate) reentrant: bool,
    pub(crate) fenced: bool,
    pub(crate) owner_id: Option<u64>,
    /// Shared with the multi-locks made of this handle (a lease member they must not wait for).
    pub(crate) holds: Arc<Holds>,
    pub(crate) lost: Arc<LostCallback>,
    pub(crate) origin: Origin,
}

// The thread-safety promised above (shared by threads, freed by one), checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_lock>();
};

impl redlatch_lock {
    /// Who the calling thread acts as: the explicit owner id, else its thread number.
    pub(crate) fn owner(&self) -> u64 {
        self.owner_id.unwrap_or_else(thread_owner)
    }

    pub(crate) fn not_held(&self) -> Error {
        let who = match self.owner_id {
            Some(id) => format!("owner id {id}"),
            None => "this thread".to_owned(),
        };
        Error::not_owned(
            false,
            Reason::NeverHeld,
            format!(
                "lock {:?} is not held by {who} through this handle",
                self.base.as_async().name()
            ),
        )
    }

    /// The core lock acting for `owner` (reentrant locks take the owner to Redis).
    pub(crate) fn core_lock(&self, owner: u64) -> blocking::Lock {
        if self.reentrant {
            self.base.clone().owner(owner)
        } else {
            self.base.clone()
        }
    }

    fn acquire(&self, how: How) -> Result<bool> {
        self.origin.check("lock")?;
        let owner = self.owner();
        if !self.reentrant && self.holds.has_live(owner) {
            return Err(Error::invalid(format!(
                "lock {:?} is already held by this owner through this handle and is not \
                 reentrant (use redlatch_rlock_new for reentrancy)",
                self.base.as_async().name()
            )));
        }
        let lock = self.core_lock(owner);
        let guard: Guard = match how {
            How::Configured => lock.acquire()?,
            How::Wait(wait) => lock.acquire_with_wait(wait)?,
            How::Try => match lock.try_acquire()? {
                Some(g) => g,
                None => return Ok(false),
            },
        };
        self.holds.push(owner, guard, |g| self.lost.watch(g));
        Ok(true)
    }

    /// Releases everything still held through the handle (for free).
    fn close(self) {
        self.lost.set(None, std::ptr::null_mut());
        // Best effort: a hold may already be gone (expired, lost); an unknown outcome goes on
        // in the background. No caller is left to tell. All at once: one network timeout in
        // all when Redis does not answer.
        let holds = self.holds.drain();
        let _ = Guard::release_all_final(holds.iter().map(|g| &**g));
    }
}

enum How {
    Configured,
    Wait(Option<Duration>),
    Try,
}

/// The default lock options: watchdog lease, wait forever, not fenced, thread owner.
#[no_mangle]
pub extern "C" fn redlatch_lock_options_default() -> redlatch_lock_options {
    boundary_value(redlatch_lock_options::default(), redlatch_lock_options::default)
}

/// Makes a lease lock on key `name`, wire-compatible with redis-py and node-redlock locks
/// (a string key holding a random token). Not reentrant: a second acquire by the owner that
/// holds it through this handle returns `REDLATCH_INVALID_ARGUMENT` at once.
///
/// Sends nothing to Redis. `opts` may be NULL (defaults). On success `*out` receives a new
/// handle, owned by the caller and freed with `redlatch_lock_free`; on failure it is not written.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT`: NULL argument, non-UTF-8, empty or over 4096-byte
/// name, lease or wait above `REDLATCH_MAX_DURATION_MS`, `owner_id` above
/// `REDLATCH_MAX_OWNER_ID`, `fenced` on a quorum client, a client from a parent process.
///
/// # Safety
/// `client` NULL or valid; `name` NULL or a NUL-terminated string; `opts` NULL or valid;
/// `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_new(
    client: *const redlatch_client,
    name: *const c_char,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { new_lock(client, name, opts, out, Maker::Lease) })
}

/// Makes a reentrant lock on key `name` in Redisson's RLock layout (a hash of owner id to
/// hold count): the owner that holds it may acquire it again, and each acquire needs its own
/// release. The owner is the calling thread (across all handles of this client), or
/// `opts->owner_id`. Arguments and errors as `redlatch_lock_new`.
///
/// # Safety
/// As `redlatch_lock_new`.
#[no_mangle]
pub unsafe extern "C" fn redlatch_rlock_new(
    client: *const redlatch_client,
    name: *const c_char,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { new_lock(client, name, opts, out, Maker::Reentrant) })
}

/// Makes a fair lock on key `name`, Redisson's RFairLock: reentrant per owner like
/// `redlatch_rlock_new`, and waiters are granted the lock strictly in the order they queued
/// (first come, first served), across processes and languages, using Redisson 4.7's queue list
/// `redisson_lock_queue:{name}` and timeout set `redisson_lock_timeout:{name}`
/// (docs/family-protocol.md). A waiter whose wait runs out leaves the queue at once; a waiter
/// that dies stays queued until its slot passes, so it stalls those behind it: its slot ends
/// its wait (`wait_ms`; 300000 ms, Redisson's `fairLockWaitTimeout`, when it waits forever)
/// after the holder's remaining lease as it was when the waiter queued (Redisson's timeout
/// arithmetic: a release before that lease ends does not shorten it).
/// `redlatch_lock_try_acquire` never queues (Redisson's `tryLock()`).
///
/// Arguments and errors as `redlatch_lock_new`; acquiring on a quorum client fails with
/// `REDLATCH_INVALID_ARGUMENT` (fair and read/write locks need a single-node, Cluster or
/// Sentinel client).
///
/// # Safety
/// As `redlatch_lock_new`.
#[no_mangle]
pub unsafe extern "C" fn redlatch_fair_lock_new(
    client: *const redlatch_client,
    name: *const c_char,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { new_lock(client, name, opts, out, Maker::Fair) })
}

/// Frees a lock handle, first releasing every hold still made through it (best effort, all
/// at once, blocking up to one network timeout in all) and unregistering the lost callback: when it returns, the
/// callback is not running and will not run again. NULL is a no-op. Call it once, after every
/// other call on the handle has returned.
///
/// # Safety
/// `lock` must be NULL or a handle from a `redlatch_lock*` constructor, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_free(lock: *mut redlatch_lock) {
    boundary_void(|| {
        if lock.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `new_lock`, freed only here (caller's contract).
        let lock = unsafe { Box::from_raw(lock) };
        if lock.origin.is_foreign() {
            park(lock);
        } else if in_callback() {
            // Releasing blocks on the runtime, which its own threads cannot do; the helper
            // thread also waits for the running callback to return (see callback.rs).
            std::thread::spawn(move || (*lock).close());
        } else {
            (*lock).close();
        }
    })
}

/// Acquires the lock, blocking up to the lock's `wait_ms` (forever by default).
///
/// Errors: `REDLATCH_NOT_ACQUIRED` (the wait ran out); `REDLATCH_INVALID_ARGUMENT` (NULL; a
/// lease lock already held by this owner through this handle); `REDLATCH_CONNECTION`,
/// `REDLATCH_REDIS`, `REDLATCH_QUORUM` (Redis kept failing for a network timeout).
///
/// # Safety
/// `lock` must be NULL or a valid handle.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_acquire(lock: *const redlatch_lock) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        lock.acquire(How::Configured).map(drop)
    })
}

/// Acquires the lock, blocking up to `wait_ms` instead of the lock's wait: 0 = one try
/// (`REDLATCH_NOT_ACQUIRED` when busy), `REDLATCH_WAIT_FOREVER` = until acquired.
/// Errors as `redlatch_lock_acquire`, plus `REDLATCH_INVALID_ARGUMENT` for a wait above
/// `REDLATCH_MAX_DURATION_MS`.
///
/// # Safety
/// `lock` must be NULL or a valid handle.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_acquire_for(
    lock: *const redlatch_lock,
    wait_ms: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let wait = wait_millis(wait_ms)?;
        lock.acquire(How::Wait(wait)).map(drop)
    })
}

/// One attempt, no waiting: `*acquired` receives true when the lock was acquired, false when
/// someone else holds it. Errors as `redlatch_lock_acquire` (never `REDLATCH_NOT_ACQUIRED`).
///
/// # Safety
/// `lock` NULL or valid; `acquired` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_try_acquire(
    lock: *const redlatch_lock,
    acquired: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        let acquired = Out::new("acquired", acquired)?;
        let got = lock.acquire(How::Try)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { acquired.write(got) };
        Ok(())
    })
}

/// Sets the callback called when a hold made through this handle is lost (the watchdog found
/// the key gone or taken, a fixed lease ran out, or an extend was refused), for present and
/// future holds; NULL `callback` removes it. When this returns, the previous callback is not
/// running and will not be called again.
///
/// The callback runs on one of the client's runtime threads (named `redlatch`), never on the
/// thread that acquired, once per lost hold, with `user_data` and the lock's name (valid during
/// the call only). It must return quickly and may only call `redlatch_last_error`,
/// `redlatch_status_name`, `redlatch_version` and the `_free` functions; other redlatch calls
/// return `REDLATCH_INVALID_ARGUMENT` there. `user_data` must be usable from that thread.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (a NULL `lock`, a handle of a parent process, a call
/// from inside a callback).
///
/// # Safety
/// `lock` NULL or valid; `callback` NULL or a function with this signature, callable (with
/// `user_data`) until it is replaced or the handle is freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_lock_set_lost_callback(
    lock: *const redlatch_lock,
    callback: redlatch_lost_callback,
    user_data: *mut c_void,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let lock = unsafe { arg("lock", lock) }?;
        lock.lost.set(callback, user_data);
        if callback.is_some() {
            lock.holds.watch_all(|g| lock.lost.watch(g));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hold::THREAD_OWNER_BASE;

    #[test]
    fn constants_match_the_core() {
        assert_eq!(
            REDLATCH_MAX_DURATION_MS,
            redlatch::protocol::timing::MAX_DURATION_MS
        );
        assert_eq!(REDLATCH_MAX_OWNER_ID, THREAD_OWNER_BASE - 1);
        let d = redlatch_lock_options_default();
        assert_eq!(
            (d.lease_ms, d.wait_ms, d.owner_id, d.fenced, d.fence_ttl_ms),
            (0, u64::MAX, 0, false, 0)
        );
    }
}
