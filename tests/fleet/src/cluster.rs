//! A Redis Cluster of 3 masters with one replica each, on run-time ports, plus the two
//! topology changes the lock tests need: a slot migration and a `CLUSTER FAILOVER`.
//!
//! Why `redis-cli --cluster create`: it is the tool operators use, it assigns the slots and
//! the replicas, and it waits for the nodes to agree; the harness then checks every node
//! reports `cluster_state:ok` before returning, so tests never start on a half-formed cluster.

use std::io;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::launch::log_tail;
use crate::options::ServerOptions;
use crate::paths::redis_cli_path;
use crate::server::RedisServer;

/// How long forming the cluster or a topology change may take before it is an error.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one `CLUSTER FAILOVER` is given before it is sent again. Redis abandons a manual
/// failover that has not completed after 5 s (`CLUSTER_MF_TIMEOUT`) and never retries it
/// itself, e.g. when the masters refused their votes because gossip had not yet brought the
/// replica its master's new config epoch; a slow machine hits that.
const FAILOVER_RETRY: Duration = Duration::from_secs(6);

/// 3 masters + 3 replicas. Dropping it stops every node.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

fn wait_for(what: &str, ok: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    wait_within(what, SETTLE_TIMEOUT, ok)
}

fn wait_within(what: &str, timeout: Duration, mut ok: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    let deadline = Instant::now() + timeout;
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
        "cluster: {what} did not happen within {timeout:?}{}",
        last.map(|e| format!(" (last error: {e})")).unwrap_or_default()
    )))
}

impl RedisCluster {
    /// Starts 6 cluster-mode servers and forms the cluster (`--cluster-replicas 1`).
    ///
    /// # Errors
    /// A node not starting, `redis-cli --cluster create` failing, or the cluster not
    /// reaching `cluster_state:ok` on every node within 30 s.
    pub fn start() -> io::Result<Self> {
        let options = ServerOptions {
            cluster: true,
            ..ServerOptions::default()
        };
        let nodes = (0..6)
            .map(|_| RedisServer::start_with_options(&options))
            .collect::<io::Result<Vec<_>>>()?;
        let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())).collect();
        let out = Command::new(redis_cli_path()?)
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stdout)
            )));
        }
        let cluster = RedisCluster { nodes };
        cluster.wait_settled()?;
        Ok(cluster)
    }

    /// Waits until every node reports `cluster_state:ok`, knows all 6 nodes and every slot.
    ///
    /// # Errors
    /// Not settled within 30 s.
    pub fn wait_settled(&self) -> io::Result<()> {
        wait_for("cluster_state:ok on every node", || {
            for n in &self.nodes {
                let info = n.cli(&["CLUSTER", "INFO"])?;
                let ok = info.contains("cluster_state:ok")
                    && info.contains("cluster_known_nodes:6")
                    && info.contains("cluster_slots_ok:16384");
                if !ok {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// Every node, masters and replicas, in start order.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Seed URLs for a cluster client: every node's `redis://127.0.0.1:<port>`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The Cluster slot of `key` (`CLUSTER KEYSLOT`).
    ///
    /// # Errors
    /// `redis-cli` failing.
    pub fn slot_of(&self, key: &str) -> io::Result<u16> {
        let reply = self.nodes[0].cli(&["CLUSTER", "KEYSLOT", key])?;
        reply
            .parse()
            .map_err(|_| io::Error::other(format!("CLUSTER KEYSLOT answered {reply:?}")))
    }

    fn node_id(node: &RedisServer) -> io::Result<String> {
        node.cli(&["CLUSTER", "MYID"])
    }

    /// The running node that serves `slot` as master now, by its own account.
    ///
    /// # Errors
    /// `redis-cli` failing or no master found.
    pub fn master_of(&self, slot: u16) -> io::Result<&RedisServer> {
        // A node a test killed serves nothing (and would fail the `redis-cli` call); one it
        // paused answers nothing (`redis-cli` would wait for it for ever).
        for n in self.nodes.iter().filter(|n| n.is_running() && !n.is_paused()) {
            let role = n.cli(&["ROLE"])?;
            if !role.starts_with("master") {
                continue;
            }
            let id = Self::node_id(n)?;
            let nodes = n.cli(&["CLUSTER", "NODES"])?;
            let mine = nodes.lines().find(|l| l.starts_with(&id)).unwrap_or_default();
            if owns_slot(mine, slot) {
                return Ok(n);
            }
        }
        Err(io::Error::other(format!("no master serves slot {slot}")))
    }

    /// Waits until every replica of `master` is online and has applied all the writes
    /// `master` had taken when this was called (its `INFO replication` offsets). Replication
    /// is asynchronous: a test that kills a master right after a write would otherwise lose
    /// that write with it, as Redis documents for Cluster failovers.
    ///
    /// # Errors
    /// `redis-cli` failing or the replicas not catching up within 30 s.
    pub fn until_replicated(&self, master: &RedisServer) -> io::Result<()> {
        let target = replication_field(&master.cli(&["INFO", "replication"])?, "master_repl_offset")?;
        wait_for("the replicas to apply the master's writes", || {
            let info = master.cli(&["INFO", "replication"])?;
            let replicas: Vec<&str> = info.lines().filter(|l| l.starts_with("slave")).collect();
            let caught_up = |l: &&str| {
                l.contains("state=online")
                    && l.split(',')
                        .find_map(|kv| kv.strip_prefix("offset="))
                        .and_then(|o| o.trim().parse::<u64>().ok())
                        .is_some_and(|o| o >= target)
            };
            Ok(!replicas.is_empty() && replicas.iter().all(caught_up))
        })
    }

    /// A master that does not serve `slot`.
    ///
    /// # Errors
    /// `redis-cli` failing.
    pub fn other_master(&self, slot: u16) -> io::Result<&RedisServer> {
        let owner = self.master_of(slot)?.port();
        for n in &self.nodes {
            if n.port() != owner && n.cli(&["ROLE"])?.starts_with("master") {
                return Ok(n);
            }
        }
        Err(io::Error::other("no other master"))
    }

    /// Moves `slot` and its keys to master `to` (the `SETSLOT IMPORTING / MIGRATING`,
    /// `MIGRATE`, `SETSLOT NODE` sequence), then waits until every node agrees.
    ///
    /// # Errors
    /// A step refused or the cluster not settling.
    pub fn migrate_slot(&self, slot: u16, to: &RedisServer) -> io::Result<()> {
        let from = self.master_of(slot)?;
        let (from_id, to_id) = (Self::node_id(from)?, Self::node_id(to)?);
        let s = slot.to_string();
        expect_ok(to.cli(&["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id])?)?;
        expect_ok(from.cli(&["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id])?)?;
        loop {
            let keys = from.cli(&["CLUSTER", "GETKEYSINSLOT", &s, "100"])?;
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let port = to.port().to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(&keys);
            let reply = from.cli(&args)?;
            if reply != "OK" && reply != "NOKEY" {
                return Err(io::Error::other(format!("MIGRATE answered {reply:?}")));
            }
        }
        for n in &self.nodes {
            if n.cli(&["ROLE"])?.starts_with("master") {
                expect_ok(n.cli(&["CLUSTER", "SETSLOT", &s, "NODE", &to_id])?)?;
            }
        }
        let to_port = to.port();
        wait_for("every node to agree on the migrated slot", || {
            for n in &self.nodes {
                let nodes = n.cli(&["CLUSTER", "NODES"])?;
                let line = nodes.lines().find(|l| l.starts_with(&to_id)).unwrap_or_default();
                if !owns_slot(line, slot) {
                    return Ok(false);
                }
            }
            Ok(self.master_of(slot)?.port() == to_port)
        })?;
        self.wait_settled()
    }

    /// Waits until a live node other than the one on port `old` (which a test killed or
    /// paused) is a master that lists `slot` among its own ranges.
    ///
    /// # Errors
    /// No replica taking over within 30 s; the message then holds a live node's view.
    pub fn until_promoted(&self, slot: u16, old: u16) -> io::Result<()> {
        let answers = |n: &RedisServer| n.is_running() && !n.is_paused();
        let serves = |n: &RedisServer| {
            n.cli(&["ROLE"]).is_ok_and(|r| r.starts_with("master"))
                && n.cli(&["CLUSTER", "NODES"]).is_ok_and(|nodes| {
                    nodes
                        .lines()
                        .filter(|l| l.contains("myself"))
                        .any(|l| owns_slot(l, slot))
                })
        };
        let promoted = wait_for("a replica to take over the slot", || {
            Ok(self
                .nodes
                .iter()
                .any(|n| n.port() != old && answers(n) && serves(n)))
        });
        promoted.map_err(|e| {
            let live = self.nodes.iter().find(|n| n.port() != old && answers(n));
            let view = live.and_then(|n| n.cli(&["CLUSTER", "NODES"]).ok());
            io::Error::other(format!("{e}: {}", view.unwrap_or_default()))
        })
    }

    /// `CLUSTER FAILOVER` on a replica of the master serving `slot`: the replica becomes the
    /// master (after catching up), the old master its replica. Returns the new master.
    ///
    /// # Errors
    /// No replica, the command refused, or the switch not completing within 30 s (the
    /// command is sent again every 6 s meanwhile); the message then holds every node's view.
    pub fn failover(&self, slot: u16) -> io::Result<&RedisServer> {
        let master = self.master_of(slot)?;
        let master_id = Self::node_id(master)?;
        let replica = self
            .nodes
            .iter()
            .find(|n| {
                n.cli(&["CLUSTER", "NODES"]).is_ok_and(|nodes| {
                    nodes
                        .lines()
                        .any(|l| l.contains("myself") && l.contains("slave") && l.contains(&master_id))
                })
            })
            .ok_or_else(|| io::Error::other("the master has no replica"))?;
        // The replica asks for votes with its own view of its master's config epoch; until
        // gossip brings it the epoch the slot's migration bumped, the masters refuse.
        wait_for("the replica to see its master serve the slot", || {
            let nodes = replica.cli(&["CLUSTER", "NODES"])?;
            Ok(nodes
                .lines()
                .any(|l| l.starts_with(&master_id) && owns_slot(l, slot)))
        })?;
        let port = replica.port();
        let took_over =
            || Ok(replica.cli(&["ROLE"])?.starts_with("master") && self.master_of(slot)?.port() == port);
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            expect_ok(replica.cli(&["CLUSTER", "FAILOVER"])?)?;
            match wait_within("the replica to take over the slot", FAILOVER_RETRY, took_over) {
                Ok(()) => break,
                Err(_) if Instant::now() < deadline => continue,
                Err(e) => return Err(io::Error::other(format!("{e}{}", self.describe()))),
            }
        }
        self.wait_settled()?;
        Ok(replica)
    }

    /// Every node's `CLUSTER NODES` view and log tail, for an error message.
    fn describe(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let nodes = n.cli(&["CLUSTER", "NODES"]).unwrap_or_else(|e| e.to_string());
                format!(
                    "\nnode {}:\n  {}{}",
                    n.port(),
                    nodes.replace('\n', "\n  "),
                    log_tail(n.dir())
                )
            })
            .collect()
    }
}

fn expect_ok(reply: String) -> io::Result<()> {
    if reply == "OK" {
        Ok(())
    } else {
        Err(io::Error::other(format!("expected OK, got {reply:?}")))
    }
}

/// Whether a `CLUSTER NODES` line lists `slot` among its ranges (`0-5460 5461 ...`).
fn owns_slot(line: &str, slot: u16) -> bool {
    line.split(' ').skip(8).any(|range| {
        let mut bounds = range.splitn(2, '-').map(|b| b.parse::<u16>());
        match (bounds.next(), bounds.next()) {
            (Some(Ok(a)), Some(Ok(b))) => (a..=b).contains(&slot),
            (Some(Ok(a)), None) => a == slot,
            _ => false,
        }
    })
}

/// The number after `field:` in an `INFO` reply.
fn replication_field(info: &str, field: &str) -> io::Result<u64> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("INFO replication has no {field}")))
}

#[cfg(test)]
mod tests {
    use super::owns_slot;

    #[test]
    fn reads_slot_ranges_of_cluster_nodes_lines() {
        let line = "id 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460 6000 [7000->-x]";
        assert!(owns_slot(line, 0));
        assert!(owns_slot(line, 5460));
        assert!(owns_slot(line, 6000));
        assert!(!owns_slot(line, 5461));
        assert!(!owns_slot(line, 7000));
    }
}
