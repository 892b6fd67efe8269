//! What a server is started with beyond the harness defaults: another executable (Valkey),
//! TLS, Cluster mode, Sentinel mode, extra arguments, and the least-privilege ACL user.
//!
//! Why the extra ports are reserved here and not left to Redis' defaults: a TLS port or a
//! Cluster bus port (`port + 10000` by default) could collide with another server of this
//! run or of another test process; every port comes from the same kernel-probe reservation.

use std::io;
use std::path::{Path, PathBuf};

use crate::launch::reserve_free_port;

/// Environment variable naming the server executable every [`RedisServer`](crate::RedisServer)
/// uses by default (e.g. a `valkey-server`), so a whole suite can run against another server.
/// The value `valkey` means [`valkey_server_path`](crate::valkey_server_path) (the one
/// `tests/setup.sh valkey` installed).
pub const ENV_SERVER: &str = "REDLATCH_FLEET_SERVER";
/// Environment variable that, set to `1`, gives every default server the least-privilege
/// user ([`crate::acl::setuser_args`]) and makes [`RedisServer::url`](crate::RedisServer::url)
/// log in as it, so a whole suite runs under that user.
pub const ENV_ACL: &str = "REDLATCH_FLEET_ACL";

/// How a TLS-enabled server checks clients (`tls-auth-clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A client certificate signed by the CA is required (mutual TLS; Redis' default).
    Required,
    /// A client certificate is checked when sent, not required.
    Optional,
}

/// TLS on a second port (`--tls-port`); the plain port stays open for the harness's own
/// readiness probes and `redis-cli`.
#[derive(Debug, Clone)]
pub struct TlsServer {
    /// Server certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// CA that signs accepted client certificates (PEM).
    pub ca: PathBuf,
    /// Whether clients must present a certificate.
    pub client_auth: ClientAuth,
}

/// Options of [`RedisServer::start_with`](crate::RedisServer::start_with). `Default` is the
/// plain server of [`RedisServer::start`](crate::RedisServer::start).
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// The executable; `None` = [`ENV_SERVER`] if set, else `redis-server` from `PATH`.
    pub exe: Option<PathBuf>,
    /// Serve TLS on an extra port.
    pub tls: Option<TlsServer>,
    /// Cluster mode (`--cluster-enabled yes`, its bus on a reserved port).
    pub cluster: bool,
    /// Sentinel mode with this configuration file content (Sentinel rewrites the file).
    pub sentinel_conf: Option<String>,
    /// Create the least-privilege user of [`crate::acl::setuser_args`]; `None` = [`ENV_ACL`].
    pub acl_user: Option<bool>,
    /// `requirepass` (and `masterauth`, for replicas); the harness's probes and
    /// [`cli`](crate::RedisServer::cli) log in with it.
    pub password: Option<String>,
    /// Further `--name value` arguments, after the harness's own (so they win).
    pub args: Vec<String>,
}

impl ServerOptions {
    pub(crate) fn exe(&self) -> io::Result<PathBuf> {
        if let Some(exe) = &self.exe {
            return Ok(exe.clone());
        }
        match std::env::var_os(ENV_SERVER) {
            Some(p) if p == "valkey" => crate::paths::valkey_server_path(),
            Some(p) if !p.is_empty() => Ok(PathBuf::from(p)),
            _ => crate::paths::redis_server_path(),
        }
    }

    pub(crate) fn wants_acl_user(&self) -> bool {
        self.acl_user
            .unwrap_or_else(|| std::env::var(ENV_ACL).is_ok_and(|v| v == "1"))
    }

    /// Reserves the extra ports these options need.
    pub(crate) fn reserve_ports(&self) -> io::Result<ExtraPorts> {
        Ok(ExtraPorts {
            tls: self.tls.as_ref().map(|_| reserve_free_port()).transpose()?,
            bus: self.cluster.then(reserve_free_port).transpose()?,
        })
    }

    /// `(config file arguments, extra arguments)` for a server whose directory is `dir`.
    pub(crate) fn command_line(
        &self,
        ports: &ExtraPorts,
        dir: &Path,
    ) -> io::Result<(Vec<String>, Vec<String>)> {
        let path = |p: &Path| p.to_string_lossy().into_owned();
        let mut conf = Vec::new();
        let mut extra = Vec::new();
        if let Some(text) = &self.sentinel_conf {
            let file = dir.join("sentinel.conf");
            // Written once: Sentinel rewrites it with what it learned, which a restart keeps.
            if !file.exists() {
                std::fs::write(&file, text)?;
            }
            conf = vec![path(&file), "--sentinel".into()];
        }
        if let (Some(tls), Some(port)) = (&self.tls, ports.tls) {
            let auth = match tls.client_auth {
                ClientAuth::Required => "yes",
                ClientAuth::Optional => "optional",
            };
            extra.extend([
                "--tls-port".into(),
                port.to_string(),
                "--tls-cert-file".into(),
                path(&tls.cert),
                "--tls-key-file".into(),
                path(&tls.key),
                "--tls-ca-cert-file".into(),
                path(&tls.ca),
                "--tls-auth-clients".into(),
                auth.into(),
            ]);
        }
        if let Some(bus) = ports.bus {
            extra.extend([
                "--cluster-enabled".into(),
                "yes".into(),
                "--cluster-config-file".into(),
                path(&dir.join("nodes.conf")),
                "--cluster-port".into(),
                bus.to_string(),
                "--cluster-node-timeout".into(),
                "2000".into(),
                // A replica of a killed master always stands for election: Redis 7.0 replicas
                // here judged their data too old to fail over (their last interaction with the
                // master counted from long before the kill) and the slot stayed down.
                "--cluster-replica-validity-factor".into(),
                "0".into(),
            ]);
        }
        if let Some(p) = &self.password {
            extra.extend(["--requirepass".into(), p.clone()]);
            if self.sentinel_conf.is_none() {
                extra.extend(["--masterauth".into(), p.clone()]);
            }
        }
        extra.extend(self.args.iter().cloned());
        Ok((conf, extra))
    }
}

/// Ports a server uses besides its plain one.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ExtraPorts {
    pub(crate) tls: Option<u16>,
    pub(crate) bus: Option<u16>,
}

impl ExtraPorts {
    pub(crate) fn all(&self) -> impl Iterator<Item = u16> {
        self.tls.into_iter().chain(self.bus)
    }
}
