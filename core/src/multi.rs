//! [`MultiLock`] and [`MultiGuard`]: several locks taken all or nothing (Redisson
//! `RedissonMultiLock`), in one order so that overlapping sets never deadlock.

use crate::client::Client;
use crate::driver::{self, Engine, Hold, LockSpec, CLOSED};
use crate::error::{Error, ErrorKind, Reason, Result};
use crate::guard::Guard;
use crate::lock::Lock;
use crate::protocol::family::multi::{self, Member, Plan};
use crate::protocol::timing;
use futures::future::{join_all, select, Either};
use std::sync::Arc;
use std::time::Duration;

/// Several locks taken together, all or nothing. Made by [`Client::multi_lock`] (any mix of
/// lock kinds of one client) or [`Client::multi_lock_names`] (lease locks by name).
///
/// Members are taken in one order, bytewise by name, whatever order they were given in, so
/// two callers locking overlapping sets in opposite orders never deadlock (and a Redisson
/// `RedissonMultiLock`, which backs off and restarts, excludes them too). When every member is
/// an unfenced lease or reentrant lock with the same lease and one script may touch all their
/// keys (a single node, each node of a quorum, or one Redis Cluster hash slot: give the names
/// one hash tag such as `{acct}:1`, `{acct}:2`), one `multi_acquire` script takes them all at
/// once (a first attempt over lease members sends each member's plain `SET NX PX` instead,
/// in one pipeline: Redis runs those for less than the script, and a set not taken whole is
/// undone before the script decides); otherwise they are taken one by one in that order
/// through their own locks, and a failure part way releases what was taken. Quorum clients
/// take the one script on every node (Redlock's majority and validity rules apply to the
/// whole set).
///
/// Options: [`lease`](Self::lease) (applies to every member; default: each member's own, or
/// watchdog mode) and [`wait`](Self::wait) (for the whole set; default: no limit).
#[derive(Clone)]
pub struct MultiLock {
    engine: Arc<Engine>,
    /// Sorted by name.
    members: Vec<Lock>,
    lease: Option<Duration>,
    wait: Option<Duration>,
}

impl std::fmt::Debug for MultiLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiLock")
            .field("names", &self.names())
            .field("lease", &self.lease)
            .field("wait", &self.wait)
            .finish()
    }
}

impl Client {
    /// A multi-lock over `locks` (see [`MultiLock`]): lease, reentrant (and, where the client
    /// offers them, fair, read and write) locks of this client, each keeping its own kind.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty set, a bad name, a name given twice, or a lock made by
    /// another client.
    pub fn multi_lock(&self, locks: Vec<Lock>) -> Result<MultiLock> {
        if locks.iter().any(|l| !Arc::ptr_eq(l.engine(), &self.engine)) {
            return Err(Error::invalid("a multi-lock takes locks of one client only"));
        }
        let members: Vec<Member> = locks
            .iter()
            .map(|l| Member {
                name: l.name().to_owned(),
                holder: None,
            })
            .collect();
        let order = match multi::plan(&members, false)? {
            Plan::OneScript(order) | Plan::InOrder(order) => order,
        };
        let mut slots: Vec<Option<Lock>> = locks.into_iter().map(Some).collect();
        let members = order.into_iter().filter_map(|i| slots[i].take()).collect();
        Ok(MultiLock {
            engine: self.engine.clone(),
            members,
            lease: None,
            wait: None,
        })
    }

    /// A multi-lock over lease locks named `names` (as [`Client::lock`]).
    ///
    /// # Errors
    /// As [`Client::multi_lock`].
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let transfer = client.multi_lock_names(["account:1", "account:2"])?.lease(Duration::from_secs(10));
    /// let both = transfer.acquire().await?; // all or none, taken in one order: no deadlock
    /// both.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn multi_lock_names<I, S>(&self, names: I) -> Result<MultiLock>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.multi_lock(names.into_iter().map(|n| self.lock(n)).collect())
    }
}

impl MultiLock {
    /// Fixed lease for every member (see [`Lock::lease`]); without it each member keeps its own
    /// (watchdog mode when it has none). Checked at acquire.
    pub fn lease(mut self, lease: Duration) -> MultiLock {
        self.lease = Some(lease);
        self
    }

    /// Longest time [`acquire`](Self::acquire) waits for the whole set. `Duration::ZERO` = one
    /// try. Default: no limit. The members' own waits are not used.
    pub fn wait(mut self, wait: Duration) -> MultiLock {
        self.wait = Some(wait);
        self
    }

    /// The members' names, in the order they are taken (bytewise sorted).
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(Lock::name).collect()
    }

    /// The members' specs with the multi-lock's lease, checked (as each member's acquire).
    fn specs(&self) -> Result<Vec<LockSpec>> {
        self.members
            .iter()
            .map(|l| l.spec_with_lease(self.lease))
            .collect()
    }

    /// The members with the multi-lock's lease, for the one-by-one path.
    fn effective(&self) -> Vec<Lock> {
        self.members
            .iter()
            .map(|l| match self.lease {
                Some(lease) => l.clone().lease(lease),
                None => l.clone(),
            })
            .collect()
    }

    /// Takes every member, waiting up to the multi-lock's wait (forever when none was set).
    /// Cancellation-safe: dropping the future undoes what it took, in the background.
    ///
    /// # Errors
    /// `NotAcquired` when the wait runs out (nothing is left held); `InvalidArgument` for bad
    /// options (nothing sent); `Connection`/`Redis`/`NoPermission`/`KeyConflict` when Redis
    /// fails; `Quorum` when no majority could be reached; `Connection` ("the client is
    /// closed") when the client was closed meanwhile.
    pub async fn acquire(&self) -> Result<MultiGuard> {
        self.acquire_with_wait(self.wait).await
    }

    /// One attempt at the whole set: `Ok(None)` when a member is held by someone else.
    ///
    /// # Errors
    /// As [`Self::acquire`], except that a busy member is `Ok(None)`.
    pub async fn try_acquire(&self) -> Result<Option<MultiGuard>> {
        match self.acquire_with_wait(Some(Duration::ZERO)).await {
            Ok(g) => Ok(Some(g)),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Like [`Self::acquire`] with an explicit wait (`None` = forever).
    ///
    /// # Errors
    /// As [`Self::acquire`].
    pub async fn acquire_with_wait(&self, wait: Option<Duration>) -> Result<MultiGuard> {
        let specs = self.specs()?;
        if let Some(w) = wait {
            timing::to_millis("wait", w, true)?;
        }
        let registry = &self.engine.registry;
        registry.check_open()?;
        // Open until the acquire is dropped, for its undo after a close (see Lock::acquire_spec).
        let _connections = self.engine.nodes.keep();
        // Names were checked (valid, distinct) when the multi-lock was built.
        let one_script = self.members.iter().all(Lock::joins_one_script)
            && specs.windows(2).all(|w| w[0].lease == w[1].lease)
            && (!self.engine.nodes.transports().iter().any(|t| t.is_cluster())
                || multi::one_slot(self.members.iter().map(Lock::name)));
        if one_script {
            let acquiring = std::pin::pin!(driver::multi::acquire(&self.engine, &specs, wait));
            let closed = std::pin::pin!(registry.until_closed());
            let holds = match select(acquiring, closed).await {
                Either::Left((holds, _)) => holds?,
                Either::Right(_) => return Err(Error::connection(CLOSED)),
            };
            let guards: Vec<Guard> = holds.into_iter().filter_map(Guard::tracked).collect();
            if guards.len() < specs.len() {
                return Err(Error::connection(CLOSED));
            }
            return Ok(MultiGuard {
                guards,
                one_script: true,
            });
        }
        self.acquire_in_order(&self.effective(), wait).await
    }

    /// One member after another in the sorted order, each through its own lock; a failure
    /// releases what was taken. A member lost while a later one was awaited (its fixed lease
    /// ran out) restarts the whole set while the wait lasts.
    async fn acquire_in_order(&self, members: &[Lock], wait: Option<Duration>) -> Result<MultiGuard> {
        let rt = &self.engine.runtime;
        let deadline = wait.map(|w| rt.now() + w);
        loop {
            let mut guards = Vec::with_capacity(members.len());
            for lock in members {
                let remaining = deadline.map(|d| d.saturating_sub(rt.now()));
                match lock.acquire_with_wait(remaining).await {
                    Ok(guard) => guards.push(guard),
                    Err(e) => {
                        release_all(&guards).await;
                        return Err(e);
                    }
                }
            }
            if !guards.iter().any(Guard::is_lost) {
                return Ok(MultiGuard {
                    guards,
                    one_script: false,
                });
            }
            tracing::debug!("a multi-lock member was lost while the next was awaited; starting again");
            release_all(&guards).await;
            if deadline.is_some_and(|d| rt.now() >= d) {
                return Err(Error::new(
                    ErrorKind::NotAcquired,
                    "multi-lock: a member's lease ran out while the others were awaited; wait ran out",
                ));
            }
        }
    }
}

/// Rolls back: releases `guards` concurrently (a release that fails goes on in the background,
/// as for a scope's end).
async fn release_all(guards: &[Guard]) {
    let releases = join_all(guards.iter().filter(|g| g.is_held()).map(Guard::release_final));
    for result in driver::concurrently(releases).await {
        if let Err(e) = result {
            tracing::debug!(error = %e, "multi-lock rollback: a member's release failed");
        }
    }
}

/// Every member of a [`MultiLock`], held. Release them together with
/// [`release`](Self::release); a multi-guard dropped without release releases its members in
/// the background (as a dropped [`Guard`]). Each member is a [`Guard`] of its own kind
/// (watchdog renewal, loss, fencing token): see [`guards`](Self::guards).
#[derive(Debug)]
pub struct MultiGuard {
    /// In the order taken (sorted by name).
    guards: Vec<Guard>,
    /// Taken by one `multi_acquire` script: released by one `multi_release` script too.
    one_script: bool,
}

impl MultiGuard {
    /// [`Guard::leave_to_its_lease`] for each member: dropped later, members with a fixed
    /// lease are left to expire with it (the Node and wasm entries' collected `MultiHeld`).
    pub fn leave_to_its_lease(&self) {
        self.guards.iter().for_each(Guard::leave_to_its_lease);
    }

    /// The members' names, in the order taken.
    pub fn names(&self) -> Vec<&str> {
        self.guards.iter().map(Guard::name).collect()
    }

    /// The members' guards, in the order taken.
    pub fn guards(&self) -> &[Guard] {
        &self.guards
    }

    /// `true` once any member is known lost.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(Guard::is_lost)
    }

    /// `true` when `Client::close` released a member while it was still held
    /// ([`Guard::released_by_close`]).
    pub fn released_by_close(&self) -> bool {
        self.guards.iter().any(Guard::released_by_close)
    }

    /// Releases every member still held: in one `multi_release` request when the set was
    /// taken by one script, else concurrently, each by its own lock. Retryable as
    /// [`Guard::release`], member by member: a member whose release failed stays held (with
    /// its request id, so a retry after a lost reply is exact), and the next call releases it.
    ///
    /// # Errors
    /// `NotOwned` (reason `never_held`) when no member is held any more (already released),
    /// or in a forked child of the process that acquired them (see [`Guard`] on fork);
    /// `Connection` ("the client is closed") after `Client::close` (which released them);
    /// otherwise the first member's error as [`Guard::release`] reports it (the other members
    /// are released regardless).
    pub async fn release(&self) -> Result<()> {
        if let Some(first) = self.guards.iter().find(|g| g.is_inherited()) {
            return Err(crate::origin::inherited_hold("release", first.name()));
        }
        if self.guards.iter().any(Guard::is_closed) {
            return Err(Error::connection(CLOSED));
        }
        if !self.guards.iter().any(Guard::is_held) && !self.is_lost() {
            return Err(Error::not_owned(
                false,
                Reason::NeverHeld,
                "multi-lock was already released",
            ));
        }
        let members = self.guards.iter().filter(|g| g.is_held() || g.is_lost());
        let results = if self.one_script {
            let holds: Vec<&Hold> = members.map(Guard::hold).collect();
            match holds.first() {
                Some(first) => driver::multi_release::release(&first.engine, &holds).await,
                None => Vec::new(),
            }
        } else {
            driver::concurrently(join_all(members.map(Guard::release))).await
        };
        results.into_iter().find(|r| r.is_err()).unwrap_or(Ok(()))
    }

    /// Releases like [`release`](Self::release), for clean-up paths that cannot call again
    /// (the end of a scope, a destructor): a member whose release outcome stays unknown goes on
    /// being released in the background, as [`Guard::release_final`]. Returns the result of
    /// the release.
    ///
    /// # Errors
    /// As [`release`](Self::release).
    pub async fn release_final(&self) -> Result<()> {
        let result = self.release().await;
        for member in &self.guards {
            member.release_rest_in_background();
        }
        result
    }
}
