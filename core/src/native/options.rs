//! [`DeploymentOptions`]: the deployment settings as flat values (paths, PEM text, numbers),
//! the shape every binding receives them in (Python keyword arguments, a Node options
//! object, a C struct), checked and applied to a [`ClientBuilder`] in one place.

use super::builder::ClientBuilder;
use super::tls::TlsOptions;
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::time::Duration;

/// Deployment settings beyond the URL. `Default` is: system TLS roots, no client
/// certificate, no sentinel password, no `sync_replicas`.
#[derive(Clone, Default)]
pub struct DeploymentOptions {
    /// CA certificate(s) to trust instead of the system roots: a PEM file...
    pub tls_ca_file: Option<PathBuf>,
    /// ...or PEM text (not both).
    pub tls_ca_pem: Option<Vec<u8>>,
    /// Mutual TLS: the client certificate chain (PEM file or text) and its key.
    pub tls_cert_file: Option<PathBuf>,
    /// Key of `tls_cert_file` (PEM file).
    pub tls_key_file: Option<PathBuf>,
    /// Client certificate chain as PEM text.
    pub tls_cert_pem: Option<Vec<u8>>,
    /// Its key as PEM text.
    pub tls_key_pem: Option<Vec<u8>>,
    /// Name to verify the server certificate against instead of the URL's host.
    pub tls_server_name: Option<String>,
    /// Accept any server certificate (encrypted, unauthenticated). Never the default.
    pub tls_insecure: bool,
    /// ACL user of the sentinels (`redis+sentinel://` URLs).
    pub sentinel_username: Option<String>,
    /// Password of the sentinels.
    pub sentinel_password: Option<String>,
    /// Replicas that must confirm each grant and renewal (`WAIT`); 0 = off.
    pub sync_replicas: u32,
    /// `WAIT` timeout; default 1 s.
    pub sync_replicas_timeout: Option<Duration>,
}

impl std::fmt::Debug for DeploymentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeploymentOptions")
            .field("tls_ca_file", &self.tls_ca_file)
            .field("tls_cert_file", &self.tls_cert_file)
            .field("tls_server_name", &self.tls_server_name)
            .field("tls_insecure", &self.tls_insecure)
            .field("sentinel_username", &self.sentinel_username)
            .field("sync_replicas", &self.sync_replicas)
            .finish_non_exhaustive()
    }
}

impl DeploymentOptions {
    /// The TLS part as [`TlsOptions`].
    ///
    /// # Errors
    /// `InvalidArgument` for a CA or client certificate given twice, or a certificate
    /// without its key (or a key without its certificate).
    pub fn tls(&self) -> Result<TlsOptions> {
        let mut tls = TlsOptions::new();
        if self.tls_ca_file.is_some() && self.tls_ca_pem.is_some() {
            return Err(Error::invalid(
                "give the TLS CA as a file or as PEM text, not both",
            ));
        }
        if let Some(path) = &self.tls_ca_file {
            tls = tls.ca_file(path);
        }
        if let Some(pem) = &self.tls_ca_pem {
            tls = tls.ca_pem(pem.clone());
        }
        let files = (&self.tls_cert_file, &self.tls_key_file);
        let pems = (&self.tls_cert_pem, &self.tls_key_pem);
        match (files, pems) {
            ((Some(c), Some(k)), (None, None)) => tls = tls.client_cert_files(c, k),
            ((None, None), (Some(c), Some(k))) => tls = tls.client_cert_pem(c.clone(), k.clone()),
            ((None, None), (None, None)) => {}
            ((Some(_), None), _) | ((None, None), (Some(_), None)) => {
                return Err(Error::invalid("a TLS client certificate needs its key"))
            }
            ((None, Some(_)), _) | ((None, None), (None, Some(_))) => {
                return Err(Error::invalid("a TLS client key needs its certificate"))
            }
            _ => {
                return Err(Error::invalid(
                    "give the TLS client certificate as files or as PEM text, not both",
                ))
            }
        }
        if let Some(name) = &self.tls_server_name {
            if name.is_empty() {
                return Err(Error::invalid("the TLS server name must not be empty"));
            }
            tls = tls.server_name(name.clone());
        }
        Ok(tls.insecure_skip_verify(self.tls_insecure))
    }

    /// Applies these settings to `builder`.
    ///
    /// # Errors
    /// As [`tls`](Self::tls); `InvalidArgument` for a sentinel user without a password.
    pub fn apply(&self, mut builder: ClientBuilder) -> Result<ClientBuilder> {
        builder = builder.tls(self.tls()?);
        match (&self.sentinel_username, &self.sentinel_password) {
            (u, Some(p)) => builder = builder.sentinel_auth(u.as_deref(), p),
            (Some(_), None) => return Err(Error::invalid("a sentinel user needs a sentinel password")),
            (None, None) => {}
        }
        if let Some(t) = self.sync_replicas_timeout {
            builder = builder.sync_replicas_timeout(t);
        }
        Ok(builder.sync_replicas(self.sync_replicas))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_come_in_pairs_and_once() {
        let half = DeploymentOptions {
            tls_cert_file: Some("c.pem".into()),
            ..Default::default()
        };
        assert!(half.tls().unwrap_err().message().contains("needs its key"));
        let twice = DeploymentOptions {
            tls_ca_file: Some("ca.pem".into()),
            tls_ca_pem: Some(b"x".to_vec()),
            ..Default::default()
        };
        assert!(twice.tls().unwrap_err().message().contains("not both"));
        let ok = DeploymentOptions {
            tls_cert_pem: Some(b"c".to_vec()),
            tls_key_pem: Some(b"k".to_vec()),
            tls_insecure: true,
            ..Default::default()
        };
        assert!(!ok.tls().unwrap().is_default());
        let user_only = DeploymentOptions {
            sentinel_username: Some("u".into()),
            ..Default::default()
        };
        assert!(user_only.apply(crate::Client::builder("redis://h")).is_err());
    }
}
