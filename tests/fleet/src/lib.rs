//! Test harness for redlatch: real `redis-server` processes on free 127.0.0.1 ports.
//!
//! Why real servers and not a mock: lock safety depends on Redis' own semantics (expiry, script
//! atomicity, `CLIENT PAUSE`, `DEBUG SLEEP`), and faults are injected on real processes
//! (`SIGSTOP`/`SIGCONT`/`SIGKILL`). Every server started here gets its own port (picked at run
//! time, never fixed, since other servers may already listen on the usual ones), its own
//! temporary directory, no persistence, and is stopped *by pid* by the handle that started it.
//!
//! - [`RedisServer`]: one process; start, pause, resume, kill, stop, restart, `redis-cli`.
//! - [`Fleet`]: one single node plus N independent quorum nodes (for Redlock).
//! - [`ServerOptions`]: TLS, Cluster or Sentinel mode, Valkey, the least-privilege ACL user.
//! - [`RedisCluster`] (3 masters + 3 replicas), [`SentinelGroup`] (master, replica, 3
//!   sentinels), [`TestPki`] (a CA and certificates made by openssl), [`HoldingProxy`].
//! - [`check_no_overlap`]: the mutual-exclusion checker over `[acquired, released, token]` logs,
//!   timed with [`monotonic_ns`], the clock every process on the machine shares
//!   ([`first_overlap`]: the offending pair itself).
//! - [`signal_child`]: `SIGSTOP`/`SIGCONT`/`SIGKILL` for other child processes a test starts
//!   (lock holders), with the same by-pid, still-our-child rule as the servers.
//! - [`in_forked_child`]: runs a closure in a forked child with a deadline (fork-rule tests).
//! - The `redlatch-fleet` binary runs another program (pytest, `node --test`, C tests) against a
//!   fleet, passing the URLs in [`ENV_URL`] and [`ENV_QUORUM_URLS`].
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod acl;
mod checker;
mod clock;
mod cluster;
mod deployments;
mod fleet;
mod fork;
mod launch;
mod options;
mod paths;
mod pki;
mod proxy;
mod resp;
mod sentinel;
mod server;
mod signal;

pub use checker::{check_no_overlap, find_overlaps, first_overlap, Interval};
pub use clock::monotonic_ns;
pub use cluster::RedisCluster;
pub use deployments::*;
pub use fleet::{Fleet, ENV_ADMIN_QUORUM_URLS, ENV_ADMIN_URL, ENV_QUORUM_URLS, ENV_URL};
pub use fork::{in_forked_child, ChildEnd};
pub use options::{ClientAuth, ServerOptions, TlsServer, ENV_ACL, ENV_SERVER};
pub use paths::{redis_cli_path, redis_server_path, valkey_server_path};
pub use pki::{TestPki, SERVER_NAMES};
pub use proxy::HoldingProxy;
pub use resp::ping_port;
pub use sentinel::{SentinelGroup, SentinelOptions, MASTER_NAME};
pub use server::{RedisServer, START_TIMEOUT, STOP_TIMEOUT};
pub use signal::{signal_child, Signal};
