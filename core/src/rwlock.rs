//! [`RwLock`]: a read/write lock handle (Redisson `RReadWriteLock`), whose two sides are
//! [`Lock`]s sharing one owner.

use crate::driver::Engine;
use crate::kind::LockKind;
use crate::lock::Lock;
use crate::protocol::token;
use std::sync::Arc;

/// A read/write lock on one name, in Redisson 4.7's `RReadWriteLock` layout (a HASH with
/// `mode` = `read` | `write`, reader fields `<owner>` -> hold count, the writer's field
/// `<owner>:write`, one `{name}:<owner>:rwlock_timeout:<k>` key per read hold), so Java
/// services using Redisson share it. Many readers or one writer:
///
/// - [`read`](Self::read) is shared: every owner may hold it while no other owner writes;
/// - [`write`](Self::write) is exclusive: no other owner reads or writes meanwhile;
/// - both are reentrant per owner, and the writer's owner may also take the read lock (a
///   downgrade: release the write hold and keep reading);
/// - a write acquire by an owner that holds a read hold is refused at once with
///   [`ErrorKind::WouldDeadlock`](crate::ErrorKind::WouldDeadlock), nothing changed in
///   Redis (Redisson waits for the owner's own read holds, forever);
/// - each read hold expires on its own: a reader that dies loses its holds after its lease
///   while other readers keep theirs.
///
/// The handle is one owner (a fresh owner number per [`Client::rw_lock`](crate::Client::rw_lock)
/// call); its two sides share it. Single-node, Cluster or Sentinel clients only: on a quorum
/// client acquires are `InvalidArgument`. Waiters are woken by pub/sub on
/// `redisson_rwlock:{name}` (`1` after a write release wakes every waiter, so readers
/// proceed together), with polling as the fallback.
#[derive(Clone)]
pub struct RwLock {
    engine: Arc<Engine>,
    name: String,
    owner: u64,
}

impl std::fmt::Debug for RwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RwLock").field("name", &self.name).finish()
    }
}

impl RwLock {
    pub(crate) fn new(engine: Arc<Engine>, name: String, owner: u64) -> RwLock {
        RwLock { engine, name, owner }
    }

    /// Uses owner number `owner` for both sides (see [`Lock::owner`] for the number space).
    pub fn owner(mut self, owner: u64) -> RwLock {
        self.owner = owner;
        self
    }

    /// The read side: a shared, reentrant [`Lock`] of kind [`LockKind::Read`] with this
    /// handle's owner. Options as for any lock (`lease`, `wait`, `owner`), except `fenced`:
    /// `InvalidArgument` at acquire (readers share; fence the write side).
    pub fn read(&self) -> Lock {
        Lock::new(
            self.engine.clone(),
            self.name.clone(),
            LockKind::Read,
            Some(self.owner),
        )
    }

    /// The write side: an exclusive, reentrant [`Lock`] of kind [`LockKind::Write`] with this
    /// handle's owner. Options as for any lock (`lease`, `wait`, `fenced`, `fence_ttl`,
    /// `owner`).
    pub fn write(&self) -> Lock {
        Lock::new(
            self.engine.clone(),
            self.name.clone(),
            LockKind::Write,
            Some(self.owner),
        )
    }

    /// The lock's name (its Redis key).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The owner id both sides use, `<client-id>:<n>` (the write field is `<owner id>:write`).
    pub fn owner_id(&self) -> String {
        token::owner_id(&self.engine.client_id, self.owner)
    }
}
