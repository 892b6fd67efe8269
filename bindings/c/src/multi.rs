//! `redlatch_multi_lock`: several locks taken as one (Redisson's RedissonMultiLock): all or
//! nothing, in one sorted order (so two multi-locks on overlapping names taken in opposite
//! orders never deadlock), released together; a failure part way rolls back what was taken.
//!
//! Ownership: made by `redlatch_multi_lock_new` / `redlatch_multi_lock_new_names` (boxed),
//! freed by `redlatch_multi_lock_free`, which first releases the set when it is held. The
//! member lock handles given to `redlatch_multi_lock_new` stay the caller's.
//!
//! Holds: a multi-lock handle has at most one hold at a time, whichever thread took it, and any
//! thread may release it (it is not reentrant: a second acquire while held is refused).

use redlatch::blocking::{self, MultiGuard};
use redlatch::{Error, Reason, Result};
use std::ffi::c_char;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::client::redlatch_client;
use crate::error::redlatch_status;
use crate::ffi::{arg, opt_arg, str_arg, wait_millis, Out};
use crate::fork::{park, Origin};
use crate::hold::{thread_owner, Holds};
use crate::lock::{redlatch_lock, redlatch_lock_options};
use crate::panic::{boundary, boundary_void};
use crate::settings::Settings;

/// A multi-lock handle (opaque). Thread-safe except for `redlatch_multi_lock_free`.
pub struct redlatch_multi_lock {
    inner: blocking::MultiLock,
    /// Serializes acquires, so at most one hold exists (held only while acquiring).
    acquiring: Mutex<()>,
    /// The hold (held only briefly).
    held: Mutex<Option<MultiGuard>>,
    /// The lease-lock members given as handles: one held through its handle by the acquiring
    /// owner would be waited for by the multi-lock, for ever without a wait (a Python user
    /// trial of stop 46 found that in Python; the C handle had the same gap).
    lease_members: Vec<LeaseMember>,
    origin: Origin,
}

/// A lease-lock member's handle state: its name and holds, and whose holds count.
struct LeaseMember {
    name: String,
    holds: Arc<Holds>,
    owner_id: Option<u64>,
}

// The thread-safety promised above, checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_multi_lock>();
};

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// # Safety
/// `array` NULL or `count` readable elements alive for `'a`.
unsafe fn list<'a, T>(array: *const T, count: usize, what: &str) -> Result<&'a [T]> {
    if array.is_null() {
        return Err(Error::invalid(format!("{what} is NULL")));
    }
    if count == 0 {
        return Err(Error::invalid("a multi-lock needs at least one lock"));
    }
    // SAFETY: non-NULL, and the caller guarantees `count` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(array, count) })
}

/// Applies the options (only `lease_ms` and `wait_ms`) and boxes the handle into `out`.
fn finish(
    mut inner: blocking::MultiLock,
    lease_members: Vec<LeaseMember>,
    opts: Option<&redlatch_lock_options>,
    quorum: bool,
    origin: Origin,
    out: Out<*mut redlatch_multi_lock>,
) -> Result<()> {
    let (lease, wait) = Settings::parse(opts, quorum)?.lease_and_wait_only()?;
    if let Some(lease) = lease {
        inner = inner.lease(lease);
    }
    if let Some(wait) = wait {
        inner = inner.wait(wait);
    }
    let multi = Box::new(redlatch_multi_lock {
        inner,
        acquiring: Mutex::new(()),
        held: Mutex::new(None),
        lease_members,
        origin,
    });
    // SAFETY: checked non-NULL by `Out::new`; writable by the caller's contract.
    unsafe { out.write(Box::into_raw(multi)) };
    Ok(())
}

/// Makes a multi-lock of `count` lock handles of `client` (any kinds: lease, reentrant, fair,
/// read or write locks). Reentrant kinds act for the owner each handle has when this is called
/// (its `owner_id`, else the calling thread). The multi-lock's holds are its own: the member
/// handles do not see them (release the set with `redlatch_multi_lock_release`). `opts` may be NULL; only `lease_ms` (each member's
/// lease; 0 = watchdog) and `wait_ms` (how long `redlatch_multi_lock_acquire` may block) are
/// read, the other fields must be their defaults. On success `*out` receives a new handle,
/// owned by the caller and freed with `redlatch_multi_lock_free`.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL array or element, `count` 0, two locks of one name,
/// locks of another client, a bad option, a handle from a parent process).
///
/// # Safety
/// `client` NULL or valid; `locks` NULL or `count` pointers, each NULL or a valid lock handle;
/// `opts` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_new(
    client: *const redlatch_client,
    locks: *const *const redlatch_lock,
    count: usize,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_multi_lock,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let client = unsafe { arg("client", client) }?;
        // SAFETY: as above.
        let handles = unsafe { list(locks, count, "locks") }?;
        // SAFETY: as above.
        let opts = unsafe { opt_arg(opts) };
        let out = Out::new("out", out)?;
        let mut members = Vec::with_capacity(count);
        let mut lease_members = Vec::new();
        for (i, l) in handles.iter().enumerate() {
            // SAFETY: each element is NULL or a valid handle (caller's contract).
            let lock = unsafe { arg(&format!("locks[{i}]"), *l) }?;
            lock.origin.check("lock")?;
            members.push(lock.core_lock(lock.owner()));
            if !lock.reentrant {
                lease_members.push(LeaseMember {
                    name: lock.base.as_async().name().to_owned(),
                    holds: lock.holds.clone(),
                    owner_id: lock.owner_id,
                });
            }
        }
        client.origin.check("client")?;
        let quorum = client.inner.as_async().node_count() > 1;
        finish(
            client.inner.multi_lock(members)?,
            lease_members,
            opts,
            quorum,
            client.origin,
            out,
        )
    })
}

/// Makes a multi-lock of `count` lease locks by name (`names`: NUL-terminated strings).
/// `opts` and errors as `redlatch_multi_lock_new` (plus NULL, non-UTF-8, empty or over
/// 4096-byte names).
///
/// # Safety
/// `client` NULL or valid; `names` NULL or `count` pointers, each NULL or a NUL-terminated
/// string; `opts` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_new_names(
    client: *const redlatch_client,
    names: *const *const c_char,
    count: usize,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_multi_lock,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let client = unsafe { arg("client", client) }?;
        // SAFETY: as above.
        let list = unsafe { list(names, count, "names") }?;
        // SAFETY: as above.
        let opts = unsafe { opt_arg(opts) };
        let out = Out::new("out", out)?;
        let mut checked = Vec::with_capacity(count);
        for (i, n) in list.iter().enumerate() {
            // SAFETY: each element is NULL or a NUL-terminated string (caller's contract).
            let name = unsafe { str_arg(&format!("names[{i}]"), *n) }?;
            redlatch::protocol::keys::validate_name(name)?;
            checked.push(name.to_owned());
        }
        client.origin.check("client")?;
        let quorum = client.inner.as_async().node_count() > 1;
        finish(
            client.inner.multi_lock_names(checked)?,
            Vec::new(), // by name: no member handle to look at (one held elsewhere is waited for)
            opts,
            quorum,
            client.origin,
            out,
        )
    })
}

/// How an acquire of the multi-lock waits.
enum How {
    Configured,
    Wait(Option<Duration>),
    Try,
}

impl redlatch_multi_lock {
    /// Acquires as `how` says; `false` when one attempt found a member busy.
    fn acquire(&self, how: How) -> Result<bool> {
        self.origin.check("multi-lock")?;
        let _one_at_a_time = locked(&self.acquiring);
        if locked(&self.held).is_some() {
            return Err(Error::invalid(
                "this multi-lock is already held through this handle (it is not reentrant)",
            ));
        }
        for member in &self.lease_members {
            let owner = member.owner_id.unwrap_or_else(thread_owner);
            if member.holds.has_live(owner) {
                return Err(Error::invalid(format!(
                    "lock {:?} is already held by this owner through its own handle and is not \
                     reentrant: the multi-lock would wait for it (release it first)",
                    member.name
                )));
            }
        }
        let guard = match how {
            How::Configured => self.inner.acquire()?,
            How::Wait(wait) => self.inner.acquire_with_wait(wait)?,
            How::Try => match self.inner.try_acquire()? {
                Some(g) => g,
                None => return Ok(false),
            },
        };
        *locked(&self.held) = Some(guard);
        Ok(true)
    }
}

/// Acquires every member, blocking up to the multi-lock's `wait_ms` (forever by default): all
/// or nothing.
///
/// Errors: `REDLATCH_NOT_ACQUIRED` (the wait ran out; nothing is held); `REDLATCH_INVALID_ARGUMENT`
/// (NULL; already held through this handle; a lease-lock member given as a handle that the
/// acquiring owner holds through that handle: the multi-lock would wait for it, nothing is
/// sent); `REDLATCH_WOULD_DEADLOCK` (a write member whose
/// owner holds its read lock); `REDLATCH_CONNECTION`, `REDLATCH_REDIS`, `REDLATCH_QUORUM`.
///
/// # Safety
/// `multi_lock` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_acquire(
    multi_lock: *const redlatch_multi_lock,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let multi = unsafe { arg("multi_lock", multi_lock) }?;
        multi.acquire(How::Configured).map(drop)
    })
}

/// Acquires every member like `redlatch_multi_lock_acquire`, blocking up to `wait_ms` instead of
/// the multi-lock's wait (0 = one try, `REDLATCH_WAIT_FOREVER` = until acquired). Errors as
/// `redlatch_multi_lock_acquire`, plus `REDLATCH_INVALID_ARGUMENT` for a wait above
/// `REDLATCH_MAX_DURATION_MS`.
///
/// # Safety
/// `multi_lock` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_acquire_for(
    multi_lock: *const redlatch_multi_lock,
    wait_ms: u64,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let multi = unsafe { arg("multi_lock", multi_lock) }?;
        let wait = wait_millis(wait_ms)?;
        multi.acquire(How::Wait(wait)).map(drop)
    })
}

/// One attempt, no waiting: `*acquired` receives true when every member was taken (else none
/// is held). Errors as `redlatch_multi_lock_acquire` (never `REDLATCH_NOT_ACQUIRED`).
///
/// # Safety
/// `multi_lock` NULL or valid; `acquired` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_try_acquire(
    multi_lock: *const redlatch_multi_lock,
    acquired: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let multi = unsafe { arg("multi_lock", multi_lock) }?;
        let acquired = Out::new("acquired", acquired)?;
        let got = multi.acquire(How::Try)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { acquired.write(got) };
        Ok(())
    })
}

/// Releases every member of the hold. The handle forgets the hold whatever the outcome (a
/// member whose release failed expires with its lease).
///
/// Errors: `REDLATCH_NOT_OWNED` (reason `NEVER_HELD`: not held through this handle; or a member
/// was found taken or deleted), `REDLATCH_LOCK_LOST` (a member was lost: its lease ran out,
/// reason `EXPIRED`, or a loss seen before), the other members being released either way;
/// `REDLATCH_CONNECTION`, `REDLATCH_REDIS`, `REDLATCH_QUORUM`.
///
/// # Safety
/// `multi_lock` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_release(
    multi_lock: *const redlatch_multi_lock,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let multi = unsafe { arg("multi_lock", multi_lock) }?;
        multi.origin.check_owned()?;
        let guard = locked(&multi.held).take().ok_or_else(|| {
            Error::not_owned(
                false,
                Reason::NeverHeld,
                "this multi-lock is not held through this handle",
            )
        })?;
        guard.release()
    })
}

/// Frees a multi-lock handle, first releasing the hold when it is held (best effort, blocking
/// up to a network timeout). NULL is a no-op. Call it once, after every other call on it has
/// returned.
///
/// # Safety
/// `multi_lock` must be NULL or a handle from `redlatch_multi_lock_new*` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_multi_lock_free(multi_lock: *mut redlatch_multi_lock) {
    boundary_void(|| {
        if multi_lock.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `finish`, freed only here.
        let multi = unsafe { Box::from_raw(multi_lock) };
        if multi.origin.is_foreign() {
            park(multi);
            return;
        }
        let release = move || {
            if let Some(guard) = locked(&multi.held).take() {
                let _ = guard.release();
            }
        };
        if crate::callback::in_callback() {
            std::thread::spawn(release);
        } else {
            release();
        }
    })
}
