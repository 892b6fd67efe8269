//! Spawning `redis-server` and deciding when it is ready; the resources each server owns
//! (a reserved port, a private temporary directory).
//!
//! Why the identity check: the port comes from a probe socket that is closed before Redis
//! binds it, so in between another process may take it. A `PONG` alone would then come from
//! someone else's server; `INFO server` → `process_id` must be our child's pid.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::resp::{ping_port_as, server_pid};
use crate::server::START_TIMEOUT;

/// Timeout of one readiness probe (connect, write and read each).
const PROBE_TIMEOUT: Duration = Duration::from_millis(250);

/// Ports handed out by this process and not yet released (by `Drop`).
static RESERVED_PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
static DIR_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Why a spawned server did not become ready.
enum NotReady {
    /// It exited, most likely because the port was taken (retry with another port).
    Exited(ExitStatus),
    /// Someone else's server answered on the port (retry with another port).
    Impostor(u32),
    /// It never answered within [`START_TIMEOUT`].
    TimedOut,
    Io(io::Error),
}

/// Spawns Redis on `port` and waits until it is ready. `conf` (a config file, first on the
/// command line) and `extra` (after the harness's own options, so they win) come from
/// [`ServerOptions`](crate::ServerOptions). On failure the child is killed and reaped; the
/// error says what happened and whether another port (or another try) may help.
pub(crate) fn launch(
    exe: &Path,
    port: u16,
    dir: &Path,
    conf: &[String],
    extra: &[String],
    password: Option<&str>,
) -> Result<Child, (String, bool)> {
    let mut child = Command::new(exe)
        .args(conf)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--enable-debug-command", "local", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"))
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| (format!("cannot run {}: {e}", exe.display()), false))?;
    let failure = match wait_ready(&mut child, port, password) {
        Ok(()) => return Ok(child),
        Err(NotReady::Exited(status)) => (format!("exited with {status} (port {port} taken?)"), true),
        Err(NotReady::Impostor(pid)) => (
            format!("port {port} is served by another process (pid {pid})"),
            true,
        ),
        Err(NotReady::TimedOut) => (format!("no PONG on port {port} within {START_TIMEOUT:?}"), false),
        Err(NotReady::Io(e)) => (format!("waiting for the process failed: {e}"), false),
    };
    let _ = child.kill();
    let _ = child.wait();
    Err(failure)
}

fn wait_ready(child: &mut Child, port: u16, password: Option<&str>) -> Result<(), NotReady> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Err(NotReady::Exited(status)),
            Ok(None) => {}
            Err(e) => return Err(NotReady::Io(e)),
        }
        if ping_port_as(port, password, PROBE_TIMEOUT) {
            match server_pid(port, password, PROBE_TIMEOUT) {
                Ok(pid) if pid == child.id() => return Ok(()),
                Ok(pid) => return Err(NotReady::Impostor(pid)),
                Err(_) => {} // still loading or a transient error: probe again
            }
        }
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
        sleep(Duration::from_millis(10));
    }
}

/// Waits (at most 1 s) until /proc reports `pid` stopped, so that a test pausing a server and
/// then probing it never races the signal's delivery. Best effort: returns early without /proc.
pub(crate) fn wait_until_stopped(pid: u32) {
    let path = format!("/proc/{pid}/stat");
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        let Ok(stat) = fs::read_to_string(&path) else {
            return;
        };
        // The state letter follows the parenthesised command name.
        match stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().chars().next())
        {
            Some(Some('T' | 't')) | None | Some(None) => return,
            _ => sleep(Duration::from_millis(1)),
        }
    }
}

/// A port the kernel just gave us for 127.0.0.1 and that no other server of this process holds.
pub(crate) fn reserve_free_port() -> io::Result<u16> {
    for _ in 0..100 {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let mut reserved = RESERVED_PORTS.lock().unwrap_or_else(|p| p.into_inner());
        if reserved.insert(port) {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        "no free port on 127.0.0.1",
    ))
}

pub(crate) fn release_port(port: u16) {
    RESERVED_PORTS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&port);
}

pub(crate) fn make_temp_dir() -> io::Result<PathBuf> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    loop {
        let n = DIR_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("redlatch-fleet-{}-{nanos}-{n}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// The last lines of the server's log, formatted to append to an error message.
pub(crate) fn log_tail(dir: &Path) -> String {
    let Ok(log) = fs::read_to_string(dir.join("redis.log")) else {
        return String::new();
    };
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(5)..].join("\n  ");
    format!("\nlast lines of {}:\n  {tail}", dir.join("redis.log").display())
}
