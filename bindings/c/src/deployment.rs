//! The deployment fields of `redlatch_client_options` (TLS, Sentinel credentials,
//! `sync_replicas`) mapped onto the core's [`redlatch::DeploymentOptions`], which checks
//! them the same way for every binding, and the deployment-warning callback.
//!
//! Warnings (today: a `maxmemory-policy` that may evict lock keys) are reported once per
//! node and client: to `on_warning` when set, else as one line on stderr
//! (`redlatch: warning: ...`), the usual channel of a C library. The callback runs on one of
//! the client's runtime threads under the same rules as the lost-lock callback (see
//! [`crate::callback`]): return quickly, call no function that returns a status.

use redlatch::{ClientBuilder, DeploymentOptions, Result};
use std::ffi::{c_char, c_void, CString};
use std::path::PathBuf;

use crate::callback::{enter_callback, leave_callback};
use crate::client::redlatch_client_options;
use crate::ffi::optional_millis;

/// `void (*)(void *user_data, const char *kind, const char *message)`: called once per node
/// and condition with a deployment warning. `kind` is stable for matching (`"eviction"`,
/// `"pubsub"`, `"renewal"`, `"release"`: see the README);
/// `message` is the full text; both are valid only during the call. Runs on a runtime thread
/// (see `redlatch_client_options.on_warning`).
pub type redlatch_warning_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, kind: *const c_char, message: *const c_char)>;

/// An optional C string field: NULL = unset.
///
/// # Safety
/// `ptr` must be NULL or a NUL-terminated string alive for the call.
unsafe fn field(what: &str, ptr: *const c_char) -> Result<Option<String>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller's contract above.
    unsafe { crate::ffi::str_arg(what, ptr) }.map(|s| Some(s.to_owned()))
}

/// The user's callback and pointer, moved to the runtime thread that reports warnings.
struct Registered {
    callback: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char),
    user_data: *mut c_void,
}

// SAFETY: `user_data` is the caller's pointer, handed back to its callback on a runtime
// thread; `redlatch_client_options.on_warning` documents that it must be usable there.
unsafe impl Send for Registered {}
// SAFETY: as above; the pointer is only passed back, never dereferenced here.
unsafe impl Sync for Registered {}

/// Applies the deployment fields of `opts` and the warning channel to `builder`.
///
/// # Safety
/// Every string field of `opts` must be NULL or a NUL-terminated string alive for the call.
pub(crate) unsafe fn apply(builder: ClientBuilder, opts: &redlatch_client_options) -> Result<ClientBuilder> {
    // SAFETY: every string field of `opts` is NULL or a live NUL-terminated string (the
    // caller's contract above).
    let text = |what: &str, ptr: *const c_char| unsafe { field(what, ptr) };
    let options = DeploymentOptions {
        tls_ca_file: text("tls_ca_file", opts.tls_ca_file)?.map(PathBuf::from),
        tls_ca_pem: text("tls_ca_pem", opts.tls_ca_pem)?.map(String::into_bytes),
        tls_cert_file: text("tls_cert_file", opts.tls_cert_file)?.map(PathBuf::from),
        tls_key_file: text("tls_key_file", opts.tls_key_file)?.map(PathBuf::from),
        tls_cert_pem: text("tls_cert_pem", opts.tls_cert_pem)?.map(String::into_bytes),
        tls_key_pem: text("tls_key_pem", opts.tls_key_pem)?.map(String::into_bytes),
        tls_server_name: text("tls_server_name", opts.tls_server_name)?,
        tls_insecure: opts.tls_insecure,
        sentinel_username: text("sentinel_username", opts.sentinel_username)?,
        sentinel_password: text("sentinel_password", opts.sentinel_password)?,
        sync_replicas: opts.sync_replicas,
        sync_replicas_timeout: optional_millis("sync_replicas timeout", opts.sync_replicas_timeout_ms)?,
    };
    let builder = options.apply(builder)?;
    let registered = opts.on_warning.map(|callback| Registered {
        callback,
        user_data: opts.warning_user_data,
    });
    Ok(builder.on_warning(move |w| match &registered {
        Some(r) => {
            // Core texts have no NUL; an impossible one would only shorten the text.
            let kind = CString::new(w.kind).unwrap_or_default();
            let message = CString::new(w.message.as_str()).unwrap_or_default();
            enter_callback();
            // SAFETY: a C function pointer with the documented signature, its user_data, and
            // NUL-terminated strings that outlive the call. C code cannot unwind into us.
            unsafe { (r.callback)(r.user_data, kind.as_ptr(), message.as_ptr()) };
            leave_callback();
        }
        None => eprintln!("redlatch: warning: {}", w.message),
    }))
}
