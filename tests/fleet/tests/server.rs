//! Lifecycle of one `RedisServer`: start, stop, pause/resume, kill/restart, drop.
//! Time bounds here are generous hang guards, never performance asserts.

use std::time::{Duration, Instant};

use redlatch_fleet::{ping_port, redis_server_path, Fleet, RedisServer};

const SHORT: Duration = Duration::from_millis(300);
const HANG_GUARD: Duration = Duration::from_secs(10);

/// Polls `cond` until it holds or HANG_GUARD passes.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + HANG_GUARD;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn finds_redis_server() {
    assert!(redis_server_path().unwrap().ends_with("redis-server"));
}

#[test]
fn start_answers_and_stop_closes_the_port() {
    let server = RedisServer::start().unwrap();
    let port = server.port();
    assert_eq!(server.url(), format!("redis://127.0.0.1:{port}"));
    assert!(server.is_running());
    assert!(server.ping(SHORT));
    assert_eq!(server.cli(&["PING"]).unwrap(), "PONG");
    assert_eq!(server.cli(&["SET", "k", "v"]).unwrap(), "OK");
    assert_eq!(server.cli(&["GET", "k"]).unwrap(), "v");

    server.stop().unwrap();
    assert!(!server.is_running());
    assert!(!ping_port(port, SHORT));
    server.stop().unwrap(); // idempotent
}

#[test]
fn server_has_the_harness_configuration() {
    let server = RedisServer::start().unwrap();
    assert_eq!(server.cli(&["CONFIG", "GET", "save"]).unwrap(), "save");
    assert_eq!(
        server.cli(&["CONFIG", "GET", "appendonly"]).unwrap(),
        "appendonly\nno"
    );
    assert_eq!(server.cli(&["CONFIG", "GET", "bind"]).unwrap(), "bind\n127.0.0.1");
    // DEBUG is enabled for local connections (fault injection: DEBUG SLEEP).
    assert_eq!(server.cli(&["DEBUG", "SLEEP", "0"]).unwrap(), "OK");
    let dir = server.cli(&["CONFIG", "GET", "dir"]).unwrap();
    assert!(dir.ends_with(&*server.dir().to_string_lossy()), "{dir}");
    assert!(server.log_path().exists());
}

#[test]
fn pause_stops_answers_and_resume_brings_them_back() {
    let server = RedisServer::start().unwrap();
    server.pause().unwrap();
    assert!(server.is_paused());
    assert!(server.is_running(), "a paused server is still running");
    assert!(!server.ping(SHORT), "a paused server must not answer PING");

    server.resume().unwrap();
    assert!(!server.is_paused());
    assert!(eventually(|| server.ping(SHORT)), "no PONG after resume");
}

#[test]
fn paused_server_is_killed_on_drop() {
    let server = RedisServer::start().unwrap();
    let port = server.port();
    let dir = server.dir().to_path_buf();
    server.pause().unwrap();
    drop(server);
    assert!(!ping_port(port, SHORT));
    assert!(!dir.exists(), "the temporary directory is removed");
}

#[test]
fn stop_works_on_a_paused_server() {
    let server = RedisServer::start().unwrap();
    server.pause().unwrap();
    server.stop().unwrap();
    assert!(!server.is_running());
    assert!(!server.ping(SHORT));
}

#[test]
fn kill_then_restart_on_the_same_port_without_data() {
    let server = RedisServer::start().unwrap();
    let port = server.port();
    let first_pid = server.pid();
    server.cli(&["SET", "k", "v"]).unwrap();

    server.kill().unwrap();
    assert!(!server.is_running());
    assert!(!ping_port(port, SHORT));
    assert!(server.pause().is_err(), "cannot pause a dead server");

    server.restart().unwrap();
    assert_eq!(server.port(), port);
    assert_ne!(server.pid(), first_pid);
    assert!(server.ping(SHORT));
    assert_eq!(
        server.cli(&["GET", "k"]).unwrap(),
        "",
        "no persistence across restarts"
    );

    // restart() also works on a running server (stop + start) and after stop().
    server.restart().unwrap();
    assert!(server.ping(SHORT));
    server.stop().unwrap();
    server.restart().unwrap();
    assert!(server.ping(SHORT));
    assert_eq!(server.port(), port);
}

#[test]
fn two_servers_get_different_ports() {
    let a = RedisServer::start().unwrap();
    let b = RedisServer::start().unwrap();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.dir(), b.dir());
    a.cli(&["SET", "only-a", "1"]).unwrap();
    assert_eq!(b.cli(&["EXISTS", "only-a"]).unwrap(), "0");
}

#[test]
fn server_can_be_shared_with_a_fault_thread() {
    let server = RedisServer::start().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| server.pause().unwrap()).join().unwrap();
    });
    assert!(!server.ping(SHORT));
    server.resume().unwrap();
    assert!(eventually(|| server.ping(SHORT)));
}

#[test]
fn fleet_starts_distinct_nodes_and_stops_them_on_drop() {
    let fleet = Fleet::start(3).unwrap();
    let single = fleet.single.as_ref().unwrap();
    let mut ports: Vec<u16> = fleet.quorum.iter().map(RedisServer::port).collect();
    ports.push(single.port());
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 4);
    assert_eq!(fleet.quorum_urls().len(), 3);
    assert_eq!(fleet.single_url(), Some(single.url()));
    let env: std::collections::HashMap<_, _> = fleet.env_vars().into_iter().collect();
    assert_eq!(env["REDLATCH_TEST_URL"], single.url());
    assert_eq!(env["REDLATCH_TEST_QUORUM_URLS"], fleet.quorum_urls().join(","));
    assert_eq!(env["REDLATCH_TEST_ADMIN_URL"], single.admin_url());
    assert_eq!(env.len(), 4, "{env:?}");
    assert!(ports.iter().all(|&p| ping_port(p, SHORT)));

    drop(fleet);
    assert!(ports.iter().all(|&p| !ping_port(p, SHORT)));
}

#[test]
fn start_with_keeps_its_options_across_restarts() {
    // AOF with fsync on every write: the data survives a crash (kill -9) and restart.
    let server = RedisServer::start_with(&["--appendonly", "yes", "--appendfsync", "always"]).unwrap();
    assert_eq!(
        server.cli(&["CONFIG", "GET", "appendfsync"]).unwrap(),
        "appendfsync\nalways"
    );
    server.cli(&["SET", "k", "kept"]).unwrap();
    server.kill().unwrap();
    server.restart().unwrap();
    assert_eq!(server.cli(&["GET", "k"]).unwrap(), "kept");
    assert_eq!(
        server.cli(&["CONFIG", "GET", "appendonly"]).unwrap(),
        "appendonly\nyes"
    );
}

#[test]
fn signal_child_stops_resumes_and_kills_only_a_live_child() {
    use redlatch_fleet::{signal_child, Signal};
    let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let state = |pid: u32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit_once(')')
            .unwrap()
            .1
            .trim_start()
            .chars()
            .next()
            .unwrap()
    };
    signal_child(&mut child, Signal::Stop).unwrap();
    assert!(eventually(|| state(child.id()) == 'T'), "stopped");
    signal_child(&mut child, Signal::Cont).unwrap();
    assert!(eventually(|| state(child.id()) != 'T'), "resumed");
    signal_child(&mut child, Signal::Kill).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    let err = signal_child(&mut child, Signal::Kill).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotConnected);
}
