//! The demo driver: one Redis, the same workload run unlocked then locked, one report.
//!
//! Why worker *processes* (not threads): a distributed lock is about separate clients, and
//! processes let workers be written in any language. The driver only speaks the protocol in
//! `worker.rs`; it does not care what a worker is written in.

use std::io::{self, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::{self, sleep};
use std::time::{Duration, Instant};

use redlatch_fleet::{check_no_overlap, find_overlaps, first_overlap, monotonic_ns, Interval, RedisServer};

use crate::lock::LOCK_IMPL;
use crate::overlap;
use crate::worker::{BoxError, Mode, GO_KEY, READY_KEY, SOLD_KEY, STOCK_KEY};

/// How to start one worker; it gets `<url> <mode> <worker-id>` appended.
#[derive(Clone, Debug)]
pub enum WorkerCmd {
    /// This executable's `worker` subcommand.
    Rust,
    /// A simple command line (program and arguments, shell-quoted), run as
    /// `sh -c 'exec <cmd> "$@"'`, e.g. `python3 examples/demo/worker.py`.
    Shell(String),
}

impl WorkerCmd {
    /// A short name for the report: `rust` (this binary's own worker, also when started as
    /// `redlatch-demo worker`), or the program's file name.
    pub fn label(&self) -> String {
        match self {
            WorkerCmd::Rust => "rust".to_string(),
            WorkerCmd::Shell(cmd) => {
                // `node x/wasm_worker.mjs` is the wasm worker, not "node": an interpreter's
                // script names the worker when there is one.
                let mut words = cmd.split_whitespace();
                let program = words.next().unwrap_or("?");
                let argument = words.next();
                let script = argument.filter(|w| [".py", ".mjs", ".js"].iter().any(|e| w.ends_with(e)));
                let name = script.unwrap_or(program);
                let file = name.rsplit('/').next().unwrap_or(name);
                let stem = file.split('.').next().unwrap_or(file);
                if stem == env!("CARGO_PKG_NAME") && argument == Some("worker") {
                    "rust".to_string()
                } else {
                    stem.to_string()
                }
            }
        }
    }

    fn command(&self, url: &str, mode: Mode, id: &str) -> io::Result<Command> {
        let mut command = match self {
            WorkerCmd::Rust => {
                let mut c = Command::new(std::env::current_exe()?);
                c.arg("worker");
                c
            }
            WorkerCmd::Shell(cmd) => {
                let mut c = Command::new("sh");
                c.args(["-c", &format!("exec {cmd} \"$@\""), "redlatch-demo-worker"]);
                c
            }
        };
        command.args([url, mode.as_str(), id]);
        Ok(command)
    }
}

/// What the demo runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of worker processes per run.
    pub workers: usize,
    /// Initial value of `demo:stock`.
    pub stock: i64,
    /// Worker commands, assigned round-robin to worker ids 1..=workers.
    pub commands: Vec<WorkerCmd>,
    /// The runs, in order.
    pub modes: Vec<Mode>,
    /// Bound on one run; workers still running then are killed (seconds).
    pub timeout: Duration,
}

/// One run's outcome.
struct Run {
    mode: Mode,
    sold: i64,
    stock: i64,
    overlaps: usize,
    first_overlap: Option<String>,
    elapsed: Duration,
    failures: Vec<String>,
}

impl Run {
    fn verdict(&self, initial: i64) -> &'static str {
        if !self.failures.is_empty() {
            "FAILED"
        } else if self.sold == initial && self.stock == 0 {
            "EXACT"
        } else if self.sold > initial || self.stock < 0 {
            "OVERSOLD"
        } else {
            "WRONG"
        }
    }
}

/// Runs every configured mode against a fresh Redis and prints the report. Returns true when
/// every locked run sold exactly the stock with no overlapping critical sections and no
/// worker failed.
pub fn run(config: &Config) -> Result<bool, BoxError> {
    let server = RedisServer::start()?;
    let url = server.url();
    let mut con = redis::Client::open(url.as_str())?.get_connection()?;

    let mut mix: Vec<(String, usize)> = Vec::new();
    for i in 0..config.workers {
        let label = config.commands[i % config.commands.len()].label();
        match mix.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => mix.push((label, 1)),
        }
    }
    let mix: Vec<String> = mix.iter().map(|(l, n)| format!("{l} x{n}")).collect();
    println!(
        "redlatch demo: {} worker processes sell {} items",
        config.workers, config.stock
    );
    println!("  redis:   {url} (pid {})", server.pid());
    println!("  workers: {}", mix.join(", "));
    println!("  rust workers lock with: {LOCK_IMPL}");
    println!();

    let mut runs = Vec::new();
    for &mode in &config.modes {
        runs.push(run_mode(&url, &mut con, config, mode)?);
    }

    println!(
        "{:<10}  {:>7}  {:>6}  {:>11}  {:>8}  {:>8}  verdict",
        "mode", "workers", "sold", "final stock", "overlaps", "time"
    );
    for r in &runs {
        println!(
            "{:<10}  {:>7}  {:>6}  {:>11}  {:>8}  {:>6.2} s  {}",
            r.mode.as_str(),
            config.workers,
            r.sold,
            r.stock,
            r.overlaps,
            r.elapsed.as_secs_f64(),
            r.verdict(config.stock)
        );
    }
    println!();

    let mut ok = true;
    for r in &runs {
        let name = r.mode.as_str();
        for failure in &r.failures {
            println!("{name}: {failure}");
            ok = false;
        }
        if let Some(overlap) = &r.first_overlap {
            println!(
                "{name}: {} critical sections overlapped; first: {overlap}",
                r.overlaps
            );
        }
        match r.mode {
            Mode::Locked if r.verdict(config.stock) != "EXACT" || r.overlaps > 0 => ok = false,
            Mode::Unlocked if r.verdict(config.stock) == "EXACT" => {
                println!("{name}: the race did not show this time (more workers make it likelier)")
            }
            _ => {}
        }
    }
    if ok {
        println!("OK: every locked run sold exactly {} items.", config.stock);
    } else {
        println!("FAIL: see above.");
    }
    Ok(ok)
}

fn run_mode(url: &str, con: &mut redis::Connection, config: &Config, mode: Mode) -> Result<Run, BoxError> {
    redis::cmd("FLUSHALL").query::<()>(con)?;
    redis::cmd("SET")
        .arg(STOCK_KEY)
        .arg(config.stock)
        .query::<()>(con)?;

    let mut workers: Vec<(String, Child)> = Vec::new();
    for i in 0..config.workers {
        let id = (i + 1).to_string();
        let spawned = config.commands[i % config.commands.len()]
            .command(url, mode, &id)
            .and_then(|mut c| c.stdin(Stdio::null()).stdout(Stdio::piped()).spawn());
        match spawned {
            Ok(child) => workers.push((id, child)),
            Err(e) => {
                kill_all(&mut workers);
                return Err(format!("cannot start worker {id}: {e}").into());
            }
        }
    }
    // Outputs come back over a channel, so a stray grandchild holding a worker's stdout open
    // cannot hang the driver (see `collect_outputs`).
    let (sender, outputs) = mpsc::channel();
    for (index, (_, child)) in workers.iter_mut().enumerate() {
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let sender = sender.clone();
        thread::spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            let _ = sender.send((index, text));
        });
    }
    drop(sender);

    let deadline = Instant::now() + config.timeout;
    let mut failures = Vec::new();
    // Start barrier: every worker is connected before any sells.
    loop {
        let ready: i64 = redis::cmd("GET")
            .arg(READY_KEY)
            .query::<Option<i64>>(con)?
            .unwrap_or(0);
        if ready >= config.workers as i64 {
            break;
        }
        if workers.iter_mut().any(|(_, c)| !matches!(c.try_wait(), Ok(None))) {
            failures.push("a worker exited before it was ready".to_string());
            break;
        }
        if Instant::now() >= deadline {
            failures.push(format!("workers not ready within {:?}", config.timeout));
            break;
        }
        sleep(Duration::from_millis(5));
    }
    let started = Instant::now();
    let started_ns = monotonic_ns();
    let go = vec!["1"; config.workers];
    redis::cmd("RPUSH").arg(GO_KEY).arg(&go).query::<i64>(con)?;

    let mut statuses = vec![None; workers.len()];
    while statuses.iter().any(Option::is_none) {
        for ((_, child), status) in workers.iter_mut().zip(statuses.iter_mut()) {
            if status.is_none() {
                *status = child.try_wait()?;
            }
        }
        if Instant::now() >= deadline && statuses.iter().any(Option::is_none) {
            failures.push(format!(
                "run did not finish within {:?}; workers killed",
                config.timeout
            ));
            kill_all(&mut workers);
            break;
        }
        sleep(Duration::from_millis(2));
    }
    let elapsed = started.elapsed();

    let mut intervals = Vec::new();
    let mut reported_sold = 0i64;
    let mut outputs = collect_outputs(&outputs, workers.len());
    for (((id, _), output), status) in workers.iter().zip(outputs.iter_mut()).zip(&statuses) {
        let output = output.take().unwrap_or_else(|| {
            failures.push(format!("worker {id}: stdout still open after it exited"));
            String::new()
        });
        if let Some(status) = status.filter(|s| !s.success()) {
            failures.push(format!("worker {id} exited with {status}"));
        }
        let mut done = false;
        for line in output.lines() {
            if let Some(rest) = line.strip_prefix("interval ") {
                intervals.push(Interval::parse(rest)?);
            } else if let Some(rest) = line.strip_prefix("done ") {
                done = true;
                let count = rest.split_whitespace().nth(1).and_then(|n| n.parse::<i64>().ok());
                reported_sold += count.ok_or_else(|| format!("bad done line from worker {id}: {line:?}"))?;
            }
        }
        if !done {
            failures.push(format!("worker {id} did not report `done`"));
        }
    }

    let sold: i64 = redis::cmd("GET")
        .arg(SOLD_KEY)
        .query::<Option<i64>>(con)?
        .unwrap_or(0);
    let stock: i64 = redis::cmd("GET")
        .arg(STOCK_KEY)
        .query::<Option<i64>>(con)?
        .unwrap_or(0);
    if failures.is_empty() && reported_sold != sold {
        failures.push(format!(
            "workers reported {reported_sold} sales but {SOLD_KEY} is {sold}"
        ));
    }
    let labels: Vec<String> = (0..config.workers)
        .map(|i| config.commands[i % config.commands.len()].label())
        .collect();
    let overlap = match first_overlap(&intervals) {
        Some((held, newcomer)) => Some(overlap::describe(held, newcomer, started_ns, &labels)),
        None => check_no_overlap(&intervals).err(),
    };
    Ok(Run {
        mode,
        sold,
        stock,
        overlaps: find_overlaps(&intervals).len(),
        first_overlap: overlap,
        elapsed,
        failures,
    })
}

/// Waits for the workers' outputs; after the workers exited, a pipe still open (held by a
/// process the worker left behind) is given up on after 2 s.
fn collect_outputs(outputs: &mpsc::Receiver<(usize, String)>, count: usize) -> Vec<Option<String>> {
    let mut collected = vec![None; count];
    let deadline = Instant::now() + Duration::from_secs(2);
    for _ in 0..count {
        let remaining = deadline.saturating_duration_since(Instant::now());
        match outputs.recv_timeout(remaining) {
            Ok((index, text)) => collected[index] = Some(text),
            Err(_) => break,
        }
    }
    collected
}

fn kill_all(workers: &mut [(String, Child)]) {
    for (_, child) in workers.iter_mut() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::WorkerCmd;

    #[test]
    fn labels_name_the_worker_not_its_interpreter() {
        let label = |cmd: &str| WorkerCmd::Shell(cmd.to_string()).label();
        assert_eq!(label("./target/debug/redlatch-demo worker"), "rust");
        assert_eq!(label("node examples/demo/workers/wasm_worker.mjs"), "wasm_worker");
        assert_eq!(
            label("target/py-demo-venv/bin/python examples/demo/workers/py_worker.py"),
            "py_worker"
        );
        assert_eq!(label("./target/c/c_worker"), "c_worker");
        assert_eq!(WorkerCmd::Rust.label(), "rust");
    }
}
