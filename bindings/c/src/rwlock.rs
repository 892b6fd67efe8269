//! `redlatch_rw_lock`: a read/write lock (Redisson's RReadWriteLock) whose two sides are
//! ordinary `redlatch_lock` handles, so acquire, release, extend, inspection and the lost
//! callback are the lock functions.
//!
//! Ownership: made by `redlatch_rw_lock_new` (boxed), freed by `redlatch_rw_lock_free`. The
//! lock handles made by `redlatch_rw_lock_read` / `redlatch_rw_lock_write` are the caller's,
//! freed with `redlatch_lock_free`, and may outlive the read/write handle.
//!
//! Owners: as for reentrant locks, each hold belongs to the calling thread (or the side's
//! `owner_id`), the same owner on both sides, so a thread that holds the write lock may also
//! take the read lock (Redisson's downgrade), and a thread that holds a read lock is refused the
//! write lock at once with `REDLATCH_WOULD_DEADLOCK` (Redisson would wait forever).

use redlatch::blocking;
use redlatch::Result;
use std::ffi::c_char;

use crate::client::redlatch_client;
use crate::error::redlatch_status;
use crate::ffi::{arg, opt_arg, str_arg, Out};
use crate::fork::{park, Origin};
use crate::lock::{redlatch_lock, redlatch_lock_options};
use crate::panic::{boundary, boundary_void};
use crate::settings::{build, Settings};

/// A read/write lock handle (opaque). Thread-safe except for `redlatch_rw_lock_free`.
pub struct redlatch_rw_lock {
    inner: blocking::RwLock,
    quorum: bool,
    origin: Origin,
}

// The thread-safety promised above, checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_rw_lock>();
};

/// Makes a read/write lock on key `name` in Redisson 4.7's RReadWriteLock layout (one hash with
/// a `mode` field of `read` or `write`; each read hold also has its own timeout key, so a dead
/// reader's hold expires on its own while other readers keep theirs). Many readers or one
/// writer. Sends nothing to Redis. On success `*out` receives a new handle, owned by the caller
/// and freed with `redlatch_rw_lock_free`; on failure it is not written.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT`: NULL argument, non-UTF-8, empty or over 4096-byte name,
/// a client from a parent process. Acquiring either side on a quorum client fails with
/// `REDLATCH_INVALID_ARGUMENT` (fair and read/write locks need a single-node, Cluster or
/// Sentinel client).
///
/// # Safety
/// `client` NULL or valid; `name` NULL or a NUL-terminated string; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_rw_lock_new(
    client: *const redlatch_client,
    name: *const c_char,
    out: *mut *mut redlatch_rw_lock,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let client = unsafe { arg("client", client) }?;
        // SAFETY: as above.
        let name = unsafe { str_arg("name", name) }?;
        let out = Out::new("out", out)?;
        redlatch::protocol::keys::validate_name(name)?;
        client.origin.check("client")?;
        let rw = Box::new(redlatch_rw_lock {
            inner: client.inner.rw_lock(name),
            quorum: client.inner.as_async().node_count() > 1,
            origin: client.origin,
        });
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { out.write(Box::into_raw(rw)) };
        Ok(())
    })
}

/// Which side of the read/write lock.
#[derive(Clone, Copy)]
enum Side {
    Read,
    Write,
}

/// # Safety
/// As the exported functions.
unsafe fn side(
    rw: *const redlatch_rw_lock,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
    side: Side,
) -> Result<()> {
    // SAFETY: the caller's contract (see the exports).
    let rw = unsafe { arg("rw_lock", rw) }?;
    // SAFETY: as above.
    let opts = unsafe { opt_arg(opts) };
    let out = Out::new("out", out)?;
    let settings = Settings::parse(opts, rw.quorum)?;
    rw.origin.check("read/write lock")?;
    let base = match side {
        Side::Read => rw.inner.read(),
        Side::Write => rw.inner.write(),
    };
    let lock = build(base, settings, true, rw.inner.name(), rw.origin)?;
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { out.write(Box::into_raw(lock)) };
    Ok(())
}

/// Makes a handle on the read side: a `redlatch_lock` whose acquire takes a shared read hold
/// (granted while no other owner holds the write lock), reentrant per owner. `opts` as for
/// `redlatch_rlock_new` (NULL = defaults). On success `*out` receives a new lock handle, owned
/// by the caller and freed with `redlatch_lock_free`.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL `rw_lock` or `out`, a bad option, `fenced`: read
/// holds are shared and take no fencing token, so fence the write side; a handle from a parent
/// process).
///
/// # Safety
/// `rw_lock` NULL or valid; `opts` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_rw_lock_read(
    rw_lock: *const redlatch_rw_lock,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { side(rw_lock, opts, out, Side::Read) })
}

/// Makes a handle on the write side: a `redlatch_lock` whose acquire takes the exclusive write
/// hold (no readers, no other writer), reentrant per owner. An acquire by an owner that holds a
/// read hold of this lock fails at once with `REDLATCH_WOULD_DEADLOCK`, changing nothing in
/// Redis (Redisson would wait forever). Arguments and errors as `redlatch_rw_lock_read`,
/// except that `fenced` is accepted (each write hold takes a fencing token; not on a quorum
/// client).
///
/// # Safety
/// As `redlatch_rw_lock_read`.
#[no_mangle]
pub unsafe extern "C" fn redlatch_rw_lock_write(
    rw_lock: *const redlatch_rw_lock,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
) -> redlatch_status {
    // SAFETY: the caller's contract above.
    boundary(|| unsafe { side(rw_lock, opts, out, Side::Write) })
}

/// Frees a read/write lock handle (the lock handles made from it stay usable). NULL is a no-op.
/// Call it once, after every other call on the handle has returned.
///
/// # Safety
/// `rw_lock` must be NULL or a handle from `redlatch_rw_lock_new` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_rw_lock_free(rw_lock: *mut redlatch_rw_lock) {
    boundary_void(|| {
        if rw_lock.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `redlatch_rw_lock_new`, freed only here.
        let rw = unsafe { Box::from_raw(rw_lock) };
        if rw.origin.is_foreign() {
            park(rw);
        } else if crate::callback::in_callback() {
            // Dropping what may be the last reference to the runtime on one of its threads.
            std::thread::spawn(move || drop(rw));
        }
    })
}
