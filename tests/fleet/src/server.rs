//! One `redis-server` process owned by the test that started it.
//!
//! Why these choices:
//! - Ports come from the kernel (`bind 127.0.0.1:0`), are remembered in a process-wide set so
//!   parallel tests never pick the same one twice, and the server that answers is checked to be
//!   *our* process (`INFO server` → `process_id`) before `start` returns, because a port freed
//!   by the probe can be taken by someone else before Redis binds it.
//! - Every signal goes to our own child by pid while the child is still un-reaped, so a reused
//!   pid can never be hit; nothing is ever killed by name.
//! - State sits behind a `Mutex` so a server can be shared (`&RedisServer`, `Arc`) between the
//!   test body and a fault-injecting thread.
//! - Redis runs in the test's process group: a Ctrl-C on `cargo test` reaches it too, so an
//!   interrupted run (where `Drop` never runs) does not leave servers behind.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::launch::{launch, log_tail, make_temp_dir, release_port, reserve_free_port, wait_until_stopped};
use crate::options::{ExtraPorts, ServerOptions};
use crate::paths::redis_cli_path;
use crate::resp::{inline_command_as, ping_port_as};
use crate::signal;

/// Upper bound on waiting for a newly spawned `redis-server` to answer `PING` (10 s).
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound on waiting for a server to exit after `SIGTERM` before `SIGKILL` (5 s).
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);
/// How many fresh ports `start` tries when Redis cannot bind the one it was given.
const START_ATTEMPTS: usize = 5;

/// One `redis-server` on 127.0.0.1, on a port chosen at run time, with its own temporary
/// directory (`--dir`, `redis.log`), no persistence (`--save '' --appendonly no`) and
/// `DEBUG` enabled for local clients (`--enable-debug-command local`).
///
/// Dropping it kills the process (resuming it first if paused), waits for it, and removes the
/// temporary directory. All methods take `&self`; the type is `Send + Sync`.
pub struct RedisServer {
    port: u16,
    extra_ports: ExtraPorts,
    dir: PathBuf,
    exe: PathBuf,
    /// Config-file and extra arguments (kept for restarts).
    conf: Vec<String>,
    extra: Vec<String>,
    acl_user: bool,
    valkey: bool,
    password: Option<String>,
    state: Mutex<State>,
}

struct State {
    child: Option<Child>,
    pid: u32,
    paused: bool,
}

impl State {
    /// Our child if it has not exited; reaps and forgets it if it has.
    fn live(&mut self) -> Option<&mut Child> {
        let alive = matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)));
        if !alive {
            self.child = None;
            self.paused = false;
        }
        self.child.as_mut()
    }
}

impl RedisServer {
    /// Starts a server on a free port and waits (at most [`START_TIMEOUT`], 10 s) until it
    /// answers `PING` with `+PONG`. If Redis fails to bind the port (another process took it
    /// between our probe and Redis' bind), retries with a new port, up to 5 ports in all.
    /// The executable is `redis-server`, or the one named by
    /// [`ENV_SERVER`](crate::ENV_SERVER); with [`ENV_ACL`](crate::ENV_ACL) set to `1` the
    /// server gets the least-privilege user and [`url`](Self::url) logs in as it.
    ///
    /// # Errors
    /// `redis-server` missing (with an install hint), the temporary directory not creatable,
    /// or the server not starting; the message then ends with the tail of `redis.log`.
    pub fn start() -> io::Result<Self> {
        Self::start_with_options(&ServerOptions::default())
    }

    /// Like [`start`](Self::start), with extra `redis-server` options after the harness's own
    /// (so they override them), kept for [`restart`](Self::restart). For example
    /// `["--appendonly", "yes", "--appendfsync", "always"]` makes the data survive a
    /// `kill` + `restart` (the AOF lives in the server's temporary directory).
    ///
    /// # Errors
    /// As [`start`](Self::start); a bad option makes Redis exit, reported with its log.
    pub fn start_with(extra: &[&str]) -> io::Result<Self> {
        Self::start_with_options(&ServerOptions {
            args: extra.iter().map(|s| (*s).to_owned()).collect(),
            ..ServerOptions::default()
        })
    }

    /// Starts a server with `options` (TLS, Cluster or Sentinel mode, another executable,
    /// extra arguments), waiting and retrying like [`start`](Self::start).
    ///
    /// # Errors
    /// As [`start`](Self::start); also when the ACL user cannot be created.
    pub fn start_with_options(options: &ServerOptions) -> io::Result<Self> {
        let exe = options.exe()?;
        let dir = make_temp_dir()?;
        let mut last_error = String::new();
        for _ in 0..START_ATTEMPTS {
            let ports = reserve_free_port().and_then(|p| Ok((p, options.reserve_ports()?)));
            let (port, extra_ports) = match ports {
                Ok(ports) => ports,
                Err(e) => {
                    let _ = fs::remove_dir_all(&dir);
                    return Err(e);
                }
            };
            let (conf, extra) = options.command_line(&extra_ports, &dir)?;
            match launch(&exe, port, &dir, &conf, &extra, options.password.as_deref()) {
                Ok(child) => {
                    let pid = child.id();
                    let state = State {
                        child: Some(child),
                        pid,
                        paused: false,
                    };
                    let mut server = RedisServer {
                        port,
                        extra_ports,
                        dir,
                        exe,
                        conf,
                        extra,
                        acl_user: false,
                        valkey: false,
                        password: options.password.clone(),
                        state: Mutex::new(state),
                    };
                    let password = options.password.as_deref();
                    server.valkey = inline_command_as(port, password, "INFO server", Duration::from_secs(2))
                        .is_ok_and(|info| info.contains("valkey_version:"));
                    if options.wants_acl_user() {
                        server.create_acl_user("*")?;
                        server.acl_user = true;
                    }
                    return Ok(server);
                }
                Err((message, retry)) => {
                    release_port(port);
                    extra_ports.all().for_each(release_port);
                    last_error = message;
                    if !retry {
                        break;
                    }
                }
            }
        }
        let log = log_tail(&dir);
        let _ = fs::remove_dir_all(&dir);
        Err(io::Error::other(format!(
            "redis-server did not start: {last_error}{log}"
        )))
    }

    /// Creates (or resets) the least-privilege user of [`crate::acl`] for lock names matching
    /// the glob `lock_keys`. [`url`](Self::url) does not change; use
    /// [`user_url`](Self::user_url).
    ///
    /// # Errors
    /// `ACL SETUSER` refused (the message says why).
    pub fn create_acl_user(&self, lock_keys: &str) -> io::Result<()> {
        let args = crate::acl::setuser_args(lock_keys, self.valkey);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = self.cli(&refs)?;
        if reply != "OK" {
            return Err(io::Error::other(format!("ACL SETUSER failed: {reply}")));
        }
        Ok(())
    }

    /// `true` when the executable is Valkey (its `INFO` has `valkey_version`).
    pub fn is_valkey(&self) -> bool {
        self.valkey
    }

    /// The TCP port the server listens on (fixed for the life of this handle, restarts included).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL a client under test uses: `redis://127.0.0.1:<port>`, or
    /// [`user_url`](Self::user_url) when the server was started with the ACL user.
    pub fn url(&self) -> String {
        if self.acl_user {
            self.user_url()
        } else {
            self.admin_url()
        }
    }

    /// The default (unrestricted) user's URL, `redis://127.0.0.1:<port>`, for test code that
    /// inspects or tampers with keys.
    pub fn admin_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The least-privilege user's URL, `redis://redlatch:<password>@127.0.0.1:<port>`.
    pub fn user_url(&self) -> String {
        format!(
            "redis://{}:{}@127.0.0.1:{}",
            crate::acl::USER,
            crate::acl::PASSWORD,
            self.port
        )
    }

    /// The TLS port, when started with [`ServerOptions::tls`].
    pub fn tls_port(&self) -> Option<u16> {
        self.extra_ports.tls
    }

    /// `rediss://127.0.0.1:<tls port>`, when started with [`ServerOptions::tls`].
    pub fn tls_url(&self) -> Option<String> {
        self.tls_port().map(|p| format!("rediss://127.0.0.1:{p}"))
    }

    /// The pid of the most recently started `redis-server` process. It may have exited since;
    /// check [`is_running`](Self::is_running). Signal it through this handle, not by pid,
    /// unless you know it is still running.
    pub fn pid(&self) -> u32 {
        self.state().pid
    }

    /// The server's private temporary directory (its `--dir`), removed on drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's log file, `<dir>/redis.log` (appended to across restarts).
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// True while the process has not exited (a paused process counts as running).
    pub fn is_running(&self) -> bool {
        self.state().live().is_some()
    }

    /// True between [`pause`](Self::pause) and [`resume`](Self::resume) (or until the process exits).
    pub fn is_paused(&self) -> bool {
        let mut state = self.state();
        state.live().is_some() && state.paused
    }

    /// True if the server answers `PING` within `timeout` (see [`ping_port`](crate::ping_port)).
    pub fn ping(&self, timeout: Duration) -> bool {
        ping_port_as(self.port, self.password.as_deref(), timeout)
    }

    /// Freezes the process with `SIGSTOP` and waits (up to 1 s) until the kernel reports it
    /// stopped. Connections are still accepted by the kernel, but nothing is answered.
    ///
    /// # Errors
    /// `NotConnected` if the server is not running, or the `kill(2)` error.
    pub fn pause(&self) -> io::Result<()> {
        let mut state = self.state();
        let pid = state.live().map(|c| c.id()).ok_or_else(not_running)?;
        signal::send(pid, signal::STOP)?;
        state.paused = true;
        wait_until_stopped(pid);
        Ok(())
    }

    /// Resumes a paused process with `SIGCONT`.
    ///
    /// # Errors
    /// `NotConnected` if the server is not running, or the `kill(2)` error.
    pub fn resume(&self) -> io::Result<()> {
        let mut state = self.state();
        let pid = state.live().map(|c| c.id()).ok_or_else(not_running)?;
        signal::send(pid, signal::CONT)?;
        state.paused = false;
        Ok(())
    }

    /// Kills the process with `SIGKILL` (a crash: no shutdown, no save) and waits for it.
    /// Does nothing if it is not running.
    ///
    /// # Errors
    /// Only if signalling or waiting fails.
    pub fn kill(&self) -> io::Result<()> {
        let mut state = self.state();
        if let Some(child) = state.live() {
            child.kill()?;
            child.wait()?;
        }
        state.child = None;
        state.paused = false;
        Ok(())
    }

    /// Stops the process cleanly: `SIGTERM` (plus `SIGCONT` if paused), waits up to
    /// [`STOP_TIMEOUT`] (5 s), then `SIGKILL`s and waits. Does nothing if it is not running.
    ///
    /// # Errors
    /// Only if signalling or waiting fails.
    pub fn stop(&self) -> io::Result<()> {
        stop_locked(&mut self.state())
    }

    /// Starts the server again on the same port and directory (data is not kept unless
    /// [`start_with`](Self::start_with) turned persistence on; the ACL user is created again),
    /// waiting like [`start`](Self::start). If it is still running it is first
    /// stopped with [`stop`](Self::stop). Retries for up to [`START_TIMEOUT`] if the port is
    /// momentarily taken by another process.
    ///
    /// # Errors
    /// The server could not be started on its port within the bound.
    pub fn restart(&self) -> io::Result<()> {
        let mut state = self.state();
        stop_locked(&mut state)?;
        // Nothing persists across a restart, the ACL user included: it comes back with the
        // start-up options, not by a command after the server accepts connections (a client
        // reconnecting in between met WRONGPASS, which the core takes as permanent).
        let mut extra = self.extra.clone();
        if self.acl_user {
            extra.extend(crate::acl::user_directive("*", self.valkey));
        }
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match launch(
                &self.exe,
                self.port,
                &self.dir,
                &self.conf,
                &extra,
                self.password.as_deref(),
            ) {
                Ok(child) => {
                    state.pid = child.id();
                    state.child = Some(child);
                    state.paused = false;
                    return Ok(());
                }
                Err((message, retry)) => {
                    if !retry || Instant::now() >= deadline {
                        return Err(io::Error::other(format!(
                            "redis-server did not restart on port {}: {message}{}",
                            self.port,
                            log_tail(&self.dir)
                        )));
                    }
                    sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// Runs `redis-cli -h 127.0.0.1 -p <port> <args...>` and returns its stdout, trimmed.
    /// Error replies are returned as text (e.g. `"ERR unknown command ..."`), not as `Err`.
    /// Blocks while the server is paused (redis-cli has no read timeout).
    ///
    /// # Errors
    /// `redis-cli` missing or exiting unsuccessfully (the message includes its stderr).
    pub fn cli(&self, args: &[&str]) -> io::Result<String> {
        let port = self.port.to_string();
        let mut command = Command::new(redis_cli_path()?);
        command.args(["-h", "127.0.0.1", "-p", port.as_str()]);
        if let Some(p) = &self.password {
            command.args(["-a", p, "--no-auth-warning"]);
        }
        let output = command.args(args).stdin(Stdio::null()).output()?;
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
        if !output.status.success() {
            return Err(io::Error::other(format!(
                "redis-cli {args:?} on port {port} failed ({}): {} {}",
                output.status,
                stdout,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(stdout)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisServer")
            .field("port", &self.port)
            .field("pid", &self.pid())
            .field("dir", &self.dir)
            .finish()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let paused = state.paused;
        if let Some(child) = state.live() {
            if paused {
                let _ = signal::send(child.id(), signal::CONT);
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
        release_port(self.port);
        self.extra_ports.all().for_each(release_port);
    }
}

fn stop_locked(state: &mut State) -> io::Result<()> {
    let paused = state.paused;
    if let Some(child) = state.live() {
        let pid = child.id();
        signal::send(pid, signal::TERM)?;
        if paused {
            signal::send(pid, signal::CONT)?;
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while child.try_wait()?.is_none() {
            if Instant::now() >= deadline {
                child.kill()?;
                child.wait()?;
                break;
            }
            sleep(Duration::from_millis(5));
        }
    }
    state.child = None;
    state.paused = false;
    Ok(())
}

fn not_running() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "redis-server is not running")
}
