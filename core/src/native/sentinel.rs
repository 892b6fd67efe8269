//! Sentinel: which node is the master now, asked of the sentinels (redis-rs's sentinel
//! client, which also checks with `ROLE` that the node it names is a master).
//!
//! The transport asks again whenever its connection breaks or the node answers `READONLY`
//! (it was demoted), which is how a client follows a failover: Sentinel closes the clients of
//! a demoted master, and the next call resolves the new one.

use super::node::NodeSpec;
use super::redact;
use super::tls::TlsOptions;
use crate::error::{Error, Result};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo, TlsMode};
use std::time::Duration;

/// A Sentinel deployment as a URL names it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SentinelSpec {
    /// `host:port` of each sentinel.
    pub(crate) sentinels: Vec<(String, u16)>,
    /// The master name the sentinels monitor.
    pub(crate) master: String,
    pub(crate) db: i64,
    /// Credentials of the data nodes (the URL's user info).
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    /// `rediss+sentinel://`: TLS to the sentinels and to the data nodes.
    pub(crate) tls: bool,
}

impl std::fmt::Debug for SentinelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelSpec")
            .field("sentinels", &self.sentinels)
            .field("master", &self.master)
            .field("db", &self.db)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

/// Credentials of the sentinels themselves (their `requirepass` or ACL user).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SentinelAuth {
    /// ACL user name; `None` = the default user.
    pub username: Option<String>,
    /// Password.
    pub password: String,
}

impl std::fmt::Debug for SentinelAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Resolves the current master.
pub(crate) struct SentinelSource {
    client: tokio::sync::Mutex<SentinelClient>,
    master: String,
}

impl SentinelSource {
    /// # Errors
    /// `InvalidArgument` for a bad setup (unreadable certificates, a TLS server name, which
    /// Sentinel nodes cannot use).
    pub(crate) fn new(spec: &SentinelSpec, auth: Option<&SentinelAuth>, tls: &TlsOptions) -> Result<Self> {
        if tls.server_name_override().is_some() {
            return Err(Error::invalid(
                "the TLS server name option applies to single nodes; Sentinel nodes are verified by the addresses they announce",
            ));
        }
        if !spec.tls && !tls.is_default() {
            return Err(Error::invalid(
                "TLS options were given for a redis+sentinel:// URL; use rediss+sentinel://",
            ));
        }
        let addrs = spec.sentinels.iter().map(|(host, port)| {
            if spec.tls {
                ConnectionAddr::TcpTls {
                    host: host.clone(),
                    port: *port,
                    insecure: tls.insecure(),
                    tls_params: None,
                }
            } else {
                ConnectionAddr::Tcp(host.clone(), *port)
            }
        });
        let bad = |e: redis::RedisError| Error::invalid(format!("bad Sentinel setup: {e}"));
        let mut b =
            SentinelClientBuilder::new(addrs, &spec.master, SentinelServerType::Master).map_err(bad)?;
        b = b.set_client_to_redis_db(spec.db);
        if let Some(u) = &spec.username {
            b = b.set_client_to_redis_username(u);
        }
        if let Some(p) = &spec.password {
            b = b.set_client_to_redis_password(p);
        }
        if let Some(a) = auth {
            if let Some(u) = &a.username {
                b = b.set_client_to_sentinel_username(u);
            }
            b = b.set_client_to_sentinel_password(&a.password);
        }
        if spec.tls {
            super::tls::install_crypto_provider();
            let mode = if tls.insecure() {
                TlsMode::Insecure
            } else {
                TlsMode::Secure
            };
            b = b
                .set_client_to_redis_tls_mode(mode)
                .set_client_to_sentinel_tls_mode(mode)
                .set_client_to_redis_certificates(tls.certificates()?)
                .set_client_to_sentinel_certificates(tls.certificates()?);
        }
        Ok(SentinelSource {
            client: tokio::sync::Mutex::new(b.build().map_err(bad)?),
            master: spec.master.clone(),
        })
    }

    /// The master's connection info, asked of the sentinels now (bounded by `timeout` per
    /// sentinel round).
    ///
    /// # Errors
    /// `Connection` when no sentinel names a master that answers `ROLE` as master.
    pub(crate) async fn resolve(&self, timeout: Duration) -> Result<NodeSpec> {
        let mut client = self.client.lock().await;
        let found = tokio::time::timeout(timeout * 2, client.async_get_client()).await;
        let fail =
            |why: String| Error::connection(format!("Sentinel: no master for {:?}: {why}", self.master));
        let client = match found {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(fail(redact::server_error(&e.to_string(), &[]))),
            Err(_) => return Err(fail(format!("no answer within {} ms", (timeout * 2).as_millis()))),
        };
        let info = client
            .get_connection_info()
            .clone()
            .into_connection_info()
            .map_err(|e| fail(e.to_string()))?;
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        let label = info.addr().to_string();
        tracing::debug!(master = %self.master, node = %label, "Sentinel named the master");
        Ok(NodeSpec {
            info,
            label,
            resolver: None,
        })
    }
}
