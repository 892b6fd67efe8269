//! Sentinel: which node is the master now, asked of the sentinels (redis-rs's sentinel
//! client, which also checks with `ROLE` that the node it names is a master).
//!
//! A client follows a failover three ways, whichever comes first: the sentinels announce it
//! on their `+switch-master` channel (watched by a background task, which bumps a
//! generation: connections made before it are dropped at their next use); the connection
//! breaks (Sentinel closes the clients of a node it reconfigures); the node answers
//! `READONLY` (it was demoted). The next call then asks the sentinels again. Watching the
//! channel matters after a forced `SENTINEL FAILOVER`: the old master keeps accepting writes
//! until Sentinel demotes it, seconds later.

use super::node::NodeSpec;
use super::redact;
use super::redis_calls::wrapped_refusal;
use super::tls::TlsOptions;
use crate::error::{Error, ErrorKind, Result};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo, TlsMode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
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
    /// One client per sentinel, for the `+switch-master` watcher.
    sentinels: Vec<redis::Client>,
    /// Whether the sentinel user name and password options were given (for what a refusal
    /// by the sentinels says).
    sentinel_credentials: bool,
    /// Bumped on every `+switch-master` of this master, and when the watcher reconnects and
    /// the sentinel it reached names another master than the one last resolved (a switch it
    /// may have missed).
    generation: AtomicU64,
    /// The generation, for those that act on a switch at once (the subscriber, whose
    /// connection is used only when a channel is added).
    switches: tokio::sync::watch::Sender<u64>,
    /// `host:port` of the master last resolved (`None` before the first).
    resolved: std::sync::Mutex<Option<String>>,
    watching: std::sync::Once,
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
        let addrs: Vec<ConnectionAddr> = spec
            .sentinels
            .iter()
            .map(|(host, port)| {
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
            })
            .collect();
        let sentinels = addrs
            .iter()
            .map(|addr| {
                let mut settings = redis::RedisConnectionInfo::default().set_skip_set_lib_name();
                if let Some(a) = auth {
                    settings = settings.set_password(&a.password);
                    if let Some(u) = &a.username {
                        settings = settings.set_username(u);
                    }
                }
                let info = addr
                    .clone()
                    .into_connection_info()
                    .map(|i| i.set_redis_settings(settings));
                match (spec.tls, info) {
                    (true, Ok(info)) => redis::Client::build_with_tls(info, tls.certificates()?)
                        .map_err(|e| super::tls::refused_material(&e)),
                    (false, Ok(info)) => redis::Client::open(info).map_err(|e| Error::invalid(e.to_string())),
                    (_, Err(e)) => Err(Error::invalid(e.to_string())),
                }
            })
            .collect::<Result<Vec<_>>>()?;
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
            sentinels,
            sentinel_credentials: auth.is_some(),
            generation: AtomicU64::new(0),
            switches: tokio::sync::watch::Sender::new(0),
            resolved: std::sync::Mutex::new(None),
            watching: std::sync::Once::new(),
        })
    }

    /// The failover generation (see the module docs).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Tells of each generation bump (see [`generation`](Self::generation)).
    pub(crate) fn switches(&self) -> tokio::sync::watch::Receiver<u64> {
        self.switches.subscribe()
    }

    /// The master may have changed: connections made before are dropped at their next use,
    /// and the subscriber moves its channels at once.
    fn switched(&self) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.switches.send_replace(generation);
    }

    /// Starts the `+switch-master` watcher (once; it ends with the last client).
    fn watch(self: &Arc<Self>) {
        self.watching.call_once(|| {
            let weak = Arc::downgrade(self);
            tokio::spawn(watch_switches(weak));
        });
    }

    /// The master's connection info, asked of the sentinels now (bounded by `timeout` per
    /// sentinel round).
    ///
    /// # Errors
    /// `Connection` when no sentinel names a master that answers `ROLE` as master.
    pub(crate) async fn resolve(self: &Arc<Self>, timeout: Duration) -> Result<NodeSpec> {
        self.watch();
        let mut client = self.client.lock().await;
        let found = tokio::time::timeout(timeout * 2, client.async_get_client()).await;
        let fail =
            |why: String| Error::connection(format!("Sentinel: no master for {:?}: {why}", self.master));
        let client = match found {
            Ok(Ok(c)) => c,
            Ok(Err(e)) if e.to_string().contains("does not point to a sentinel node") => {
                // A plain or Cluster node at the sentinel address: said so, not taken for a
                // refused password (a deployments trial of stop 45 read "WRONGPASS" with none
                // given), as `redis+cluster://` at a single node is refused.
                return Err(Error::invalid(format!(
                    "the URL's address does not point to a Redis Sentinel (it answers as a Redis data node): give the sentinels' addresses (redis+sentinel://host:26379,.../{}), or reach a single node with redis:// and a Cluster with redis+cluster://",
                    self.master
                )));
            }
            Ok(Err(e)) if e.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel => {
                // redis-rs' words ("Master with given name not found in sentinel") read as a
                // wrong name; they also mean that the master the sentinels name does not
                // answer as one, as during a failover (a Rust user trial of stop 49).
                return Err(fail(
                    "no sentinel names a master by that name that answers as master: the name may be wrong, or a failover is under way (the master they name is down, paused or not yet promoted)".to_owned(),
                ));
            }
            Ok(Err(e)) => {
                return Err(match wrapped_refusal(&e) {
                    Some(refused) => self.which_refused(refused, timeout).await,
                    None => fail(redact::server_error(&e.to_string(), &[])),
                })
            }
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
        *self.resolved.lock().unwrap_or_else(|p| p.into_inner()) = Some(master_address(info.addr()));
        Ok(NodeSpec {
            info,
            label,
            resolver: None,
        })
    }
}

impl SentinelSource {
    /// `refused` (credentials or a permission, met while asking for the master) named for
    /// whose it was: a sentinel refusing a `PING` means the sentinel options, else the data
    /// node (the URL's credentials, or the ACL user's permissions on the master: `ROLE`).
    async fn which_refused(&self, refused: Error, timeout: Duration) -> Error {
        // The sentinel's own error, if it has one for us (its credentials are checked at connect).
        let sentinel_error = async {
            let sentinel = self.sentinels.first()?;
            match sentinel.get_multiplexed_async_connection().await {
                Ok(mut conn) => redis::cmd("PING").query_async::<()>(&mut conn).await.err(),
                Err(e) => Some(e),
            }
        };
        let sentinel_refused = matches!(
            tokio::time::timeout(timeout, sentinel_error).await,
            Ok(Some(e)) if wrapped_refusal(&e).is_some()
        );
        let master = &self.master;
        match (refused.kind(), sentinel_refused) {
            // A bad setting redis-rs found, no refusal: its own words.
            (ErrorKind::InvalidArgument, _) => refused,
            (ErrorKind::NoPermission, _) => Error::new(
                ErrorKind::NoPermission,
                format!("Sentinel master {master:?}: {} (the data nodes' ACL user needs ROLE; docs/deployments.md)", refused.message()),
            ),
            // No sentinel password given: the sentinels want one (a user trial of stop 42 read
            // "refused the sentinel user name or password" with none given). A data node with
            // a password at the sentinel address answers the same (it tells nothing more before
            // `AUTH`), so the message names that mistake too (a deployments trial of stop 45).
            (_, true) if !self.sentinel_credentials => Error::refused_credentials(format!(
                "Sentinel: the sentinels of {master:?} require a password and none was given (the client's sentinel password option: Rust `sentinel_auth`, Python `sentinel_password`, Node `sentinelPassword`, C `sentinel_password`); or the URL's address is a Redis data node, not a Sentinel: reach a single node with redis://"
            )),
            (_, true) => Error::refused_credentials(format!(
                "Sentinel: the sentinels of {master:?} refused the sentinel user name or password (the client's sentinel user name and password options: Rust `sentinel_auth`, Python `sentinel_username` / `sentinel_password`, Node `sentinelUsername` / `sentinelPassword`, C `sentinel_username` / `sentinel_password`)"
            )),
            // The URL gave no password: the data nodes asked for one (NOAUTH).
            (_, false) if refused.message().contains("NOAUTH") => Error::refused_credentials(format!(
                "the master {master:?} (via Sentinel) requires a password (NOAUTH): give the data nodes' user name and password in the URL (redis+sentinel://user:password@host:port,.../{master})"
            )),
            (_, false) => Error::refused_credentials(format!(
                "the master {master:?} (via Sentinel) refused the URL's user name or password (WRONGPASS: wrong password, unknown or disabled user)"
            )),
        }
    }
}

impl SentinelSource {
    /// `true` when `sentinel` names another master than the one last resolved. A sentinel
    /// that does not answer (within 2 s) or knows no master tells nothing: the connection to
    /// the master stays, and a failover is still followed by the connection breaking or the
    /// old master answering `READONLY`.
    async fn missed_a_switch(&self, sentinel: &redis::Client) -> bool {
        let Some(resolved) = self.resolved.lock().unwrap_or_else(|p| p.into_inner()).clone() else {
            return false;
        };
        let asked = async {
            let mut conn = sentinel.get_multiplexed_async_connection().await?;
            redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(&self.master)
                .query_async::<Option<(String, u16)>>(&mut conn)
                .await
        };
        match tokio::time::timeout(Duration::from_secs(2), asked).await {
            Ok(Ok(Some((host, port)))) => format!("{host}:{port}") != resolved,
            _ => false,
        }
    }
}

/// `host:port` of a resolved master, as `SENTINEL get-master-addr-by-name` names it.
fn master_address(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            format!("{host}:{port}")
        }
        other => other.to_string(),
    }
}

/// Listens on the sentinels' `+switch-master` channel (`<name> <old ip> <old port> <new ip>
/// <new port>`) and bumps the generation for this master. Moves to the next sentinel when
/// one is unreachable; exits when the source is gone.
async fn watch_switches(weak: Weak<SentinelSource>) {
    use futures::StreamExt;
    let mut i = 0usize;
    let mut first = true;
    loop {
        let Some(source) = weak.upgrade() else { return };
        let client = source.sentinels[i % source.sentinels.len()].clone();
        let master = source.master.clone();
        drop(source);
        i += 1;
        let subscribed = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe("+switch-master").await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let Ok(Ok(pubsub)) = tokio::time::timeout(Duration::from_secs(5), subscribed).await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        // A switch may have happened while no sentinel was watched: asked of the sentinel just
        // reached, not assumed. A bump without one drops a healthy master's connection, and
        // when the sentinels are going away one after another no sentinel may be left to
        // name it again (a user trial: every call then failed, and holds were lost, while
        // the master answered).
        if !std::mem::take(&mut first) {
            let Some(source) = weak.upgrade() else { return };
            if source.missed_a_switch(&client).await {
                source.switched();
                tracing::debug!(master = %master, "the master changed while no sentinel was watched");
            }
        }
        let mut messages = pubsub.into_on_message();
        loop {
            // Wake up now and then to notice the source going away.
            match tokio::time::timeout(Duration::from_secs(1), messages.next()).await {
                Ok(Some(msg)) => {
                    let payload: String = msg.get_payload().unwrap_or_default();
                    if payload.split(' ').next() == Some(master.as_str()) {
                        let Some(source) = weak.upgrade() else { return };
                        source.switched();
                        tracing::debug!(master = %master, "Sentinel announced a failover");
                    }
                }
                Ok(None) => break,
                Err(_) if weak.strong_count() == 0 => return,
                Err(_) => {}
            }
        }
    }
}
