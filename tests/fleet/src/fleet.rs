//! A fleet: the servers one test run needs, started together and stopped together (on drop).
//!
//! The single node serves plain lease/reentrant locks; the quorum nodes are *independent*
//! masters (no replication between them), as Redlock requires. Other languages' suites get
//! the URLs through [`ENV_URL`] and [`ENV_QUORUM_URLS`], set by the `redlatch-fleet` binary.

use std::io;

use crate::server::RedisServer;

/// Environment variable holding the single node's URL, `redis://127.0.0.1:<port>`.
pub const ENV_URL: &str = "REDLATCH_TEST_URL";
/// Environment variable holding the quorum nodes' URLs, comma-separated (empty if none).
pub const ENV_QUORUM_URLS: &str = "REDLATCH_TEST_QUORUM_URLS";
/// The single node's URL for the default (unrestricted) user, for test code that inspects
/// keys; differs from [`ENV_URL`] when the suite runs as the ACL user.
pub const ENV_ADMIN_URL: &str = "REDLATCH_TEST_ADMIN_URL";
/// The quorum nodes' default-user URLs, comma-separated.
pub const ENV_ADMIN_QUORUM_URLS: &str = "REDLATCH_TEST_ADMIN_QUORUM_URLS";

/// One single node plus N independent quorum nodes. Dropping the fleet stops them all.
#[derive(Debug)]
pub struct Fleet {
    /// The single node (`Some` after [`Fleet::start`]).
    pub single: Option<RedisServer>,
    /// The independent Redlock nodes, in start order.
    pub quorum: Vec<RedisServer>,
}

impl Fleet {
    /// Starts one single node and `quorum_nodes` quorum nodes (each on its own free port).
    ///
    /// # Errors
    /// The first server that fails to start; the ones already started are stopped.
    pub fn start(quorum_nodes: usize) -> io::Result<Self> {
        let single = Some(RedisServer::start()?);
        let quorum = (0..quorum_nodes)
            .map(|_| RedisServer::start())
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Fleet { single, quorum })
    }

    /// The single node's URL, if there is one.
    pub fn single_url(&self) -> Option<String> {
        self.single.as_ref().map(RedisServer::url)
    }

    /// The quorum nodes' URLs, in order.
    pub fn quorum_urls(&self) -> Vec<String> {
        self.quorum.iter().map(RedisServer::url).collect()
    }

    /// The environment a child process needs to use this fleet: [`ENV_URL`] and
    /// [`ENV_ADMIN_URL`] (when there is a single node), [`ENV_QUORUM_URLS`] and
    /// [`ENV_ADMIN_QUORUM_URLS`] (always; empty when there are no quorum nodes).
    pub fn env_vars(&self) -> Vec<(&'static str, String)> {
        let mut vars = Vec::new();
        if let Some(s) = &self.single {
            vars.push((ENV_URL, s.url()));
            vars.push((ENV_ADMIN_URL, s.admin_url()));
        }
        vars.push((ENV_QUORUM_URLS, self.quorum_urls().join(",")));
        let admin: Vec<String> = self.quorum.iter().map(RedisServer::admin_url).collect();
        vars.push((ENV_ADMIN_QUORUM_URLS, admin.join(",")));
        vars
    }
}
