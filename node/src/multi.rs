//! Multi-locks (Redisson RedissonMultiLock): the facade passes the members (name, kind and
//! options of each `Lock`) with every call, and the core multi-lock is made per acquire for
//! the owner numbers the facade chose (reentrant members: the member's explicit owner, else
//! one of that acquisition's own). The core decides the order (sorted by name), the
//! one-script path and the rollback. Acquisitions live in the client's table under numbers
//! JavaScript holds, as holds do (held.rs).

use crate::calls::Value;
use crate::client::{locked, NativeClient};
use crate::error::{invalid, IntoNapi};
use crate::family::stoppable;
use crate::local::Scratch;
use crate::lock::{closed_error, kind_lock, Kind};
use crate::options::opt_millis;
use napi_derive::napi;
use redlatch::{Error, Reason};

/// One member of a multi-lock: a `Lock`'s name, kind and options.
#[napi(object)]
pub struct MultiMember {
    /// The member lock's name.
    pub name: String,
    /// Its kind, as `lib/engine.mjs` numbers kinds (`KIND`).
    pub kind: u32,
    /// Its own fixed lease in ms (absent: watchdog mode, unless the multi-lock sets one).
    pub lease_ms: Option<f64>,
    /// Fenced member (taken through its own script, not the multi-lock's one script).
    pub fenced: bool,
    /// Fenced members: the fencing counter key's TTL in ms (absent: it persists).
    pub fence_ttl_ms: Option<f64>,
}

impl NativeClient {
    /// The core multi-lock of `members` for `owners` (one per member, `None` for lease
    /// locks or a fresh owner), with `leaseMs` for all.
    fn core_multi(
        &self,
        members: &[MultiMember],
        owners: &[Option<f64>],
        lease_ms: Option<f64>,
    ) -> napi::Result<redlatch::MultiLock> {
        if owners.len() != members.len() {
            return Err(invalid("one owner (or null) per multi-lock member"));
        }
        let client = self.shared.client()?;
        let mut locks = Vec::with_capacity(members.len());
        for (m, owner) in members.iter().zip(owners) {
            let kind = Kind::from_js(m.kind)?;
            let mut lock = kind_lock(
                &client,
                &m.name,
                kind,
                if kind == Kind::Lease { None } else { *owner },
            )?;
            if let Some(lease) = opt_millis("leaseMs", m.lease_ms, false)? {
                lock = lock.lease(lease);
            }
            if m.fenced {
                lock = lock.fenced();
                if let Some(ttl) = opt_millis("fenceTtlMs", m.fence_ttl_ms, false)? {
                    lock = lock.fence_ttl(ttl);
                }
            }
            locks.push(lock);
        }
        let mut multi = client.multi_lock(locks).js()?;
        if let Some(lease) = opt_millis("leaseMs", lease_ms, false)? {
            multi = multi.lease(lease);
        }
        Ok(multi)
    }
}

#[napi]
impl NativeClient {
    /// Checks a multi-lock (`client.multiLock` throws what this throws): `ERR_INVALID_ARGUMENT`
    /// for an empty set, a name given twice, a bad member or lease.
    #[napi]
    pub fn check_multi(&self, members: Vec<MultiMember>, lease_ms: Option<f64>) -> napi::Result<()> {
        let owners = vec![None; members.len()];
        self.core_multi(&members, &owners, lease_ms).map(drop)
    }

    /// Acquires every member or none, waiting up to `waitMs` for the whole set (`null` =
    /// forever, 0 = one try); settles call `id` with the acquisition's number.
    #[napi]
    #[allow(clippy::too_many_arguments)] // one call per acquire: no options object to read
    pub fn multi_acquire(
        &self,
        members: Vec<MultiMember>,
        owners: Vec<Option<f64>>,
        lease_ms: Option<f64>,
        wait_ms: Option<f64>,
        ticket: u32,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let multi = self.core_multi(&members, &owners, lease_ms)?;
        let wait = opt_millis("waitMs", wait_ms, true)?;
        let stop = self.shared.start_pending(ticket)?;
        let shared = self.shared.clone();
        Ok(self.shared.driver.call(out, id, async move {
            let guard = stoppable(&shared, ticket, stop, multi.acquire_with_wait(wait)).await?;
            match shared.track_multi(guard) {
                Some(n) => Ok(Value::Number(n as f64)),
                None => Err(closed_error()),
            }
        }))
    }

    /// The members' names of acquisition `multi`, in the order taken.
    #[napi]
    pub fn multi_names(&self, multi: f64) -> Vec<String> {
        self.shared
            .multi(multi)
            .map(|g| g.names().into_iter().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// Acquisition `multi`'s state: bit 1 = a member is known lost, bit 2 = no member held,
    /// bit 4 = `client.close()` released a member still held (`MultiGuard::released_by_close`).
    #[napi]
    pub fn multi_state(&self, multi: f64) -> u32 {
        match self.shared.multi(multi) {
            Some(g) => {
                u32::from(g.is_lost())
                    | (u32::from(!g.guards().iter().any(redlatch::Guard::is_held)) << 1)
                    | (u32::from(g.released_by_close()) << 2)
            }
            None if locked(&self.shared.released_by_close).contains(&(multi as u64)) => 2 | 4,
            None => 2,
        }
    }

    /// Releases every member of acquisition `multi` still held; settles call `id`.
    /// `scope_end` (nobody can call again): a member whose outcome stays unknown goes on
    /// being released in the background (the core's `MultiGuard::release_final`).
    #[napi]
    pub fn multi_release(
        &self,
        multi: f64,
        scope_end: bool,
        id: u32,
        out: Scratch<'_>,
    ) -> napi::Result<Option<String>> {
        let guard = self.shared.multi(multi);
        let closed = self.shared.is_closed();
        Ok(self.shared.driver.call(out, id, async move {
            match guard {
                Some(g) if scope_end => g.release_final().await.map(|()| Value::Unit),
                Some(g) => g.release().await.map(|()| Value::Unit),
                None if closed => Err(closed_error()),
                None => Err(Error::not_owned(
                    false,
                    Reason::NeverHeld,
                    "this multi-lock is not known to the client",
                )),
            }
        }))
    }

    /// Forgets acquisition `multi` (its JavaScript object was garbage-collected): members with
    /// a fixed lease are left to it, watchdog-renewed ones released in the background
    /// (`MultiGuard::leave_to_its_lease`, as for a `Held`).
    #[napi]
    pub fn drop_multi(&self, multi: f64) {
        let guard = locked(&self.shared.multis).remove(&(multi as u64));
        if let Some(guard) = &guard {
            guard.leave_to_its_lease();
        }
        drop(guard);
    }
}
