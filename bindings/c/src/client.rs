//! `redlatch_client`: connection(s) to one Redis node (or a Sentinel master), a quorum of
//! independent nodes, or a Redis Cluster.
//!
//! Ownership: made by `redlatch_client_new*` (boxed), freed by
//! `redlatch_client_free`. Threads: every function may be called on one client from any number
//! of threads at once; only the free must come after all other calls on it have returned. Lock
//! handles made from a client keep its connections and runtime alive, so they may outlive it.

use redlatch::{blocking, ClientBuilder, Result};
use std::ffi::{c_char, c_void};

use crate::deployment::{self, redlatch_warning_callback};
use crate::error::redlatch_status;
use crate::ffi::{arg, opt_arg, optional_millis, str_arg, Out};
use crate::fork::{park, Origin};
use crate::panic::{boundary, boundary_void};

/// A connected client (opaque). Thread-safe; see `redlatch_client_new`.
pub struct redlatch_client {
    pub(crate) inner: blocking::Client,
    pub(crate) origin: Origin,
}

// The thread-safety promised above, checked by the compiler.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<redlatch_client>();
};

/// Client settings. Zero (or NULL) in a field means the default; a zero-initialised struct
/// is all defaults, as is passing NULL. String fields are read during the call only.
/// docs/deployments.md describes each deployment.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct redlatch_client_options {
    /// Lease of locks acquired without one (watchdog mode), renewed every third of it.
    /// 0 = 30000 ms. At least 3 ms.
    pub watchdog_timeout_ms: u64,
    /// Timeout of each command and connection attempt; also how long repeated errors are
    /// retried by a wait without an end before the error is returned (a wait with one
    /// retries them until it ends). 0 = 3000 ms.
    pub network_timeout_ms: u64,
    /// Quorum mode: timeout of one request to one node. 0 = min(lease / 20, 250 ms).
    pub node_timeout_ms: u64,
    /// TLS (`rediss://`): a PEM file of CA certificates to trust instead of the system roots.
    pub tls_ca_file: *const c_char,
    /// ... or the same as PEM text (not both).
    pub tls_ca_pem: *const c_char,
    /// Mutual TLS: the client certificate chain (PEM file), with `tls_key_file`.
    pub tls_cert_file: *const c_char,
    /// Its private key (PEM file).
    pub tls_key_file: *const c_char,
    /// The client certificate chain as PEM text, with `tls_key_pem` (instead of the files).
    pub tls_cert_pem: *const c_char,
    /// Its private key as PEM text.
    pub tls_key_pem: *const c_char,
    /// The name the server certificate must be valid for, instead of the URL's host (single
    /// nodes and Sentinel).
    pub tls_server_name: *const c_char,
    /// Accept any server certificate: encrypted but not authenticated. Never the default.
    pub tls_insecure: bool,
    /// ACL user of the sentinels (`redis+sentinel://` URLs; the URL's own credentials are the
    /// data nodes'). Needs `sentinel_password`.
    pub sentinel_username: *const c_char,
    /// Password of the sentinels.
    pub sentinel_password: *const c_char,
    /// Replicas that must confirm each grant and renewal (`WAIT`, Redisson's
    /// `checkLockSyncedSlaves`): too few make an acquire fail with `REDLATCH_NOT_ACQUIRED`
    /// (the grant rolled back) and a renewal not count (the hold is reported lost when its
    /// validity runs out). 0 = off.
    pub sync_replicas: u32,
    /// How long each `WAIT` may block, below the network timeout. 0 = 1000 ms.
    pub sync_replicas_timeout_ms: u64,
    /// Deployment warnings (an evicting `maxmemory-policy`), once per node: NULL prints them
    /// on stderr. Runs on a runtime thread with the lost-lock callback's rules
    /// (`redlatch_lock_set_lost_callback`); `warning_user_data` must be usable there and
    /// outlive the client and its locks.
    pub on_warning: redlatch_warning_callback,
    /// Passed back to `on_warning`.
    pub warning_user_data: *mut c_void,
}

impl Default for redlatch_client_options {
    fn default() -> Self {
        let null = std::ptr::null();
        redlatch_client_options {
            watchdog_timeout_ms: 0,
            network_timeout_ms: 0,
            node_timeout_ms: 0,
            tls_ca_file: null,
            tls_ca_pem: null,
            tls_cert_file: null,
            tls_key_file: null,
            tls_cert_pem: null,
            tls_key_pem: null,
            tls_server_name: null,
            tls_insecure: false,
            sentinel_username: null,
            sentinel_password: null,
            sync_replicas: 0,
            sync_replicas_timeout_ms: 0,
            on_warning: None,
            warning_user_data: std::ptr::null_mut(),
        }
    }
}

/// Applies `opts` (NULL = defaults).
///
/// # Safety
/// The string fields of `opts` must be NULL or NUL-terminated strings alive for the call.
unsafe fn configure(
    mut builder: ClientBuilder,
    opts: Option<&redlatch_client_options>,
) -> Result<ClientBuilder> {
    let opts = opts.copied().unwrap_or_default();
    if let Some(d) = optional_millis("watchdog timeout", opts.watchdog_timeout_ms)? {
        builder = builder.watchdog_timeout(d);
    }
    if let Some(d) = optional_millis("network timeout", opts.network_timeout_ms)? {
        builder = builder.network_timeout(d);
    }
    if let Some(d) = optional_millis("node timeout", opts.node_timeout_ms)? {
        builder = builder.node_timeout(d);
    }
    // SAFETY: the caller's contract above.
    unsafe { deployment::apply(builder, &opts) }
}

fn connect(builder: ClientBuilder, out: Out<*mut redlatch_client>) -> Result<()> {
    let inner = blocking::Client::from_builder(builder)?;
    let client = Box::new(redlatch_client {
        inner,
        origin: Origin::here(),
    });
    // SAFETY: `out` was checked non-NULL; the caller guarantees it is writable.
    unsafe { out.write(Box::into_raw(client)) };
    Ok(())
}

/// Connects to the deployment `url` names: one Redis node, e.g. `"redis://127.0.0.1:6379"`,
/// `"redis://:password@host:6379/2"` or `"rediss://host:6380"` (TLS, see the `tls_*`
/// options); a Cluster (`"redis+cluster://h1:7000,h2:7001"`); or the master a Sentinel
/// deployment names (`"redis+sentinel://h1:26379,h2:26379/mymaster"`, followed across
/// failovers). Blocks until the node answers `PING` (at most the network timeout).
///
/// `opts` may be NULL (all defaults). On success `*out` receives a new client, owned by the
/// caller and freed with `redlatch_client_free`; on failure `*out` is not written.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL, non-UTF-8 or malformed URL, bad option, an
/// unreadable certificate file); `REDLATCH_CONNECTION` (no answer; a TLS failure says which:
/// wrong CA, wrong name, expired, client certificate refused).
///
/// # Safety
/// `url` must be NULL or a NUL-terminated string; `opts` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_client_new(
    url: *const c_char,
    opts: *const redlatch_client_options,
    out: *mut *mut redlatch_client,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let url = unsafe { str_arg("url", url) }?;
        let out = Out::new("out", out)?;
        // SAFETY: the caller's contract above.
        let builder = unsafe { configure(redlatch::Client::builder(url), opt_arg(opts)) }?;
        connect(builder, out)
    })
}

/// Connects to `count` independent Redis nodes for Redlock quorum locking (no replication
/// between them; 3 or 5 nodes are usual). Succeeds when a majority answers; the others are
/// connected when they come back.
///
/// `urls` is an array of `count` NUL-terminated strings. `opts`, `out`: as
/// `redlatch_client_new`.
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL array or element, `count` 0, non-UTF-8 or
/// malformed URL, a `host:port` given twice, bad option); `REDLATCH_QUORUM` (fewer than a
/// majority answered).
///
/// # Safety
/// `urls` must be NULL or point to `count` pointers, each NULL or a NUL-terminated string;
/// `opts` NULL or valid; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_client_new_quorum(
    urls: *const *const c_char,
    count: usize,
    opts: *const redlatch_client_options,
    out: *mut *mut redlatch_client,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let urls = unsafe { url_list(urls, count, "a quorum client") }?;
        let out = Out::new("out", out)?;
        // SAFETY: the caller's contract above.
        let builder = unsafe { configure(redlatch::Client::quorum_builder(&urls), opt_arg(opts)) }?;
        connect(builder, out)
    })
}

/// Connects to a Redis Cluster through any of its nodes: `urls` is an array of `count` seed
/// URLs (`redis://host:port` or `rediss://`), e.g. three of the masters. Slot moves and
/// failovers are followed (`MOVED`/`ASK`); waiters use sharded pub/sub where the cluster has
/// it. `redlatch_client_new("redis+cluster://h1:7000,h2:7001", ...)` is the same.
///
/// `opts`, `out`: as `redlatch_client_new` (`tls_server_name` is refused: Cluster nodes are
/// verified by the addresses they announce).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL array or element, `count` 0, non-UTF-8 or
/// malformed URL, bad option); `REDLATCH_CONNECTION` (no seed node answered; TLS failures say
/// which).
///
/// # Safety
/// As `redlatch_client_new_quorum`.
#[no_mangle]
pub unsafe extern "C" fn redlatch_client_new_cluster(
    urls: *const *const c_char,
    count: usize,
    opts: *const redlatch_client_options,
    out: *mut *mut redlatch_client,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let urls = unsafe { url_list(urls, count, "a Cluster client") }?;
        let out = Out::new("out", out)?;
        // SAFETY: the caller's contract above.
        let builder = unsafe { configure(redlatch::Client::cluster_builder(&urls), opt_arg(opts)) }?;
        connect(builder, out)
    })
}

/// The `count` URLs of `urls`, checked.
///
/// # Safety
/// `urls` must be NULL or point to `count` pointers, each NULL or a NUL-terminated string
/// alive for `'a`.
unsafe fn url_list<'a>(urls: *const *const c_char, count: usize, what: &str) -> Result<Vec<&'a str>> {
    if urls.is_null() {
        return Err(redlatch::Error::invalid("urls is NULL"));
    }
    if count == 0 {
        return Err(redlatch::Error::invalid(format!("{what} needs at least one URL")));
    }
    // SAFETY: non-NULL, and the caller guarantees `count` readable elements.
    let list = unsafe { std::slice::from_raw_parts(urls, count) };
    list.iter()
        .enumerate()
        // SAFETY: each element is NULL or a NUL-terminated string (caller's contract).
        .map(|(i, u)| unsafe { str_arg(&format!("urls[{i}]"), *u) })
        .collect()
}

/// Frees a client. NULL is a no-op. Call it once, after every other call on the client has
/// returned. Locks made from it stay usable (they keep the connections alive) until freed.
///
/// # Safety
/// `client` must be NULL or a client from `redlatch_client_new*` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn redlatch_client_free(client: *mut redlatch_client) {
    boundary_void(|| {
        if client.is_null() {
            return;
        }
        // SAFETY: a pointer from Box::into_raw in `connect`, freed only here (caller's contract).
        let client = unsafe { Box::from_raw(client) };
        if client.origin.is_foreign() {
            park(client);
        } else if crate::callback::in_callback() {
            // Dropping the last reference to the runtime on one of its own threads would panic.
            std::thread::spawn(move || drop(client));
        }
    })
}

/// Admin: deletes lock `name` whatever its owner (on every node), waking its waiters.
/// `*deleted` receives true when a lock was deleted (on a majority of nodes).
///
/// Errors: `REDLATCH_INVALID_ARGUMENT` (NULL, non-UTF-8 or empty name; NULL `deleted`);
/// `REDLATCH_CONNECTION` / `REDLATCH_REDIS` (single node); `REDLATCH_QUORUM` when fewer than
/// a majority of nodes answer within the per-node timeout.
///
/// # Safety
/// `client` NULL or valid; `name` NULL or a NUL-terminated string; `deleted` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn redlatch_force_unlock(
    client: *const redlatch_client,
    name: *const c_char,
    deleted: *mut bool,
) -> redlatch_status {
    boundary(|| {
        // SAFETY: the caller's contract above.
        let client = unsafe { arg("client", client) }?;
        // SAFETY: the caller's contract above.
        let name = unsafe { str_arg("name", name) }?;
        let deleted = Out::new("deleted", deleted)?;
        redlatch::protocol::keys::validate_name(name)?;
        client.origin.check("client")?;
        let was = client.inner.force_unlock(name)?;
        // SAFETY: checked non-NULL; writable by the caller's contract.
        unsafe { deleted.write(was) };
        Ok(())
    })
}
