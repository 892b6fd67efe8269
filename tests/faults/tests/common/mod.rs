//! Helpers shared by the scenario tests: servers, raw connections for inspecting keys, holder
//! specs pointing at this build's worker, and bounded waiting.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use redlatch_faults::HolderSpec;
use redlatch_fleet::RedisServer;

/// A hang guard for a whole step: generous, never a performance claim.
pub const HANG_GUARD: Duration = Duration::from_secs(15);

pub fn server() -> RedisServer {
    RedisServer::start().expect("start redis-server")
}

/// A plain redis-rs connection straight to `server` (never through a proxy).
pub fn raw(server: &RedisServer) -> redis::Connection {
    let conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    conn
}

/// Runs one command on `server` over a fresh raw connection.
pub fn cmd<T: redis::FromRedisValue>(server: &RedisServer, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(&mut raw(server)).unwrap()
}

/// Whether `key` exists on `server`.
pub fn exists(server: &RedisServer, key: &str) -> bool {
    cmd::<i64>(server, &["EXISTS", key]) == 1
}

/// Polls `cond` every 10 ms until it holds or `limit` passes; returns whether it held.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A fenced watchdog-mode holder spec for this build's `redlatch-fault-holder`.
pub fn holder(id: &str, url: &str, lock: &str, resource: u16) -> HolderSpec {
    let mut spec = HolderSpec::new(id, url, lock, resource);
    spec.exe = PathBuf::from(env!("CARGO_BIN_EXE_redlatch-fault-holder"));
    spec
}

/// A unique lock name per test, so a failure's leftovers never meet another test.
pub fn name(test: &str) -> String {
    format!("faults:{test}")
}
