//! The peer process: spawning, the command/answer protocol, and a client handle per Redisson
//! client (`connect` / `close`).

use std::collections::HashMap;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Upper bound on one non-blocking command (a Redisson call on a local server): 30 s.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Upper bound on JVM start-up until the peer prints `ready`: 60 s (a loaded 2-core machine).
const START_TIMEOUT: Duration = Duration::from_secs(60);

type Answer = Result<String, String>;
type Waiters = Arc<Mutex<HashMap<u64, Sender<Answer>>>>;

/// Why a peer command did not answer `ok`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerError {
    /// Redisson threw: `<ExceptionClass> <message>`.
    Java(String),
    /// No answer within the bound.
    Timeout,
    /// The peer process ended (its stderr log is named in the message).
    Died(String),
}

impl fmt::Display for PeerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerError::Java(e) => write!(f, "Java peer: {e}"),
            PeerError::Timeout => f.write_str("Java peer: no answer in time"),
            PeerError::Died(log) => write!(f, "Java peer exited; see {log}"),
        }
    }
}

impl std::error::Error for PeerError {}

/// One running peer process.
pub struct JavaPeer {
    stdin: Mutex<ChildStdin>,
    waiters: Waiters,
    next_id: AtomicU64,
    next_client: AtomicU64,
    stderr_log: PathBuf,
    _child: Mutex<Child>,
}

fn java_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("java")
}

/// Builds the peer unless its build is current (`tests/setup.sh java`: installs a JDK and
/// Maven when missing, then `mvn package` when the sources changed).
fn build() -> std::io::Result<()> {
    let setup = Path::new(env!("CARGO_MANIFEST_DIR")).join("../setup.sh");
    let status = Command::new("bash").arg(setup).arg("java").status()?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "tests/setup.sh java failed ({status})"
        )));
    }
    Ok(())
}

impl JavaPeer {
    /// The peer of this test binary, started on first use.
    ///
    /// # Panics
    /// When the peer cannot be built or started (the message says why).
    pub fn shared() -> &'static JavaPeer {
        static PEER: OnceLock<JavaPeer> = OnceLock::new();
        PEER.get_or_init(|| JavaPeer::start().unwrap_or_else(|e| panic!("cannot start the Java peer: {e}")))
    }

    /// Builds (if needed) and starts a peer, waiting for its `ready` line.
    ///
    /// # Errors
    /// The build failed, `java` is missing, or the peer did not get ready in 60 s.
    pub fn start() -> std::io::Result<JavaPeer> {
        build()?;
        let dir = java_dir();
        let stderr_log = std::env::temp_dir().join(format!("redlatch-java-peer-{}.log", std::process::id()));
        let classpath = format!("{0}/target/classes:{0}/target/lib/*", dir.display());
        let mut child = Command::new("java")
            .args(["-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
            .args(["-cp", &classpath, "dev.redlatch.interop.Peer"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_log)?)
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let waiters: Waiters = Arc::default();
        let (ready_tx, ready_rx) = channel();
        let routes = waiters.clone();
        std::thread::spawn(move || route_answers(BufReader::new(stdout), routes, ready_tx));
        match ready_rx.recv_timeout(START_TIMEOUT) {
            Ok(()) => {}
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::other(format!(
                    "the Java peer did not print `ready` within {START_TIMEOUT:?}; see {}",
                    stderr_log.display()
                )));
            }
        }
        Ok(JavaPeer {
            stdin: Mutex::new(stdin),
            waiters,
            next_id: AtomicU64::new(1),
            next_client: AtomicU64::new(1),
            stderr_log,
            _child: Mutex::new(child),
        })
    }

    /// Sends `command` (verb and arguments, space-separated) and returns its pending answer.
    pub fn send(&self, command: &str) -> Pending {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        self.waiters.lock().unwrap().insert(id, tx);
        let line = format!("{id} {command}\n");
        let written = {
            let mut stdin = self.stdin.lock().unwrap();
            stdin.write_all(line.as_bytes()).and_then(|()| stdin.flush())
        };
        if written.is_err() {
            self.waiters.lock().unwrap().remove(&id);
        }
        Pending {
            rx,
            command: command.to_owned(),
            log: self.stderr_log.display().to_string(),
        }
    }

    /// Sends `command` and waits (at most [`CALL_TIMEOUT`]) for its answer.
    ///
    /// # Errors
    /// As [`Pending::wait`].
    pub fn call(&self, command: &str) -> Result<String, PeerError> {
        self.send(command).wait(CALL_TIMEOUT)
    }

    /// A new Redisson client on `url` (a test's own server); closed when the handle drops.
    ///
    /// # Panics
    /// When Redisson cannot connect.
    pub fn connect(&'static self, url: &str) -> JavaClient {
        let alias = format!("c{}", self.next_client.fetch_add(1, Ordering::Relaxed));
        let uuid = self
            .call(&format!("connect {alias} {url}"))
            .unwrap_or_else(|e| panic!("Redisson connect to {url}: {e}"));
        JavaClient {
            peer: self,
            alias,
            uuid,
        }
    }
}

fn route_answers(stdout: impl BufRead, waiters: Waiters, ready: Sender<()>) {
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        if line == "ready" {
            let _ = ready.send(());
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let (Some(id), Some(status)) = (parts.next(), parts.next()) else {
            continue;
        };
        let rest = parts.next().unwrap_or("").to_owned();
        let Ok(id) = id.parse::<u64>() else { continue };
        if let Some(tx) = waiters.lock().unwrap().remove(&id) {
            let _ = tx.send(if status == "ok" { Ok(rest) } else { Err(rest) });
        }
    }
    // The peer is gone: every waiter learns it (their senders drop).
    waiters.lock().unwrap().clear();
}

/// The answer to one command, still to come.
pub struct Pending {
    rx: Receiver<Answer>,
    command: String,
    log: String,
}

impl Pending {
    /// Waits at most `timeout` for the answer: the values after `ok`.
    ///
    /// # Errors
    /// `Java` when Redisson threw, `Timeout`, or `Died` when the peer exited.
    pub fn wait(self, timeout: Duration) -> Result<String, PeerError> {
        match self.rx.recv_timeout(timeout) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(PeerError::Java(e)),
            Err(RecvTimeoutError::Timeout) => Err(PeerError::Timeout),
            Err(RecvTimeoutError::Disconnected) => Err(PeerError::Died(self.log)),
        }
    }

    /// The answer if it has come, without waiting.
    pub fn try_answer(&self) -> Option<Result<String, PeerError>> {
        match self.rx.try_recv() {
            Ok(Ok(v)) => Some(Ok(v)),
            Ok(Err(e)) => Some(Err(PeerError::Java(e))),
            Err(_) => None,
        }
    }

    /// The command this answer belongs to (for messages).
    pub fn command(&self) -> &str {
        &self.command
    }
}

/// One Redisson client of the peer. Lock commands take a thread id: the Redisson owner is
/// `<uuid>:<thread id>` ([`JavaClient::owner`]).
pub struct JavaClient {
    peer: &'static JavaPeer,
    alias: String,
    /// The client's id (`RedissonClient.getId()`), the first half of its owner ids.
    pub uuid: String,
}

impl JavaClient {
    /// The Redisson owner id of thread `tid`: `<uuid>:<tid>`.
    pub fn owner(&self, tid: u64) -> String {
        format!("{}:{tid}", self.uuid)
    }

    /// Sends `verb <alias> args` and returns the pending answer.
    pub fn send(&self, verb: &str, args: &str) -> Pending {
        self.peer.send(&format!("{verb} {} {args}", self.alias))
    }

    /// Sends `verb <alias> args` and waits ([`CALL_TIMEOUT`]).
    ///
    /// # Errors
    /// As [`Pending::wait`].
    pub fn call(&self, verb: &str, args: &str) -> Result<String, PeerError> {
        self.send(verb, args).wait(CALL_TIMEOUT)
    }

    /// `lock KIND NAME TID WAIT LEASE` (wait -1 = unbounded, lease -1 = watchdog); answers
    /// `true`/`false`.
    pub fn lock(&self, kind: &str, name: &str, tid: u64, wait_ms: i64, lease_ms: i64) -> Pending {
        self.send("lock", &format!("{kind} {name} {tid} {wait_ms} {lease_ms}"))
    }

    /// `unlock KIND NAME TID`.
    ///
    /// # Errors
    /// `Java("IllegalMonitorStateException ...")` when that thread does not hold it.
    pub fn unlock(&self, kind: &str, name: &str, tid: u64) -> Result<(), PeerError> {
        self.call("unlock", &format!("{kind} {name} {tid}")).map(drop)
    }

    /// Every key Redisson sees in the database, sorted.
    pub fn keys(&self) -> Vec<String> {
        let all = self.call("keys", "").expect("keys");
        all.split_whitespace().map(str::to_owned).collect()
    }
}

impl Drop for JavaClient {
    fn drop(&mut self) {
        // Not waited for: the next test need not pay for Redisson's shutdown.
        drop(self.peer.send(&format!("close {}", self.alias)));
    }
}
