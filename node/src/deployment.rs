//! Deployment options of a client (TLS, Sentinel credentials, `syncReplicas`) and the
//! deployment warnings, mapped onto the core's [`redlatch::DeploymentOptions`], which checks
//! them the same way for every binding.
//!
//! Warnings (an evicting `maxmemory-policy`) come from the core on a tokio thread; they reach
//! JavaScript through a *weak* threadsafe function (it never keeps the process alive), and
//! the facade turns them into `process.emitWarning(message, { type: 'DeploymentWarning' })`.

use crate::error::invalid;
use crate::options::opt_millis;
use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use redlatch::{ClientBuilder, DeploymentOptions};
use std::sync::Arc;

/// TLS settings of `rediss://` URLs (`options.tls`). Without them a `rediss://` URL is
/// verified against the system roots. PEM text arrives as strings (the facade converts
/// Buffers).
// No `Debug`: it carries private keys.
#[napi(object)]
#[derive(Default, Clone)]
pub struct TlsOptions {
    /// CA certificate(s) to trust instead of the system roots, as PEM text...
    pub ca: Option<String>,
    /// ...or as a PEM file (not both).
    pub ca_file: Option<String>,
    /// Mutual TLS: the client certificate chain as PEM text (with `key`)...
    pub cert: Option<String>,
    /// ...its private key as PEM text.
    pub key: Option<String>,
    /// The client certificate chain as a PEM file (with `keyFile`).
    pub cert_file: Option<String>,
    /// Its private key as a PEM file.
    pub key_file: Option<String>,
    /// Name the server certificate must be valid for, instead of the URL's host.
    pub server_name: Option<String>,
    /// Accept any server certificate (encrypted, not authenticated). Never the default.
    pub insecure: Option<bool>,
}

/// The deployment part of `ClientOptions` (no `Debug`: passwords and keys).
#[derive(Default, Clone)]
pub(crate) struct Deployment {
    pub(crate) tls: Option<TlsOptions>,
    pub(crate) sentinel_username: Option<String>,
    pub(crate) sentinel_password: Option<String>,
    pub(crate) sync_replicas: Option<f64>,
    pub(crate) sync_replicas_timeout_ms: Option<f64>,
}

/// One deployment warning, as the facade's callback receives it.
#[napi(object)]
#[derive(Debug, Clone)]
pub struct DeploymentWarning {
    /// What it is about, stable for matching: `"eviction"`, `"pubsub"` (the user may not
    /// `SUBSCRIBE`: waiters poll) or `"renewal"`.
    pub kind: String,
    /// The node (`host:port`, never credentials).
    pub node: String,
    /// The full text.
    pub message: String,
}

/// The facade's warning callback: weak (never keeps Node alive), errors not passed to it.
pub(crate) type WarningCallback =
    ThreadsafeFunction<DeploymentWarning, Unknown<'static>, DeploymentWarning, Status, false, true>;

impl Deployment {
    /// `true` when no deployment option was given.
    pub(crate) fn is_default(&self) -> bool {
        self.tls.is_none()
            && self.sentinel_username.is_none()
            && self.sentinel_password.is_none()
            && self.sync_replicas.is_none()
            && self.sync_replicas_timeout_ms.is_none()
    }

    /// These settings, trusting `node_trusted_ca` (the CA certificates Node trusts, as PEM
    /// text) unless they name a CA of their own or turn verification off.
    pub(crate) fn trusting(mut self, node_trusted_ca: Option<String>) -> Self {
        let tls = self.tls.get_or_insert_with(TlsOptions::default);
        let own_trust = tls.ca.is_some() || tls.ca_file.is_some() || tls.insecure == Some(true);
        if !own_trust {
            tls.ca = node_trusted_ca;
        }
        self
    }

    /// Applies these settings and the warning callback to `builder`.
    ///
    /// # Errors
    /// `ERR_INVALID_ARGUMENT` for a bad `syncReplicas` or timeout, a certificate without its
    /// key, a CA given twice, a sentinel user without a password (messages from the core).
    pub(crate) fn apply(
        self,
        builder: ClientBuilder,
        on_warning: Option<WarningCallback>,
    ) -> napi::Result<ClientBuilder> {
        let tls = self.tls.unwrap_or_default();
        let sync_replicas = match self.sync_replicas {
            None => 0,
            Some(n) if n >= 0.0 && n <= f64::from(u32::MAX) && n.fract() == 0.0 => n as u32,
            Some(n) => {
                return Err(invalid(format!(
                    "syncReplicas must be a non-negative integer (got {n})"
                )))
            }
        };
        let options = DeploymentOptions {
            tls_ca_file: tls.ca_file.map(Into::into),
            tls_ca_pem: tls.ca.map(String::into_bytes),
            tls_cert_file: tls.cert_file.map(Into::into),
            tls_key_file: tls.key_file.map(Into::into),
            tls_cert_pem: tls.cert.map(String::into_bytes),
            tls_key_pem: tls.key.map(String::into_bytes),
            tls_server_name: tls.server_name,
            tls_insecure: tls.insecure.unwrap_or(false),
            sentinel_username: self.sentinel_username,
            sentinel_password: self.sentinel_password,
            sync_replicas,
            sync_replicas_timeout: opt_millis("syncReplicasTimeoutMs", self.sync_replicas_timeout_ms, false)?,
        };
        let builder = options.apply(builder).map_err(crate::error::to_napi)?;
        Ok(match on_warning {
            Some(callback) => warn_through(builder, Arc::new(callback)),
            None => builder,
        })
    }
}

/// `builder`, its client's deployment warnings going to `callback`.
pub(crate) fn warn_through(builder: ClientBuilder, callback: Arc<WarningCallback>) -> ClientBuilder {
    let warn = warn_with(callback);
    builder.on_warning(move |w| warn(w.clone()))
}

/// Hands each warning to `callback` (the client's `onWarning`), from any thread.
pub(crate) fn warn_with(callback: Arc<WarningCallback>) -> Arc<dyn Fn(redlatch::Warning) + Send + Sync> {
    Arc::new(move |w: redlatch::Warning| {
        let warning = DeploymentWarning {
            kind: w.kind.to_owned(),
            node: w.node,
            message: w.message,
        };
        callback.call(warning, ThreadsafeFunctionCallMode::NonBlocking);
    })
}
