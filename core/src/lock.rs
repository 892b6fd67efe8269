//! [`Lock`]: a named lock handle with its options; `acquire()` returns a [`Guard`].

use crate::driver::{self, Engine, LockSpec};
use crate::error::{Error, ErrorKind, Result};
use crate::guard::Guard;
use crate::kind::LockKind;
use crate::protocol::request::{self, Holder};
use crate::protocol::{keys, reply, timing, token};
use std::sync::Arc;
use std::time::Duration;

/// A lock handle: a name, a [`LockKind`] (lease, reentrant, fair, or the read or write side of
/// a read/write lock) and acquire options.
///
/// Options are builder methods; the handle can be acquired many times and cloned freely.
/// Invalid options are reported by `acquire`/`try_acquire` before anything is sent to Redis.
#[derive(Clone)]
pub struct Lock {
    engine: Arc<Engine>,
    name: String,
    kind: LockKind,
    /// The owner number of every kind but lease locks.
    owner: Option<u64>,
    lease: Option<Duration>,
    wait: Option<Duration>,
    fenced: bool,
    fence_ttl: Option<Duration>,
    owner_on_lease_lock: bool,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("lease", &self.lease)
            .field("wait", &self.wait)
            .field("fenced", &self.fenced)
            .finish()
    }
}

/// The refusal of a fair, read or write lock on a quorum client (the same words in every
/// binding).
pub(crate) const QUORUM_REFUSED: &str =
    "fair and read/write locks need a single-node, Cluster or Sentinel client";

impl Lock {
    /// A handle of `kind`; `owner` is `Some` for every kind but [`LockKind::Lease`].
    pub(crate) fn new(engine: Arc<Engine>, name: String, kind: LockKind, owner: Option<u64>) -> Lock {
        Lock {
            engine,
            name,
            kind,
            owner,
            lease: None,
            wait: None,
            fenced: false,
            fence_ttl: None,
            owner_on_lease_lock: false,
        }
    }

    /// Fixed lease: Redis drops the lock `lease` after acquisition (or after the last
    /// `extend`) unless released; no watchdog renewal. Without it the lock is in watchdog
    /// mode: lease = the client's watchdog timeout (default 30 s), renewed every third of it
    /// while held. Sub-millisecond values round up to 1 ms; zero or above 2^53 - 1 ms is
    /// `InvalidArgument` at acquire.
    pub fn lease(mut self, lease: Duration) -> Lock {
        self.lease = Some(lease);
        self
    }

    /// Longest time `acquire` waits for the lock. `Duration::ZERO` = one try. Without it,
    /// `acquire` waits until the lock is acquired (a dead holder's lease bounds the wait).
    pub fn wait(mut self, wait: Duration) -> Lock {
        self.wait = Some(wait);
        self
    }

    /// Fenced lock: every acquire returns a fencing token, a strictly increasing integer per
    /// lock name (Kleppmann, "How to do distributed locking"), from `INCR` on
    /// `redisson_lock_token:{name}` (Redisson's counter key; it has no TTL and persists after
    /// the lock is gone, one key per name ever fenced: see [`Self::fence_ttl`]). A re-entry of
    /// a reentrant owner reports the token of its outermost hold. Single-node clients only;
    /// `InvalidArgument` in quorum mode, and on the read side of a read/write lock (readers
    /// share the lock; fence the write side).
    pub fn fenced(mut self) -> Lock {
        self.fenced = true;
        self
    }

    /// Fenced locks: let the counter key `redisson_lock_token:{name}` expire `ttl` after the
    /// last fenced acquire of this name (each acquire sets its TTL again), so names used once
    /// (per order, per job) do not leave a key each forever. Default: the counter persists.
    ///
    /// Hazard: once the counter expired, tokens start again at 1. A resource that still
    /// remembers a higher token then rejects every new holder (safe, but stuck) until the
    /// counter catches up; one that forgot accepts them, and a holder paused since before
    /// the expiry could then pass an old, higher token. Choose a TTL far longer than any
    /// hold, pause and resource memory (days, not seconds). Whole milliseconds, at least
    /// 1 ms; without [`Self::fenced`], `InvalidArgument` (at acquire, and from [`Self::check`]).
    pub fn fence_ttl(mut self, ttl: Duration) -> Lock {
        self.fence_ttl = Some(ttl);
        self
    }

    /// Reentrant locks only: use owner number `owner` (owner id `<client-id>:<owner>`), so
    /// bindings can map a thread, task or async chain to one owner. `InvalidArgument` at
    /// acquire on a lease lock. The numbers are one process-wide space, 1 ..= 2^53 - 1, shared
    /// with the ones [`Client::rlock`](crate::Client::rlock), [`new_owner`](crate::new_owner)
    /// and [`thread_owner`](crate::thread_owner) hand out: take numbers from those (one per
    /// thread, task or async chain) and they never collide; a number made up by hand can
    /// re-enter the hold of an automatically numbered handle. Numbers above that space are
    /// accepted (the C binding numbers its thread owners from 2^63 up); 0 is
    /// `InvalidArgument` at acquire (and at every other call that checks the lock).
    pub fn owner(mut self, owner: u64) -> Lock {
        match self.owner {
            Some(_) => self.owner = Some(owner),
            None => self.owner_on_lease_lock = true,
        }
        self
    }

    /// The lock's name (its Redis key).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind of lock this handle acquires.
    pub fn kind(&self) -> LockKind {
        self.kind
    }

    /// `true` for every kind but lease locks ([`LockKind::is_reentrant`]): `rlock`, fair,
    /// read and write locks count holds per owner.
    pub fn is_reentrant(&self) -> bool {
        self.kind.is_reentrant()
    }

    /// The owner id (`<client-id>:<n>`) of every kind but lease locks (`None`). For the write
    /// side of a read/write lock this is the owner id the read side uses too; Redis keeps the
    /// write holds under the field `<owner id>:write` (Redisson's layout).
    pub fn owner_id(&self) -> Option<String> {
        self.owner.map(|n| token::owner_id(&self.engine.client_id, n))
    }

    /// The client this lock belongs to (a multi-lock checks its members share one).
    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// `true` when the multi-lock may take this lock inside its one script: an unfenced lease
    /// or reentrant lock (the other kinds need their own scripts).
    pub(crate) fn joins_one_script(&self) -> bool {
        matches!(self.kind, LockKind::Lease | LockKind::Reentrant) && !self.fenced
    }

    /// How Redis knows this handle's owner (not for lease locks, whose token is per hold).
    fn owner_holder(&self) -> Option<Holder> {
        let owner = self.owner_id()?;
        Some(match self.kind {
            LockKind::Read => Holder::Read { owner },
            LockKind::Write => Holder::Write { owner },
            // Inspection of a fair lock is the reentrant hash's.
            _ => Holder::Reentrant { owner },
        })
    }

    pub(crate) fn spec(&self) -> Result<LockSpec> {
        self.checked(true, self.lease)
    }

    /// The spec with `lease` in place of the lock's own when given (a multi-lock's lease), as
    /// `self.clone().lease(lease).spec()` without the clone.
    pub(crate) fn spec_with_lease(&self, lease: Option<Duration>) -> Result<LockSpec> {
        self.checked(true, lease.or(self.lease))
    }

    /// The spec with `lease`, checked; `at_acquire` adds the refusal of the kinds a quorum
    /// client does not offer (documented as an acquire's error, not the lock's).
    fn checked(&self, at_acquire: bool, lease: Option<Duration>) -> Result<LockSpec> {
        keys::validate_name(&self.name)?;
        if self.owner_on_lease_lock {
            return Err(Error::invalid(
                "owner() applies to reentrant, fair and read/write locks only",
            ));
        }
        if self.owner == Some(0) {
            return Err(Error::invalid("owner numbers start at 1 (got 0)"));
        }
        if at_acquire && self.kind.needs_single_node() && self.engine.is_quorum() {
            return Err(Error::invalid(QUORUM_REFUSED));
        }
        if self.fenced && self.kind == LockKind::Read {
            return Err(Error::invalid(
                "read locks cannot be fenced: readers share the lock, a fencing token orders exclusive holds (fence the write lock)",
            ));
        }
        // Leases travel to Redis in whole milliseconds, rounded up.
        let lease = match lease {
            Some(lease) => Some(Duration::from_millis(timing::to_millis("lease", lease, false)?)),
            None => None,
        };
        if lease.is_none() {
            timing::to_millis("watchdog timeout", self.engine.config.watchdog_timeout, false)?;
        }
        if let Some(wait) = self.wait {
            timing::to_millis("wait", wait, true)?;
        }
        if self.fenced && self.engine.is_quorum() {
            return Err(Error::invalid(
                "fencing tokens are not offered in quorum mode (independent nodes share no counter)",
            ));
        }
        let fence_ttl =
            match self.fence_ttl {
                // Set without `fenced`, it did nothing, silently (a C and a Python trial of stop 46).
                Some(_) if !self.fenced => return Err(Error::invalid(
                    "a fence TTL applies to fenced locks only (make the lock fenced, or leave the TTL out)",
                )),
                Some(ttl) => timing::to_millis("fence TTL", ttl, false)?,
                None => 0,
            };
        Ok(LockSpec {
            name: self.name.clone(),
            kind: self.kind,
            owner: self.owner_id(),
            lease,
            fence: self.fenced.then_some(fence_ttl),
        })
    }

    /// Checks the lock's name and options now, as every acquire does: bindings call it when
    /// their lock is built, so a bad option throws there, from this one implementation. A
    /// fair or read/write lock on a quorum client passes: its acquire refuses it.
    ///
    /// # Errors
    /// `InvalidArgument` as [`Self::acquire`] would return it for bad options (an empty or
    /// too long name, a zero or too large lease, wait or fence TTL, a fence TTL without
    /// `fenced`, `owner()` on a lease lock, a fenced read lock, a fenced lock on a quorum
    /// client).
    pub fn check(&self) -> Result<()> {
        self.checked(false, self.lease).map(drop)
    }

    /// Acquires the lock, waiting up to the lock's wait (forever when none was set).
    ///
    /// A fair-lock waiter whose wait runs out has left the queue when `NotAcquired` returns; a
    /// cancelled one (this future dropped) leaves it in the background.
    ///
    /// # Errors
    /// `NotAcquired` when the wait runs out; `InvalidArgument` for bad options (nothing is
    /// sent), and for fair and read/write locks on a quorum client; `WouldDeadlock` at once
    /// for a write acquire by an owner that holds the read lock (nothing changed in Redis);
    /// `Connection`/`Redis` when Redis keeps failing for the network timeout; `Quorum` when no
    /// majority of nodes could be reached.
    pub async fn acquire(&self) -> Result<Guard> {
        let spec = self.spec()?;
        self.acquire_spec(&spec, self.wait).await
    }

    /// Acquires with an explicit wait, overriding the lock's (`None` = forever).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    pub async fn acquire_with_wait(&self, wait: Option<Duration>) -> Result<Guard> {
        let spec = self.spec()?;
        if let Some(w) = wait {
            timing::to_millis("wait", w, true)?;
        }
        self.acquire_spec(&spec, wait).await
    }

    /// Acquires `spec`; a `close()` of the client meanwhile stops the wait (what the attempt
    /// may have taken is undone in the background, as for a cancelled acquire).
    async fn acquire_spec(&self, spec: &LockSpec, wait: Option<Duration>) -> Result<Guard> {
        let registry = &self.engine.registry;
        registry.check_open()?;
        // Keeps the connections open until the acquire future is dropped (declared first,
        // dropped last): a `close()` meanwhile lets go of them, and what the attempt took is
        // undone in the background through them.
        let _connections = self.engine.nodes.keep();
        let acquiring = std::pin::pin!(driver::acquire(&self.engine, spec, wait));
        let closed = std::pin::pin!(registry.until_closed());
        match futures::future::select(acquiring, closed).await {
            futures::future::Either::Left((hold, _)) => {
                Guard::tracked(hold?).ok_or_else(|| Error::connection(driver::CLOSED))
            }
            futures::future::Either::Right(_) => Err(Error::connection(driver::CLOSED)),
        }
    }

    /// One attempt, no waiting: `Ok(None)` when the lock is held by someone else.
    ///
    /// # Errors
    /// As [`Self::acquire`], except that a busy lock is `Ok(None)`, not `NotAcquired`.
    pub async fn try_acquire(&self) -> Result<Option<Guard>> {
        match self.acquire_with_wait(Some(Duration::ZERO)).await {
            Ok(g) => Ok(Some(g)),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn inspect(&self) -> Result<Vec<reply::Inspection>> {
        keys::validate_name(&self.name)?;
        if self.kind.needs_single_node() && self.engine.is_quorum() {
            return Err(Error::invalid(QUORUM_REFUSED));
        }
        self.engine.registry.check_open()?;
        let holder = self.owner_holder();
        let engine = &self.engine;
        let req = request::inspect(&self.name, self.kind.is_reentrant(), holder.as_ref());
        // Quorum mode: the per-node timeout for this lock's lease (shared/API.md), so a hung
        // node costs at most that; a single node gets the network timeout.
        let lease = self.lease.unwrap_or(engine.config.watchdog_timeout);
        let mut out = Vec::new();
        let mut reasons = Vec::new();
        for r in engine.nodes.broadcast(&req, engine.node_timeout(lease)).await {
            match r.and_then(|r| reply::decode_inspect(&r)) {
                Ok(i) => {
                    out.push(i);
                    reasons.push(Ok(()));
                }
                Err(e) if !engine.is_quorum() || e.is_permanent() => return Err(e),
                Err(e) => reasons.push(Err(e.to_string())),
            }
        }
        if out.len() < engine.majority() {
            // Each node's answer or reason, as an acquire's quorum error lists them.
            return Err(Error::new(ErrorKind::Quorum, "too few nodes answered")
                .with_nodes(engine.nodes.outcomes(reasons)));
        }
        Ok(out)
    }

    /// `true` when anyone holds the lock (a majority of nodes in quorum mode, each asked with
    /// the per-node timeout). The read side of a read/write lock answers whether the lock is
    /// held in read mode, the write side whether in write mode (Redisson's `isLocked` of
    /// `RedissonReadLock` / `RedissonWriteLock`).
    ///
    /// # Errors
    /// `Connection`/`Redis` (single node) or `Quorum` when too few nodes answer;
    /// `KeyConflict` when the key holds application data (as `acquire` would find);
    /// `NoPermission` when the ACL user may not read it.
    pub async fn locked(&self) -> Result<bool> {
        let found = self.inspect().await?;
        Ok(found.iter().filter(|i| i.exists).count() >= self.engine.majority())
    }

    /// Remaining lease of whoever holds the lock (a read/write side: held in its mode, as
    /// [`Self::locked`]); `None` when free (or held with no TTL).
    ///
    /// # Errors
    /// As [`Self::locked`].
    pub async fn ttl(&self) -> Result<Option<Duration>> {
        let found = self.inspect().await?;
        let mut ttls: Vec<u64> = found.iter().filter_map(|i| i.pttl).collect();
        if ttls.len() < self.engine.majority() {
            return Ok(None);
        }
        ttls.sort_unstable();
        // The value a majority still has at least: the majority-th largest.
        Ok(Some(Duration::from_millis(
            ttls[ttls.len() - self.engine.majority()],
        )))
    }

    /// Reentrant, fair, read and write locks: this owner's hold count in this mode (0 when
    /// not held by it). Lease locks: 0.
    ///
    /// # Errors
    /// As [`Self::locked`].
    pub async fn hold_count(&self) -> Result<u64> {
        if self.owner.is_none() {
            return Ok(0);
        }
        let found = self.inspect().await?;
        let mut counts: Vec<u64> = found.iter().map(|i| i.holds).collect();
        counts.sort_unstable();
        Ok(counts[counts.len() - self.engine.majority().min(counts.len())])
    }
}
