//! [`Holder`]: a child process running the `redlatch-fault-holder` worker, which takes a
//! lock in a loop and does a read-increment-write on a [`FencedResource`](crate::FencedResource)
//! inside it. Being a separate process, it can be frozen (`SIGSTOP`, a GC pause) or crashed
//! (`SIGKILL`) with its lock held, which a task inside the test process cannot.
//!
//! Signals go through [`redlatch_fleet::signal_child`]: by pid, to our own un-reaped child.

use std::io::{self, BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redlatch_fleet::{monotonic_ns, signal_child, Signal};

use crate::events::Event;
use crate::sections::{sections_from, Section};

/// How long [`Holder::spawn`] waits for the worker's `ready` line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What a holder process does: which lock, how, and how many sections.
#[derive(Debug, Clone)]
pub struct HolderSpec {
    /// The `redlatch-fault-holder` executable (see [`holder_exe`]).
    pub exe: PathBuf,
    /// The holder's id in reports.
    pub id: String,
    /// One Redis URL (single node) or several (a quorum).
    pub urls: Vec<String>,
    /// The lock's name.
    pub lock: String,
    /// The port of the resource to write to.
    pub resource: u16,
    /// Fixed lease; `None` = watchdog mode.
    pub lease: Option<Duration>,
    /// The client's watchdog timeout (`None` = the library's default, 30 s).
    pub watchdog: Option<Duration>,
    /// The client's network timeout (`None` = default, 3 s).
    pub network_timeout: Option<Duration>,
    /// Quorum mode: per-node timeout (`None` = default).
    pub node_timeout: Option<Duration>,
    /// How long each acquire waits (`None` = until acquired).
    pub wait: Option<Duration>,
    /// Pause between the section's READ and WRITE.
    pub work: Duration,
    /// Sections to run (`None` = until stdin closes, see [`Holder::finish`]).
    pub sections: Option<u64>,
    /// Take fencing tokens (single node only).
    pub fenced: bool,
}

impl HolderSpec {
    /// A fenced holder on a single node in watchdog mode, running until finished.
    pub fn new(id: &str, url: &str, lock: &str, resource: u16) -> HolderSpec {
        HolderSpec {
            exe: holder_exe(),
            id: id.to_string(),
            urls: vec![url.to_string()],
            lock: lock.to_string(),
            resource,
            lease: None,
            watchdog: None,
            network_timeout: None,
            node_timeout: None,
            wait: None,
            work: Duration::ZERO,
            sections: None,
            fenced: true,
        }
    }

    fn args(&self) -> Vec<String> {
        let ms = |d: Duration| d.as_millis().to_string();
        let mut args = vec![
            "--id".into(),
            self.id.clone(),
            "--urls".into(),
            self.urls.join(","),
            "--lock".into(),
            self.lock.clone(),
            "--resource".into(),
            self.resource.to_string(),
            "--work-ms".into(),
            ms(self.work),
        ];
        let optional = [
            ("--lease-ms", self.lease),
            ("--watchdog-ms", self.watchdog),
            ("--network-timeout-ms", self.network_timeout),
            ("--node-timeout-ms", self.node_timeout),
            ("--wait-ms", self.wait),
        ];
        for (flag, value) in optional {
            if let Some(d) = value {
                args.extend([flag.to_string(), ms(d)]);
            }
        }
        if let Some(n) = self.sections {
            args.extend(["--sections".to_string(), n.to_string()]);
        }
        if self.fenced {
            args.push("--fenced".into());
        }
        args
    }
}

/// The worker executable: `$REDLATCH_FAULT_HOLDER` if set, else `redlatch-fault-holder` next
/// to the running executable or one directory up (test binaries live in `target/*/deps`).
pub fn holder_exe() -> PathBuf {
    if let Some(path) = std::env::var_os("REDLATCH_FAULT_HOLDER") {
        return PathBuf::from(path);
    }
    let name = "redlatch-fault-holder";
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let beside = dir.join(name);
    if beside.exists() {
        return beside;
    }
    dir.parent().map(|p| p.join(name)).unwrap_or(beside)
}

#[derive(Default)]
struct Log {
    events: Mutex<Vec<Event>>,
    changed: Condvar,
}

impl Log {
    fn events(&self) -> MutexGuard<'_, Vec<Event>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running holder process. Dropping it kills the process (resuming it first if paused).
pub struct Holder {
    id: String,
    child: Child,
    stdin: Option<ChildStdin>,
    log: Arc<Log>,
    reader: Option<JoinHandle<()>>,
    paused: bool,
    ended_at: Option<u64>,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holder")
            .field("id", &self.id)
            .field("pid", &self.child.id())
            .field("paused", &self.paused)
            .finish()
    }
}

impl Holder {
    /// Starts a holder and waits (at most [`READY_TIMEOUT`]) until it has connected.
    ///
    /// # Errors
    /// The process could not start, or it exited or stayed silent instead of reporting ready.
    pub fn spawn(spec: &HolderSpec) -> io::Result<Holder> {
        let mut child = Command::new(&spec.exe)
            .args(spec.args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run {}: {e}", spec.exe.display())))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let log = Arc::new(Log::default());
        let reader = {
            let (log, id) = (log.clone(), spec.id.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    match Event::parse(&line) {
                        Ok(event) => log.events().push(event),
                        Err(e) => eprintln!("holder {id}: {e}"),
                    }
                    log.changed.notify_all();
                }
            })
        };
        let holder = Holder {
            id: spec.id.clone(),
            stdin: child.stdin.take(),
            child,
            log,
            reader: Some(reader),
            paused: false,
            ended_at: None,
        };
        if holder.wait_for(READY_TIMEOUT, |e| *e == Event::Ready).is_none() {
            return Err(io::Error::other(format!(
                "holder {} did not report ready within {READY_TIMEOUT:?}",
                spec.id
            )));
        }
        Ok(holder)
    }

    /// The holder's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Everything the holder reported so far.
    pub fn events(&self) -> Vec<Event> {
        self.log.events().clone()
    }

    /// Runs `f` over the events reported so far, without copying them.
    pub fn with_events<T>(&self, f: impl FnOnce(&[Event]) -> T) -> T {
        f(&self.log.events())
    }

    /// Waits up to `timeout` for an event matching `matches` (among all reported so far, then
    /// new ones) and returns the first such event.
    pub fn wait_for(&self, timeout: Duration, mut matches: impl FnMut(&Event) -> bool) -> Option<Event> {
        let deadline = Instant::now() + timeout;
        let mut events = self.log.events();
        loop {
            if let Some(found) = events.iter().find(|e| matches(e)) {
                return Some(found.clone());
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            events = self
                .log
                .changed
                .wait_timeout(events, left.min(Duration::from_millis(50)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The sections rebuilt from the holder's report (see [`sections_from`]).
    pub fn sections(&self) -> Vec<Section> {
        sections_from(&self.id, &self.events())
    }

    /// When the process was seen dead after [`kill`](Self::kill) (shared clock), if killed.
    pub fn ended_at(&self) -> Option<u64> {
        self.ended_at
    }

    /// Freezes the process (`SIGSTOP`), lock and watchdog included.
    ///
    /// # Errors
    /// The process has exited, or `kill(2)` failed.
    pub fn pause(&mut self) -> io::Result<()> {
        signal_child(&mut self.child, Signal::Stop)?;
        self.paused = true;
        Ok(())
    }

    /// Resumes a frozen process (`SIGCONT`).
    ///
    /// # Errors
    /// As [`pause`](Self::pause).
    pub fn resume(&mut self) -> io::Result<()> {
        signal_child(&mut self.child, Signal::Cont)?;
        self.paused = false;
        Ok(())
    }

    /// Crashes the process (`SIGKILL`) and waits for it; its open section ends now.
    ///
    /// # Errors
    /// As [`pause`](Self::pause).
    pub fn kill(&mut self) -> io::Result<()> {
        signal_child(&mut self.child, Signal::Kill)?;
        self.child.wait()?;
        self.ended_at = Some(monotonic_ns());
        self.paused = false;
        self.join_reader();
        Ok(())
    }

    /// Asks the holder to stop after its current section (closes its stdin) and waits up to
    /// `timeout` for it to exit; kills it if it does not.
    ///
    /// # Errors
    /// The process did not exit in time (it is killed then), exited unsuccessfully (it failed
    /// on its own: its stderr says why), or waiting failed.
    pub fn finish(&mut self, timeout: Duration) -> io::Result<()> {
        if self.paused {
            self.resume()?;
        }
        drop(self.stdin.take());
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if Instant::now() >= deadline {
                self.kill()?;
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("holder {} did not finish within {timeout:?}", self.id),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.join_reader();
        if !status.success() {
            return Err(io::Error::other(format!(
                "holder {} exited with {status}",
                self.id
            )));
        }
        Ok(())
    }

    fn join_reader(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if self.paused {
            let _ = signal_child(&mut self.child, Signal::Cont);
        }
        if signal_child(&mut self.child, Signal::Kill).is_ok() {
            let _ = self.child.wait();
        }
    }
}
