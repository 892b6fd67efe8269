//! [`Client`]: the entry point, one Redis node or a Redlock quorum of independent nodes.

use crate::driver::{self, Config, Engine, Runtime, Transport};
use crate::error::{Error, ErrorKind, Result};
use crate::kind::LockKind;
use crate::lock::Lock;
use crate::protocol::{keys, reply, request};
use crate::rwlock::RwLock;
use std::sync::Arc;

/// Connection(s) to Redis and the locks made from them.
///
/// Cheap to clone (an `Arc`); clones share connections, the client id and the watchdog.
/// Build one with [`Client::connect`] / [`Client::builder`] (single node) or
/// [`Client::quorum`] / [`Client::quorum_builder`] (Redlock over N independent nodes); bindings
/// with their own transports use [`Client::from_transports`].
#[derive(Clone)]
pub struct Client {
    pub(crate) engine: Arc<Engine>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let nodes: Vec<&str> = (0..self.engine.nodes.len())
            .map(|i| self.engine.nodes.label(i))
            .collect();
        f.debug_struct("Client")
            .field("id", &self.engine.client_id)
            .field("nodes", &nodes)
            .finish()
    }
}

impl Client {
    /// A client over caller-supplied transports (one = single node, several = quorum) and
    /// runtime. This is how the wasm binding plugs in a JS transport and JS timers.
    ///
    /// # Errors
    /// `InvalidArgument` when `transports` is empty or `config` is invalid
    /// ([`Config::validate`](driver::Config::validate)); `Panic` (internal) when the OS random
    /// source for the client id is unavailable.
    pub fn from_transports(
        transports: Vec<Arc<dyn Transport>>,
        runtime: Arc<dyn Runtime>,
        config: Config,
    ) -> Result<Client> {
        if transports.is_empty() {
            return Err(Error::invalid("a client needs at least one Redis node"));
        }
        config.validate()?;
        Ok(Client {
            engine: Engine::new(transports, runtime, config)?,
        })
    }

    /// Renews this client's watchdog-mode holds through `renewer` from now on: its
    /// connections, on its runtime, with its watchdog (a client of the same nodes, in the same
    /// order). For a client whose runtime can be held up by its host: the Node addon's local
    /// engine runs on the JavaScript thread and renews through a client on the addon's tokio
    /// thread, so a blocked event loop does not let a hold expire (Redisson renews on its own
    /// threads too). Holds acquired before this call keep their renewals; `close` closes
    /// `renewer` as well. Both runtimes must read [`process_clock`](crate::process_clock)
    /// (deadlines are compared across them); every native runtime does.
    ///
    /// # Errors
    /// `InvalidArgument` when `renewer` has other nodes or another watchdog timeout, when its
    /// clock is not this client's, or when this client already has a renewer.
    pub fn renew_through(&self, renewer: Client) -> Result<()> {
        let (ours, theirs) = (&self.engine, &renewer.engine);
        let labels = |e: &Engine| {
            (0..e.nodes.len())
                .map(|i| e.nodes.label(i).to_owned())
                .collect::<Vec<_>>()
        };
        if labels(ours) != labels(theirs) {
            return Err(Error::invalid("a renewer must be a client of the same nodes"));
        }
        if ours.config.watchdog_timeout != theirs.config.watchdog_timeout {
            return Err(Error::invalid("a renewer must have the same watchdog timeout"));
        }
        let skew = ours.now().abs_diff(theirs.now());
        if skew > std::time::Duration::from_millis(100) {
            return Err(Error::invalid("a renewer's runtime must read the same clock"));
        }
        ours.renewer
            .set(renewer.engine)
            .map_err(|_| Error::invalid("this client already has a renewer"))
    }

    /// A lease lock on key `name`, in the redis-py / node-redlock format (shared/WIRE.md):
    /// a STRING holding a random token. Not reentrant: each acquire is a separate hold.
    ///
    /// Name checks happen at acquire time (empty or over 4096 bytes: `InvalidArgument`).
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// // Held for 10 s at most; waits up to 5 s for it (`NotAcquired` after that).
    /// let lock = client.lock("order:42").lease(Duration::from_secs(10)).wait(Duration::from_secs(5));
    /// let guard = lock.acquire().await?;
    /// // ... the critical section: compare `guard.is_lost()` before each write that matters ...
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn lock(&self, name: impl Into<String>) -> Lock {
        Lock::new(self.engine.clone(), name.into(), LockKind::Lease, None)
    }

    /// A reentrant lock on key `name`, in Redisson's RLock layout (a HASH of owner id ->
    /// hold count). The returned handle is one owner: acquiring again through it or its
    /// clones re-enters; other handles (other `rlock` calls) contend. Use [`Lock::owner`] to
    /// pick the owner number yourself (bindings map threads or tasks to it).
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// // No lease given: the watchdog renews the hold while the guard lives.
    /// let account = client.rlock("account:7");
    /// let outer = account.acquire().await?;
    /// let inner = account.acquire().await?; // the same owner re-enters
    /// assert_eq!(account.hold_count().await?, 2);
    /// inner.release().await?;
    /// outer.release().await?; // the last release frees it
    /// # Ok(()) }
    /// ```
    pub fn rlock(&self, name: impl Into<String>) -> Lock {
        let owner = crate::driver::owner::new_owner();
        Lock::new(self.engine.clone(), name.into(), LockKind::Reentrant, Some(owner))
    }

    /// A fair lock on key `name`, in Redisson 4.7's `RFairLock` layout: the reentrant hash of
    /// [`rlock`](Self::rlock) plus a FIFO queue of waiting owners
    /// (`redisson_lock_queue:{name}`, a LIST) and their deadlines
    /// (`redisson_lock_timeout:{name}`, a ZSET of wall-clock ms), so Java services using
    /// Redisson queue on the same lock.
    ///
    /// Waiters get the lock strictly in the order they queued, across processes and
    /// languages. Each waiter listens on its own channel (`redisson_lock__channel:{name}:
    /// <owner id>`), and a release tells the queue head only. A waiter that gives up (its wait
    /// ran out), is cancelled (the acquire future dropped) or fails leaves the queue at once.
    /// A waiter that dies (its process killed) stays queued until its deadline: one wait slot
    /// (its wait, or Redisson's 5-minute `fairLockWaitTimeout` when it waits without limit)
    /// after the waiter ahead of it, as in Redisson; until then it can stall those behind.
    /// `try_acquire` (a wait of zero) never queues (Redisson's `tryLock()`).
    ///
    /// The handle is one owner, as for `rlock`; options, guards, the watchdog and fencing as
    /// for `rlock`. Deadlines are the callers' wall clocks: hosts sharing a fair lock need
    /// synchronised clocks (NTP), as with Redisson. Single-node, Cluster or Sentinel clients
    /// only: on a quorum client acquires are `InvalidArgument`.
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let printer = client.fair_lock("printer").wait(Duration::from_secs(30));
    /// let turn = printer.acquire().await?; // waiters are served in the order they queued
    /// turn.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn fair_lock(&self, name: impl Into<String>) -> Lock {
        let owner = crate::driver::owner::new_owner();
        Lock::new(self.engine.clone(), name.into(), LockKind::Fair, Some(owner))
    }

    /// A read/write lock on key `name` (Redisson 4.7's `RReadWriteLock` layout); its
    /// [`read`](RwLock::read) and [`write`](RwLock::write) sides are [`Lock`]s sharing one
    /// owner (a fresh one per call; [`RwLock::owner`] picks it).
    ///
    /// ```no_run
    /// # async fn demo(client: redlatch::Client) -> Result<(), redlatch::Error> {
    /// use std::time::Duration;
    /// let prices = client.rw_lock("prices");
    /// let reading = prices.read().acquire().await?; // readers share it
    /// reading.release().await?;
    /// let writing = prices.write().lease(Duration::from_secs(10)).acquire().await?; // one writer, no readers
    /// writing.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn rw_lock(&self, name: impl Into<String>) -> RwLock {
        let owner = crate::driver::owner::new_owner();
        RwLock::new(self.engine.clone(), name.into(), owner)
    }

    /// Admin: deletes lock `name` whatever its owner and kind, waking its waiters (on every
    /// node): a lease or reentrant lock's on its unlock channel, a read/write lock's on its
    /// channel, a fair lock's queue head on the head's own channel (as Redisson's
    /// `forceUnlock` of each kind; waiters whose deadline passed are dropped from the queue
    /// first). Returns `true` when a lock was deleted on a majority of nodes.
    ///
    /// A key of a type no lock uses (a list, a set, ...) is never deleted: that is
    /// `KeyConflict`. A connection error is retried (at most twice); if an earlier try had applied,
    /// the retry finds nothing and reports `false`.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name; `Connection`/`Redis`/`NoPermission`/`KeyConflict`
    /// when a single node fails; `Quorum` (with per-node outcomes) when fewer than a majority
    /// of nodes answer within the per-node timeout.
    pub async fn force_unlock(&self, name: &str) -> Result<bool> {
        keys::validate_name(name)?;
        self.engine.registry.check_open()?;
        let engine = &self.engine;
        let req = request::force_unlock(name, engine.runtime.wall_clock_ms());
        // Quorum mode: the per-node timeout of a lock with the default lease (shared/API.md).
        let timeout = engine.node_timeout(engine.config.watchdog_timeout);
        let replies = engine.nodes.broadcast(&req, timeout).await;
        let (mut deleted, mut answered, mut reasons) = (0, 0, Vec::new());
        for r in replies {
            match r.and_then(|reply| reply::decode_force_unlock(&reply)) {
                Ok(was_deleted) => {
                    answered += 1;
                    deleted += usize::from(was_deleted);
                    reasons.push(Ok(()));
                }
                Err(e) if !engine.is_quorum() || e.is_permanent() => return Err(e),
                Err(e) => {
                    tracing::warn!(lock = %name, error = %e, "force unlock did not reach a node");
                    reasons.push(Err(e.message().to_owned()));
                }
            }
        }
        let majority = engine.majority();
        if answered < majority {
            // Nothing can be said about the lock: "not deleted" would be a guess.
            return Err(Error::new(
                ErrorKind::Quorum,
                format!(
                    "force unlock of {name:?} reached {answered} of {} nodes; a majority is {majority}",
                    engine.nodes.len()
                ),
            )
            .with_nodes(engine.nodes.outcomes(reasons)));
        }
        Ok(deleted >= majority)
    }

    /// Closes the client (all its clones): pending acquires stop with `Connection` ("the
    /// client is closed"; what they may have taken is undone in the background), every guard
    /// still held is released (resolves when Redis answered or failed; a release whose outcome
    /// stays unknown is retried in the background while the hold is valid, else its key
    /// expires with its lease), so are the permits still held (a permit semaphore's, and
    /// those its semaphore handles count, dropped ones included), and every later call of the client, its locks and its guards
    /// fails with that `Connection` error (`Guard::owned` is `false`). Idempotent. The
    /// connections close when that background work is done, although the client, its locks
    /// or its guards may still be alive (else when the last of them is dropped).
    pub async fn close(&self) {
        let Some(holds) = self.engine.registry.close() else {
            return;
        };
        let registry = &self.engine.registry;
        let releases = holds.iter().map(|hold| async move {
            // Later calls on its guard cannot start (the client is closed); one in flight
            // finishes first, so a hold its holder released meanwhile is not counted.
            if hold.held_when_idle().await {
                registry.note_released_by_close(hold.id);
            }
            if let Err(e) = hold.release().await {
                tracing::debug!(lock = %hold.name(), error = %e, "release at close failed");
            }
            if !hold.signal.is_settled() {
                crate::guard::release_in_background(hold);
            }
        });
        futures::future::join_all(releases).await;
        // Permits and the like: their renewal stops and they are released.
        let others = self.engine.registry.take_others().into_iter().map(|o| o.close());
        futures::future::join_all(others).await;
        // Nothing is renewed any more, and the connections close once the background work
        // still using them (retried releases, roll-backs of stopped acquires) is done, even
        // while locks and guards of this client live on (bindings keep theirs until their
        // garbage collector runs).
        self.engine.stop_renewing_and_disconnect();
        if let Some(renewer) = self.engine.renewer.get() {
            renewer.stop_renewing_and_disconnect();
        }
    }

    /// Gives this client up without releasing anything, for a host whose runtime is gone for
    /// good (the Node addon's local engine on a worker thread that ended: nothing runs on
    /// that thread again, so neither `close` nor a background release can). Its watchdog-mode
    /// holds are no longer renewed, here or by its renewer (`renew_through`, whose runtime
    /// would otherwise renew them for as long as the process lives), so they expire with
    /// their lease, the watchdog timeout, as when a process ends; the renewer's connections
    /// close, and later calls fail as on a closed client (`Connection`).
    pub fn abandon(&self) {
        let _ = self.engine.registry.close();
        self.engine.stop_renewing_and_disconnect();
        if let Some(renewer) = self.engine.renewer.get() {
            renewer.stop_renewing_and_disconnect();
        }
    }

    /// `true` once [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.engine.registry.is_closed()
    }

    /// This client's id: a random UUIDv4, the first half of every owner id it uses.
    pub fn id(&self) -> &str {
        &self.engine.client_id
    }

    /// Number of Redis nodes (1 = single node; more = quorum mode).
    pub fn node_count(&self) -> usize {
        self.engine.nodes.len()
    }

    /// Number of watchdog-mode holds being renewed right now (diagnostics).
    pub fn tracked_holds(&self) -> usize {
        let renewer = self.engine.renewer.get();
        self.engine.watchdog.len() + renewer.map_or(0, |r| r.watchdog.len())
    }

    /// The client's configuration.
    pub fn config(&self) -> &driver::Config {
        &self.engine.config
    }
}
