//! `WasmClient`: the core's [`Client`] over JS transports and the JS runtime.
//!
//! One transport = a single node; several = a Redlock quorum of independent nodes. Lock
//! logic (scripts, quorum, validity, waiting, watchdog) is the core's; this class only plugs
//! in [`JsTransport`], [`JsRuntime`] and the checks of the random source.

use crate::error::{invalid, to_js, IntoJs};
use crate::family::{WasmLatch, WasmPermitSemaphore, WasmSemaphore};
use crate::lock::{Kind, Spec, WasmLock};
use crate::multi::{specs, WasmMultiLock};
use crate::options;
use crate::runtime::JsRuntime;
use crate::transport::JsTransport;
use js_sys::{Array, Promise};
use redlatch::protocol::keys;
use redlatch::QuorumServers;
use redlatch::{Client, Error, ErrorKind, Runtime, Transport};
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

/// Connection(s) to Redis through host transports, and the locks made from them.
#[wasm_bindgen]
pub struct WasmClient {
    client: Client,
}

/// Fails unless the host has a secure random source (Web Crypto's `getRandomValues`, used by
/// getrandom's `wasm_js` backend). Tokens and client ids come only from there; there is
/// deliberately no fallback (shared/reference/faults.md S1).
pub fn check_random_source() -> Result<(), JsValue> {
    let mut probe = [0u8; 16];
    getrandom::fill(&mut probe).map_err(|e| {
        to_js(&Error::new(
            ErrorKind::Panic,
            format!(
                "no secure random source ({e}): redlatch needs crypto.getRandomValues for lock tokens and has no fallback"
            ),
        ))
    })
}

#[wasm_bindgen]
impl WasmClient {
    /// A client over `transports` (an array of `RedisTransport` objects, at least one) with
    /// `options` `{ watchdogTimeoutMs, networkTimeoutMs, nodeTimeoutMs, pollIntervalMs }`
    /// (integer ms, each optional).
    ///
    /// # Errors
    /// Throws `InvalidArgumentError` for a bad transport or option, and a `LockError` with
    /// code `ERR_PANIC` when the host has no secure random source.
    #[wasm_bindgen(constructor)]
    pub fn new(transports: JsValue, options: JsValue) -> Result<WasmClient, JsValue> {
        check_random_source()?;
        let config = options::client_config(&options)?;
        if !Array::is_array(&transports) {
            return Err(invalid(
                "transports must be a non-empty array of transport objects",
            ));
        }
        let list: Array = transports.unchecked_into();
        if list.length() == 0 {
            return Err(invalid(
                "transports must be a non-empty array of transport objects",
            ));
        }
        let mut nodes: Vec<Arc<dyn Transport>> = Vec::with_capacity(list.length() as usize);
        // A quorum's transports must reach servers of their own (transport.rs).
        let servers = (list.length() > 1).then(|| Arc::new(QuorumServers::default()));
        for (i, value) in list.iter().enumerate() {
            // One transport object given twice would cast two votes for one server.
            if list
                .iter()
                .take(i)
                .any(|earlier| js_sys::Object::is(&earlier, &value))
            {
                return Err(invalid(format!(
                    "a quorum's nodes must be independent servers: transport {} is given more than once",
                    i + 1
                )));
            }
            let transport = JsTransport::from_js(value, i)?;
            nodes.push(Arc::new(match &servers {
                Some(servers) => transport.in_quorum(servers.clone()),
                None => transport,
            }));
        }
        // Two transports of one server under the same label (two adapters over one client,
        // or two clients of one host:port) would cast two votes too (a user trial).
        let labels: Vec<&str> = nodes.iter().map(|t| t.label()).collect();
        redlatch::protocol::quorum::independent(&labels).js()?;
        let runtime: Arc<dyn Runtime> = Arc::new(JsRuntime::new());
        let client = Client::from_transports(nodes, runtime, config).js()?;
        Ok(WasmClient { client })
    }

    /// This client's id (a random UUIDv4; the first half of every reentrant owner id).
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.client.id().to_owned()
    }

    /// Number of Redis nodes (1 = single node, more = quorum).
    #[wasm_bindgen(getter, js_name = nodeCount)]
    pub fn node_count(&self) -> u32 {
        self.client.node_count() as u32
    }

    /// Watchdog-mode holds being renewed right now (diagnostics).
    #[wasm_bindgen(getter, js_name = trackedHolds)]
    pub fn tracked_holds(&self) -> u32 {
        self.client.tracked_holds() as u32
    }

    /// The watchdog timeout in ms (the lease of locks acquired without `leaseMs`).
    #[wasm_bindgen(getter, js_name = watchdogTimeoutMs)]
    pub fn watchdog_timeout_ms(&self) -> f64 {
        self.client.config().watchdog_timeout.as_millis() as f64
    }

    /// A lock handle of `kind` (`js/src/engine.mjs` `KIND`): 0 = lease lock (redis-py /
    /// node-redlock format), 1 = reentrant (Redisson RLock layout), 2 = fair (RFairLock),
    /// 3 / 4 = the read / write lock of a Redisson RReadWriteLock. `leaseMs` absent =
    /// watchdog mode; `waitMs` is the
    /// default wait of `acquire` (absent or `Infinity` = forever, 0 = one try). `fenceTtlMs`
    /// (fenced locks): the counter key expires that long after the last fenced acquire
    /// (absent: it persists; see `Lock::fence_ttl` in the core for the hazard).
    ///
    /// # Errors
    /// Throws `InvalidArgumentError` for an empty or too long name, an unknown kind, a bad
    /// duration, or `fenced` on a quorum client: the core's checks (`Lock::check`), made
    /// here, as the native entry does.
    pub fn lock(
        &self,
        name: String,
        kind: u32,
        #[wasm_bindgen(js_name = leaseMs)] lease_ms: Option<f64>,
        #[wasm_bindgen(js_name = waitMs)] wait_ms: Option<f64>,
        fenced: Option<bool>,
        #[wasm_bindgen(js_name = fenceTtlMs)] fence_ttl_ms: Option<f64>,
    ) -> Result<WasmLock, JsValue> {
        let kind = Kind::from_js(kind)?;
        let lease = lease_ms.map(options::lease).transpose()?;
        let wait = options::wait(wait_ms)?;
        let fence_ttl = match fence_ttl_ms {
            Some(ms) => Some(Duration::from_millis(options::millis("fenceTtlMs", ms, false)?)),
            None => None,
        };
        let spec = Spec {
            client: self.client.clone(),
            name,
            kind,
            lease,
            wait,
            fenced: fenced == Some(true),
            fence_ttl,
        };
        // The core's checks of the name and options, once here (again at each acquire).
        spec.build(None).check().js()?;
        Ok(WasmLock::new(spec))
    }

    /// A semaphore handle (Redisson RSemaphore) on key `name`; `permits`: its
    /// `initial_permits` (set by its first acquire or `available` if the semaphore has no
    /// count yet).
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad name.
    pub fn semaphore(&self, name: String, permits: Option<u32>) -> Result<WasmSemaphore, JsValue> {
        keys::validate_name(&name).js()?;
        let sem = self.client.semaphore(name);
        Ok(WasmSemaphore::new(match permits {
            Some(n) => sem.initial_permits(n.into()),
            None => sem,
        }))
    }

    /// A permit-expirable semaphore handle (Redisson RPermitExpirableSemaphore); `permits`
    /// as for `semaphore`.
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad name.
    #[wasm_bindgen(js_name = permitSemaphore)]
    pub fn permit_semaphore(
        &self,
        name: String,
        permits: Option<u32>,
    ) -> Result<WasmPermitSemaphore, JsValue> {
        keys::validate_name(&name).js()?;
        let sem = self.client.permit_semaphore(name);
        Ok(WasmPermitSemaphore::new(match permits {
            Some(n) => sem.initial_permits(n.into()),
            None => sem,
        }))
    }

    /// A count-down latch handle (Redisson RCountDownLatch).
    ///
    /// # Errors
    /// `InvalidArgumentError` for a bad name.
    #[wasm_bindgen(js_name = countDownLatch)]
    pub fn count_down_latch(&self, name: String) -> Result<WasmLatch, JsValue> {
        keys::validate_name(&name).js()?;
        Ok(WasmLatch::new(self.client.count_down_latch(name)))
    }

    /// A multi-lock over `members` (copies of this client's locks, from `WasmLock.member()`;
    /// consumed), with `leaseMs` for every member (absent: each member's own).
    ///
    /// # Errors
    /// `InvalidArgumentError` for an empty set, a name given twice or a bad lease.
    #[wasm_bindgen(js_name = multiLock)]
    pub fn multi_lock(
        &self,
        members: Vec<WasmLock>,
        #[wasm_bindgen(js_name = leaseMs)] lease_ms: Option<f64>,
    ) -> Result<WasmMultiLock, JsValue> {
        let lease = lease_ms.map(options::lease).transpose()?;
        WasmMultiLock::new(self.client.clone(), specs(&members), lease)
    }

    /// Closes the core client: every guard still held, permit and multi-lock member is
    /// released (resolves when Redis answered or failed), pending waits stop, later calls
    /// reject with `RedisConnectionError`. The transports stay open (they are the host's).
    pub fn close(&self) -> Promise {
        let client = self.client.clone();
        future_to_promise(async move {
            client.close().await;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Admin: deletes lock `name` whatever its owner. Resolves `true` when a lock was deleted
    /// (on a majority of nodes).
    #[wasm_bindgen(js_name = forceUnlock)]
    pub fn force_unlock(&self, name: String) -> Promise {
        let client = self.client.clone();
        future_to_promise(async move {
            let deleted = client.force_unlock(&name).await.js()?;
            Ok(JsValue::from_bool(deleted))
        })
    }
}
