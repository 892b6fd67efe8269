//! The lock options of C, checked, and the handle built from them: shared by every
//! constructor of a `redlatch_lock` (lease, reentrant and fair locks here, the read and write
//! locks of `redlatch_rw_lock` in rwlock.rs, and the multi-lock's options).

use redlatch::blocking;
use redlatch::{Error, Result};
use std::ffi::c_char;
use std::sync::Arc;
use std::time::Duration;

use crate::callback::LostCallback;
use crate::client::redlatch_client;
use crate::ffi::{arg, millis, opt_arg, str_arg, wait_millis, Out};
use crate::fork::Origin;
use crate::hold::THREAD_OWNER_BASE;
use crate::lock::{redlatch_lock, redlatch_lock_options, REDLATCH_MAX_OWNER_ID};

/// The options of `redlatch_lock_options`, checked (nothing is built yet).
pub(crate) struct Settings {
    lease: Option<Duration>,
    wait: Option<Duration>,
    fenced: bool,
    fence_ttl: Option<Duration>,
    owner_id: Option<u64>,
}

impl Settings {
    /// Checks `opts` (NULL = defaults); `quorum` refuses `fenced`.
    pub(crate) fn parse(opts: Option<&redlatch_lock_options>, quorum: bool) -> Result<Settings> {
        let opts = opts.copied().unwrap_or_default();
        let wait = wait_millis(opts.wait_ms)?;
        let owner_id = match opts.owner_id {
            0 => None,
            id if id < THREAD_OWNER_BASE => Some(id),
            id => {
                return Err(Error::invalid(format!(
                    "owner_id {id} exceeds the maximum of {REDLATCH_MAX_OWNER_ID}"
                )))
            }
        };
        if opts.fenced && quorum {
            return Err(Error::invalid(
                "fencing tokens are not offered in quorum mode (independent nodes share no counter)",
            ));
        }
        let lease = match opts.lease_ms {
            0 => None,
            ms => Some(millis("lease", ms)?),
        };
        let fence_ttl = match opts.fence_ttl_ms {
            0 => None,
            ms => Some(millis("fence_ttl", ms)?),
        };
        Ok(Settings {
            lease,
            wait,
            fenced: opts.fenced,
            fence_ttl,
            owner_id,
        })
    }

    /// The lease of a multi-lock's locks; only `lease_ms` and `wait_ms` apply there.
    pub(crate) fn lease_and_wait_only(self) -> Result<(Option<Duration>, Option<Duration>)> {
        if self.fenced || self.fence_ttl.is_some() || self.owner_id.is_some() {
            return Err(Error::invalid(
                "a multi-lock takes only lease_ms and wait_ms (fenced, fence_ttl_ms and owner_id \
                 must be left at their defaults)",
            ));
        }
        Ok((self.lease, self.wait))
    }
}

/// A boxed handle around the core lock `base` with `settings` applied. `reentrant`: the holds
/// belong to owners in Redis (reentrant, fair, read and write locks), not to a token.
pub(crate) fn build(
    mut base: blocking::Lock,
    settings: Settings,
    reentrant: bool,
    name: &str,
    origin: Origin,
) -> Result<Box<redlatch_lock>> {
    if let Some(lease) = settings.lease {
        base = base.lease(lease);
    }
    if let Some(wait) = settings.wait {
        base = base.wait(wait);
    }
    if settings.fenced {
        base = base.fenced();
    }
    if let Some(ttl) = settings.fence_ttl {
        base = base.fence_ttl(ttl);
    }
    // The core's checks of the options, at once (as Python's and Node's handles do): a
    // fenced read lock was made and refused only by its first acquire (a C user trial).
    base.as_async().check()?;
    Ok(Box::new(redlatch_lock {
        base,
        reentrant,
        fenced: settings.fenced,
        owner_id: settings.owner_id,
        holds: Arc::default(),
        lost: LostCallback::new(name),
        origin,
    }))
}

/// Which constructor of the client's makes the core lock.
#[derive(Clone, Copy)]
pub(crate) enum Maker {
    Lease,
    Reentrant,
    Fair,
}

/// # Safety
/// As the exported constructors.
pub(crate) unsafe fn new_lock(
    client: *const redlatch_client,
    name: *const c_char,
    opts: *const redlatch_lock_options,
    out: *mut *mut redlatch_lock,
    maker: Maker,
) -> Result<()> {
    // SAFETY: the caller's contract (see the exported constructors).
    let client = unsafe { arg("client", client) }?;
    // SAFETY: as above.
    let name = unsafe { str_arg("name", name) }?;
    // SAFETY: as above.
    let opts = unsafe { opt_arg(opts) };
    let out = Out::new("out", out)?;
    redlatch::protocol::keys::validate_name(name)?;
    let settings = Settings::parse(opts, client.inner.as_async().node_count() > 1)?;
    client.origin.check("client")?;
    let base = match maker {
        Maker::Lease => client.inner.lock(name),
        Maker::Reentrant => client.inner.rlock(name),
        Maker::Fair => client.inner.fair_lock(name),
    };
    let lock = build(
        base,
        settings,
        !matches!(maker, Maker::Lease),
        name,
        client.origin,
    )?;
    // SAFETY: checked non-NULL; writable by the caller's contract.
    unsafe { out.write(Box::into_raw(lock)) };
    Ok(())
}
