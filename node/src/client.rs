//! `NativeClient`: the core client plus what `close()` needs to find: pending acquires (to
//! cancel them) and live holds (to release them).
//!
//! Why track them here rather than in the core: the core client is an `Arc` that holds and
//! locks share, so it has no "closed" state; the binding adds one. After `close()` every
//! call rejects with `ERR_CONNECTION` ("the client is closed"), pending acquires are
//! cancelled (which the core undoes in Redis), holds still alive are released, and the
//! connections close once the last core reference is gone.
//!
//! Holds are tracked weakly: a hold whose JavaScript object is garbage-collected without
//! `release()` drops its core guard, which releases it in the background.

use crate::calls::{Driver, Value};
use crate::error::{closed, IntoNapi};
use crate::held::HoldSlot;
use crate::local::Outs;
use crate::lock::NativeLock;
use crate::options::LockOptions;
use futures::channel::oneshot;
use napi::Env;
use napi_derive::napi;
use redlatch::protocol::keys;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Why a pending acquire was stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// `cancel(ticket)`: the caller's AbortSignal fired.
    Aborted,
    /// The client was closed.
    Closed,
}

/// State shared by a client, its locks and its holds.
pub(crate) struct Shared {
    client: Mutex<Option<redlatch::Client>>,
    pending: Mutex<HashMap<u32, oneshot::Sender<Stop>>>,
    holds: Mutex<HashMap<u64, Weak<HoldSlot>>>,
    next_hold: Mutex<u64>,
    quorum: bool,
    /// Runs this client's core futures and settles its calls (calls.rs).
    pub(crate) driver: Arc<Driver>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned mutex only means a panic elsewhere mid-update of plain maps.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// The core client, or the "closed" rejection.
    pub(crate) fn client(&self) -> napi::Result<redlatch::Client> {
        locked(&self.client).clone().ok_or_else(closed)
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

    /// Tracks a new hold; `false` when the client was closed meanwhile (the caller then
    /// releases it). Checked under the holds lock, which `close()` drains after closing.
    pub(crate) fn track(&self, slot: &Arc<HoldSlot>) -> bool {
        let mut holds = locked(&self.holds);
        if locked(&self.client).is_none() {
            return false;
        }
        holds.insert(slot.id, Arc::downgrade(slot));
        true
    }

    /// A fresh hold id.
    pub(crate) fn next_hold_id(&self) -> u64 {
        let mut n = locked(&self.next_hold);
        *n += 1;
        *n
    }

    /// Stops tracking hold `id` (released, or its JavaScript object was collected).
    pub(crate) fn untrack(&self, id: u64) {
        locked(&self.holds).remove(&id);
    }

    pub(crate) fn is_quorum(&self) -> bool {
        self.quorum
    }
}

/// Connection(s) to Redis: one node or a Redlock quorum of independent nodes.
#[napi]
pub struct NativeClient {
    pub(crate) shared: Arc<Shared>,
    id: String,
    node_count: u32,
    watchdog_timeout_ms: f64,
}

impl NativeClient {
    pub(crate) fn new(client: redlatch::Client, driver: Arc<Driver>) -> NativeClient {
        NativeClient {
            id: client.id().to_owned(),
            node_count: client.node_count() as u32,
            watchdog_timeout_ms: client.config().watchdog_timeout.as_millis() as f64,
            shared: Arc::new(Shared {
                quorum: client.node_count() > 1,
                client: Mutex::new(Some(client)),
                pending: Mutex::new(HashMap::new()),
                holds: Mutex::new(HashMap::new()),
                next_hold: Mutex::new(0),
                driver,
            }),
        }
    }
}

#[napi]
impl NativeClient {
    /// This client's id (a UUID, the first half of every reentrant owner id).
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }

    /// Number of Redis nodes (1 = single node, more = quorum).
    #[napi(getter)]
    pub fn node_count(&self) -> u32 {
        self.node_count
    }

    /// The watchdog timeout in ms (lease of locks acquired without `leaseMs`).
    #[napi(getter)]
    pub fn watchdog_timeout_ms(&self) -> f64 {
        self.watchdog_timeout_ms
    }

    /// `true` once `close()` was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        locked(&self.shared.client).is_none()
    }

    /// A lock handle. Throws `ERR_INVALID_ARGUMENT` for a bad name or options (empty name,
    /// over 4096 bytes, bad `leaseMs`/`waitMs`, `fenced` on a quorum client) and
    /// `ERR_CONNECTION` on a closed client.
    #[napi]
    pub fn lock(&self, name: String, options: LockOptions) -> napi::Result<NativeLock> {
        keys::validate_name(&name).js()?;
        self.shared.client()?;
        NativeLock::new(self.shared.clone(), name, options)
    }

    /// Admin: deletes lock `name` whatever its owner, waking its waiters; settles call `id`
    /// with `true` when a lock was deleted (on a majority of nodes).
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn force_unlock<'env>(&self, env: &'env Env, name: String, id: u32) -> napi::Result<Outs<'env>> {
        keys::validate_name(&name).js()?;
        let client = self.shared.client()?;
        self.shared.driver.call(env, id, async move {
            client.force_unlock(&name).await.map(Value::Bool)
        })
    }

    /// Cancels the pending acquire registered under `ticket` (no-op when it has finished).
    /// The acquire rejects; anything it may have taken in Redis is undone in the background.
    #[napi]
    pub fn cancel(&self, ticket: u32) {
        if let Some(tx) = locked(&self.shared.pending).remove(&ticket) {
            let _ = tx.send(Stop::Aborted);
        }
    }

    /// Closes the client: pending acquires reject, live holds are released (call `id`
    /// settles when Redis confirmed or failed), later calls reject with `ERR_CONNECTION`.
    /// Idempotent.
    #[napi(ts_return_type = "unknown[] | null")]
    pub fn close<'env>(&self, env: &'env Env, id: u32) -> napi::Result<Outs<'env>> {
        let shared = self.shared.clone();
        let driver = shared.driver.clone();
        driver.call(env, id, async move {
            let (client, pending) = {
                let mut p = locked(&shared.pending);
                let Some(client) = locked(&shared.client).take() else {
                    return Ok(Value::Unit);
                };
                (client, p.drain().map(|(_, tx)| tx).collect::<Vec<_>>())
            };
            for tx in pending {
                let _ = tx.send(Stop::Closed);
            }
            drop(client);
            let holds: Vec<Arc<HoldSlot>> = locked(&shared.holds)
                .drain()
                .filter_map(|(_, w)| w.upgrade())
                .collect();
            futures::future::join_all(holds.iter().map(|h| h.release_on_close())).await;
            Ok(Value::Unit)
        })
    }
}
