//! A Sentinel deployment: one master, one replica and three sentinels (quorum 2), on run-time
//! ports, with optional passwords for the data nodes and for the sentinels themselves.
//!
//! The replica may replicate through a [`HoldingProxy`], so a test can make it fall behind
//! the master and then fail over: the writes it never received are lost, which is the
//! double-ownership hazard `sync_replicas` guards against.

use std::io;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::options::ServerOptions;
use crate::proxy::HoldingProxy;
use crate::server::RedisServer;

/// The master name the sentinels monitor.
pub const MASTER_NAME: &str = "redlatch-master";

const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How to build a [`SentinelGroup`].
#[derive(Debug, Clone, Default)]
pub struct SentinelOptions {
    /// `requirepass` of the master and replica (and `masterauth` / `auth-pass` to match).
    pub data_password: Option<String>,
    /// `requirepass` of the sentinels (what a client's sentinel password must be).
    pub sentinel_password: Option<String>,
    /// Replicate through a [`HoldingProxy`] (see [`SentinelGroup::hold_replication`]).
    pub replica_via_proxy: bool,
}

/// Master + replica + 3 sentinels. Dropping it stops them all.
///
/// `failover-timeout` is 60 s: Sentinel "fixes" a replica that replicates from another
/// address than the master's (the proxy) after that long, and a test is over by then.
#[derive(Debug)]
pub struct SentinelGroup {
    /// Index 0 started as the master, 1 as its replica; [`SentinelGroup::master`] says which
    /// is the master now.
    pub data: Vec<RedisServer>,
    /// The sentinels.
    pub sentinels: Vec<RedisServer>,
    proxy: Option<HoldingProxy>,
    options: SentinelOptions,
}

fn wait_for(what: &str, mut ok: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    let mut last = None;
    while Instant::now() < deadline {
        match ok() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = Some(e),
        }
        sleep(Duration::from_millis(100));
    }
    Err(io::Error::other(format!(
        "sentinel: {what} did not happen within {SETTLE_TIMEOUT:?}{}",
        last.map(|e| format!(" (last error: {e})")).unwrap_or_default()
    )))
}

impl SentinelGroup {
    /// Starts the group and waits until every sentinel knows the replica.
    ///
    /// # Errors
    /// A process not starting or the group not settling within 30 s.
    pub fn start(options: SentinelOptions) -> io::Result<Self> {
        let data_opts = ServerOptions {
            password: options.data_password.clone(),
            acl_user: Some(false),
            ..ServerOptions::default()
        };
        let master = RedisServer::start_with_options(&data_opts)?;
        let proxy = options
            .replica_via_proxy
            .then(|| HoldingProxy::start(master.port()))
            .transpose()?;
        let upstream = proxy.as_ref().map_or(master.port(), HoldingProxy::port);
        let mut replica_opts = data_opts.clone();
        replica_opts
            .args
            .extend(["--replicaof".into(), "127.0.0.1".into(), upstream.to_string()]);
        let replica = RedisServer::start_with_options(&replica_opts)?;
        let mut conf = format!(
            "sentinel monitor {MASTER_NAME} 127.0.0.1 {} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
             sentinel failover-timeout {MASTER_NAME} 60000\n",
            master.port()
        );
        if let Some(p) = &options.data_password {
            conf.push_str(&format!("sentinel auth-pass {MASTER_NAME} {p}\n"));
        }
        let sentinel_opts = ServerOptions {
            sentinel_conf: Some(conf),
            password: options.sentinel_password.clone(),
            acl_user: Some(false),
            ..ServerOptions::default()
        };
        let sentinels = (0..3)
            .map(|_| RedisServer::start_with_options(&sentinel_opts))
            .collect::<io::Result<Vec<_>>>()?;
        let group = SentinelGroup {
            data: vec![master, replica],
            sentinels,
            proxy,
            options,
        };
        group.wait_replica_known()?;
        Ok(group)
    }

    fn sentinel_cli(&self, i: usize, args: &[&str]) -> io::Result<String> {
        self.sentinels[i].cli(args)
    }

    /// `redis-cli` on data node `i` (logged in when the data nodes have a password).
    ///
    /// # Errors
    /// `redis-cli` failing.
    pub fn data_cli(&self, i: usize, args: &[&str]) -> io::Result<String> {
        self.data[i].cli(args)
    }

    fn wait_replica_known(&self) -> io::Result<()> {
        wait_for("every sentinel to see the replica in sync", || {
            for i in 0..self.sentinels.len() {
                let replicas = self.sentinel_cli(i, &["SENTINEL", "REPLICAS", MASTER_NAME])?;
                if !replicas.contains("master-link-status\nok") {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// `redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/redlatch-master`, with
    /// the data nodes' password as `:password@` when they have one.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        let auth = match &self.options.data_password {
            Some(p) => format!(":{p}@"),
            None => String::new(),
        };
        format!("redis+sentinel://{auth}{}/{MASTER_NAME}", hosts.join(","))
    }

    /// The index in [`Self::data`] of the node the sentinels name as master now.
    ///
    /// # Errors
    /// `redis-cli` failing or an unknown address.
    pub fn master(&self) -> io::Result<usize> {
        let reply = self.sentinel_cli(0, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME])?;
        let port: u16 = reply
            .lines()
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| io::Error::other(format!("unexpected master address {reply:?}")))?;
        self.data
            .iter()
            .position(|d| d.port() == port)
            .ok_or_else(|| io::Error::other(format!("master port {port} is not ours")))
    }

    /// `SENTINEL FAILOVER`, then waits until every sentinel names the other data node and
    /// that node answers `ROLE` as master. Returns the new master's index.
    ///
    /// # Errors
    /// The command refused or the switch not completing within 30 s.
    pub fn failover(&self) -> io::Result<usize> {
        let old = self.master()?;
        let reply = self.sentinel_cli(0, &["SENTINEL", "FAILOVER", MASTER_NAME])?;
        if reply != "OK" {
            return Err(io::Error::other(format!("SENTINEL FAILOVER answered {reply:?}")));
        }
        let new = 1 - old;
        let port = self.data[new].port().to_string();
        wait_for("the failover to complete", || {
            for i in 0..self.sentinels.len() {
                let addr = self.sentinel_cli(i, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME])?;
                if addr.lines().nth(1) != Some(port.as_str()) {
                    return Ok(false);
                }
            }
            Ok(self.data_cli(new, &["ROLE"])?.starts_with("master"))
        })?;
        Ok(new)
    }

    /// Holds back (or releases) what the master sends the replica; needs
    /// [`SentinelOptions::replica_via_proxy`].
    ///
    /// # Panics
    /// When the group was started without the proxy.
    pub fn hold_replication(&self, on: bool) {
        self.proxy
            .as_ref()
            .expect("started with replica_via_proxy")
            .hold(on);
    }
}
