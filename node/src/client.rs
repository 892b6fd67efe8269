//! `NativeClient`: the core client plus the tables JavaScript refers to by number: pending
//! acquires (to cancel them by ticket), holds, permits and multi-lock acquisitions. Its lock
//! and hold operations are in lock.rs and held.rs; connecting is in connect.rs.
//!
//! `close()` is the core's `Client::close`: pending acquires stop (the core undoes what
//! they took), holds, permits and multi-lock members still held are released, the
//! connections close, and every later call rejects with `ERR_CONNECTION` ("the client is
//! closed"). The binding only keeps the state it needs before the core client exists (a
//! client not connected yet is closed for every call).
//!
//! Holds are numbers for JavaScript: ids in this client's table (held.rs). The facade's
//! engine drops a hold's entry when its JavaScript object is garbage-collected
//! (`dropHold`, from a `FinalizationRegistry`), which releases it in the background if it
//! was never released.

use crate::calls::{Driver, Value};
use crate::connect::Plan;
use crate::deployment::WarningCallback;
use crate::error::closed;
use crate::family::PermitSlot;
use crate::held::HoldSlot;
use crate::local::Scratch;
use crate::options::ClientOptions;
use futures::channel::oneshot;
use napi_derive::napi;
use redlatch::{MultiGuard, Permit};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Why a pending acquire was stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `cancel(ticket)`: the caller's AbortSignal fired.
    Aborted,
    /// The client was closed.
    Closed,
}

/// What `connect` reads once it is done.
pub(crate) struct Meta {
    pub(crate) id: String,
    pub(crate) node_count: u32,
    pub(crate) watchdog_timeout_ms: f64,
}

/// State shared by a client and its holds.
pub(crate) struct Shared {
    client: Mutex<Option<redlatch::Client>>,
    closed: std::sync::atomic::AtomicBool,
    pending: Mutex<HashMap<u32, oneshot::Sender<Stop>>>,
    pub(crate) holds: Mutex<HashMap<u64, Arc<HoldSlot>>>,
    /// Permits of permit semaphores (family.rs), by the numbers JavaScript holds.
    pub(crate) permits: Mutex<HashMap<u64, Arc<PermitSlot>>>,
    /// Multi-lock acquisitions (multi.rs), by the numbers JavaScript holds.
    pub(crate) multis: Mutex<HashMap<u64, Arc<MultiGuard>>>,
    /// The permits and multi-lock acquisitions `close()` released while held (they leave
    /// their tables then): their state reads lost to their holders, as a lock's does.
    pub(crate) released_by_close: Mutex<std::collections::HashSet<u64>>,
    next_hold: Mutex<u64>,
    pub(crate) meta: OnceLock<Meta>,
    /// Runs this client's core futures and settles its calls (calls.rs).
    pub(crate) driver: Arc<Driver>,
}

pub(crate) fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned mutex only means a panic elsewhere mid-update of plain maps.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// The core client, or the "closed" rejection (also before `connect` finished).
    pub(crate) fn client(&self) -> napi::Result<redlatch::Client> {
        locked(&self.client).clone().ok_or_else(closed)
    }

    /// Stores the connected core client (`connect`); `false` when `close()` came first.
    pub(crate) fn opened(&self, client: redlatch::Client) -> bool {
        let _ = self.meta.set(Meta {
            id: client.id().to_owned(),
            node_count: client.node_count() as u32,
            watchdog_timeout_ms: client.config().watchdog_timeout.as_millis() as f64,
        });
        let _pending = locked(&self.pending);
        if self.is_closed() {
            return false;
        }
        *locked(&self.client) = Some(client);
        true
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Registers a pending acquire under `ticket`; the receiver fires on cancel or close.
    pub(crate) fn start_pending(&self, ticket: u32) -> napi::Result<oneshot::Receiver<Stop>> {
        let (tx, rx) = oneshot::channel();
        // Checked under the pending lock, so close() cannot miss an acquire that starts now.
        let mut pending = locked(&self.pending);
        if locked(&self.client).is_none() {
            return Err(closed());
        }
        pending.insert(ticket, tx);
        Ok(rx)
    }

    /// Forgets a finished acquire.
    pub(crate) fn end_pending(&self, ticket: u32) {
        locked(&self.pending).remove(&ticket);
    }

    /// Adds a new hold to the table and returns its id; `None` when the client was closed
    /// meanwhile (the caller then releases it). Checked under the holds lock, which
    /// `close()` goes through after closing.
    pub(crate) fn track(&self, slot: Arc<HoldSlot>) -> Option<u64> {
        let mut holds = locked(&self.holds);
        if locked(&self.client).is_none() {
            return None;
        }
        let id = self.next_number();
        holds.insert(id, slot);
        Some(id)
    }

    fn next_number(&self) -> u64 {
        let mut n = locked(&self.next_hold);
        *n += 1;
        *n
    }

    /// Adds a permit to the permit table (as `track` does for holds); `None` when the client
    /// was closed meanwhile (the permit is then dropped: released in the background).
    pub(crate) fn track_permit(&self, permit: Permit) -> Option<u64> {
        let mut permits = locked(&self.permits);
        locked(&self.client).as_ref()?;
        let id = self.next_number();
        permits.insert(id, Arc::new(Mutex::new(Some(Arc::new(permit)))));
        Some(id)
    }

    /// The permit numbered `permit`, if its entry is still there.
    pub(crate) fn permit(&self, permit: f64) -> Option<Arc<PermitSlot>> {
        locked(&self.permits).get(&(permit as u64)).cloned()
    }

    /// Adds a multi-lock acquisition to its table; `None` when the client was closed meanwhile.
    pub(crate) fn track_multi(&self, guard: MultiGuard) -> Option<u64> {
        let mut multis = locked(&self.multis);
        locked(&self.client).as_ref()?;
        let id = self.next_number();
        multis.insert(id, Arc::new(guard));
        Some(id)
    }

    /// The multi-lock acquisition numbered `multi`, if its entry is still there.
    pub(crate) fn multi(&self, multi: f64) -> Option<Arc<MultiGuard>> {
        locked(&self.multis).get(&(multi as u64)).cloned()
    }

    /// The hold with id `hold`, if its entry is still there.
    pub(crate) fn hold(&self, hold: f64) -> Option<Arc<HoldSlot>> {
        locked(&self.holds).get(&(hold as u64)).cloned()
    }

    /// Removes hold `id` from the table if it is still `slot` (released: held.rs).
    pub(crate) fn retire_hold(&self, id: u64, slot: &Arc<HoldSlot>) {
        let retired = {
            let mut holds = locked(&self.holds);
            match holds.get(&id) {
                Some(s) if Arc::ptr_eq(s, slot) => holds.remove(&id),
                _ => None,
            }
        };
        // Dropped outside the table's lock.
        drop(retired);
    }
}

/// Connection(s) to Redis: one node (or a Sentinel master), a Redlock quorum of independent
/// nodes, or a Redis Cluster. Made with `new NativeClient(urls, options, local, cluster,
/// onWarning)`, then `connect(id, out)`.
#[napi]
pub struct NativeClient {
    pub(crate) shared: Arc<Shared>,
    /// What `connect` needs (taken by it).
    pub(crate) plan: Mutex<Option<Plan>>,
}

#[napi]
impl NativeClient {
    /// A client over `urls`: one URL = a single node, or the deployment a
    /// `redis+cluster://` / `redis+sentinel://` URL names; several = a quorum; with
    /// `cluster`, seed nodes of a Redis Cluster. Nothing is sent before `connect`. `local`:
    /// the core runs on the JavaScript thread over Node sockets (single nodes and quorums of
    /// `redis://` / `rediss://` URLs without deployment options only), else on the addon's
    /// tokio thread over redis-rs connections. `onWarning` gets each deployment warning (an
    /// evicting `maxmemory-policy`), once per node, on the JavaScript thread. Throws
    /// `ERR_INVALID_ARGUMENT` for no URL or bad options (integer ms, in range).
    #[napi(
        constructor,
        ts_args_type = "urls: Array<string>, options: ClientOptions | undefined | null, local: boolean, cluster: boolean, onWarning: (warning: DeploymentWarning) => void"
    )]
    pub fn new(
        urls: Vec<String>,
        options: Option<ClientOptions>,
        local: bool,
        cluster: bool,
        on_warning: WarningCallback,
    ) -> napi::Result<Self> {
        crate::check_worker_threads()?;
        let mut options = options.unwrap_or_default();
        let config = crate::connect::config(&options)?;
        if urls.is_empty() {
            return Err(crate::error::invalid("at least one Redis URL is required"));
        }
        let plan = Plan {
            urls,
            config,
            deployment: options.deployment(),
            node_trusted_ca: options.node_trusted_ca.take(),
            cluster,
            on_warning,
        };
        if local {
            plan.check_local()?;
        }
        Ok(NativeClient {
            shared: Arc::new(Shared {
                client: Mutex::new(None),
                closed: std::sync::atomic::AtomicBool::new(false),
                pending: Mutex::new(HashMap::new()),
                holds: Mutex::new(HashMap::new()),
                permits: Mutex::new(HashMap::new()),
                multis: Mutex::new(HashMap::new()),
                released_by_close: Mutex::default(),
                next_hold: Mutex::new(0),
                meta: OnceLock::new(),
                driver: Driver::current(local)?,
            }),
            plan: Mutex::new(Some(plan)),
        })
    }

    /// This client's id (a UUID, the first half of every reentrant owner id); empty before
    /// `connect` resolved.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.shared.meta.get().map(|m| m.id.clone()).unwrap_or_default()
    }

    /// Number of Redis transports: 1 for a single node, a Cluster or Sentinel; N for a
    /// quorum of N nodes.
    #[napi(getter)]
    pub fn node_count(&self) -> u32 {
        self.shared.meta.get().map_or(0, |m| m.node_count)
    }

    /// The watchdog timeout in ms (lease of locks acquired without `leaseMs`).
    #[napi(getter)]
    pub fn watchdog_timeout_ms(&self) -> f64 {
        self.shared.meta.get().map_or(0.0, |m| m.watchdog_timeout_ms)
    }

    /// `true` once `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// Cancels the pending acquire registered under `ticket` (no-op when it has finished).
    /// The acquire rejects; anything it may have taken in Redis is undone in the background.
    #[napi]
    pub fn cancel(&self, ticket: u32) {
        if let Some(tx) = locked(&self.shared.pending).remove(&ticket) {
            let _ = tx.send(Stop::Aborted);
        }
    }

    /// Closes the client: pending acquires reject, live holds, permits and multi-lock members
    /// are released by the core's `Client::close` (call `id` settles when Redis confirmed or
    /// failed), later calls reject with `ERR_CONNECTION`. Idempotent.
    #[napi]
    pub fn close(&self, id: u32, out: Scratch<'_>) -> Option<String> {
        let shared = self.shared.clone();
        let driver = shared.driver.clone();
        driver.call(out, id, async move {
            let (client, pending) = {
                let mut p = locked(&shared.pending);
                shared.closed.store(true, std::sync::atomic::Ordering::Release);
                let client = locked(&shared.client).take();
                (client, p.drain().map(|(_, tx)| tx).collect::<Vec<_>>())
            };
            for tx in pending {
                let _ = tx.send(Stop::Closed);
            }
            let Some(client) = client else {
                return Ok(Value::Unit);
            };
            // The hold entries stay (until their JavaScript objects are collected): a later
            // release or state query finds them, released by the core's close
            // (`Guard::released_by_close`), which also lets go of the connections.
            client.close().await;
            // Permits and multi-lock acquisitions leave their tables (settled by now), so
            // they read as ended; those it released while held read as lost too.
            let permits: Vec<(u64, Arc<PermitSlot>)> = locked(&shared.permits)
                .iter()
                .map(|(n, p)| (*n, p.clone()))
                .collect();
            let mut released = Vec::new();
            for (n, permit) in permits {
                if locked(&permit).take().is_some_and(|p| p.released_by_close()) {
                    released.push(n);
                }
            }
            let multis = std::mem::take(&mut *locked(&shared.multis));
            released.extend(
                multis
                    .into_iter()
                    .filter(|(_, g)| g.released_by_close())
                    .map(|(n, _)| n),
            );
            locked(&shared.released_by_close).extend(released);
            Ok(Value::Unit)
        })
    }
}
