//! `redlatch-readme run`: builds each program block with its language's toolchain, then runs
//! them one by one against a fresh Redis fleet.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use redlatch_fleet::Fleet;

use crate::blocks::{block_id, Kind, Lang};
use crate::Found;

/// How long one block may run: the examples take well under a second each.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one build step (a compile, `cmake --build`, `tsc`) may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(600);
/// What a README program connects to when `REDIS_URL` is unset (never the case here).
const URL_VAR: &str = "REDIS_URL";
const QUORUM_VAR: &str = "REDIS_QUORUM_URLS";

/// Where each language's toolchain and packages come from.
pub struct Options {
    python: Option<PathBuf>,
    node_dir: Option<PathBuf>,
    c_prefix: Option<PathBuf>,
    rust_crate: Option<PathBuf>,
    langs: Option<Vec<String>>,
    work: PathBuf,
}

impl Options {
    /// Parses `--python PY --node-dir DIR --c-prefix DIR --rust-crate DIR --lang L,.. --work DIR`.
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options {
            python: None,
            node_dir: None,
            c_prefix: None,
            rust_crate: None,
            langs: None,
            work: crate::root().join("target/readme"),
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            // Absolute (commands run in other directories), but symlinks kept: a venv's
            // python is a symlink that must stay in the venv.
            let path = || std::path::absolute(value).map_err(|e| format!("{flag} {value}: {e}"));
            match flag.as_str() {
                "--python" => options.python = Some(path()?),
                "--node-dir" => options.node_dir = Some(path()?),
                "--c-prefix" => options.c_prefix = Some(path()?),
                "--rust-crate" => options.rust_crate = Some(path()?),
                "--lang" => options.langs = Some(value.split(',').map(str::to_string).collect()),
                "--work" => options.work = path()?,
                other => return Err(format!("unknown option {other}")),
            }
        }
        Ok(options)
    }

    fn wants(&self, lang: Lang) -> bool {
        self.langs
            .as_ref()
            .is_none_or(|l| l.iter().any(|t| t == lang.tag()))
    }

    /// The option a language needs, or why it is missing.
    fn need<'a>(&self, value: &'a Option<PathBuf>, flag: &str, lang: Lang) -> Result<&'a Path, String> {
        value.as_deref().ok_or(format!(
            "{flag} is needed for the {} blocks (or leave them out with --lang)",
            lang.tag()
        ))
    }
}

/// A block ready to run, or why it could not be built.
struct Job<'a> {
    found: &'a Found,
    lang: Lang,
    command: Result<Command, String>,
}

/// Builds and runs every selected program block; the exit code is non-zero if any failed.
pub fn run_all(found: &[Found], options: &Options) -> ExitCode {
    let mut by_lang: Vec<(Lang, Vec<&Found>)> = Vec::new();
    for f in found {
        if let Kind::Program(lang) = f.kind {
            if !options.wants(lang) {
                continue;
            }
            match by_lang.iter_mut().find(|(l, _)| *l == lang) {
                Some((_, list)) => list.push(f),
                None => by_lang.push((lang, vec![f])),
            }
        }
    }
    let mut jobs = Vec::new();
    for (lang, blocks) in &by_lang {
        let dir = options.work.join(lang.tag());
        let commands = fs::create_dir_all(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|()| prepare(*lang, blocks, &dir, options));
        match commands {
            Ok(commands) => jobs.extend(blocks.iter().zip(commands).map(|(f, command)| Job {
                found: f,
                lang: *lang,
                command,
            })),
            Err(e) => jobs.extend(blocks.iter().map(|f| Job {
                found: f,
                lang: *lang,
                command: Err(e.clone()),
            })),
        }
    }
    if jobs.iter().any(|j| j.lang == Lang::Js) {
        warn_unless_node_20();
    }

    let fleet = match Fleet::start(3) {
        Ok(fleet) => fleet,
        Err(e) => {
            eprintln!("redlatch-readme: cannot start Redis: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = fleet.single_url().unwrap_or_default();
    let quorum = fleet.quorum_urls().join(",");
    let mut failed = Vec::new();
    for job in &mut jobs {
        let place = format!("{}:{}", job.found.readme, job.found.block.line);
        let started = Instant::now();
        let outcome = flush(&fleet).and_then(|()| match &mut job.command {
            Ok(command) => {
                command.env(URL_VAR, &url).env(QUORUM_VAR, &quorum);
                let log = options.work.join(job.lang.tag()).join(format!(
                    "{}.log",
                    block_id(job.found.readme, job.found.block.line)
                ));
                let before = connections(&fleet)?;
                run_logged(command, &log, RUN_TIMEOUT)?;
                // Each node counts our own INFO connection once more; anything beyond that
                // is the block's. A block that ran without touching Redis is not an example.
                let nodes = fleet.quorum.len() as u64 + 1;
                if connections(&fleet)? - before <= nodes {
                    return Err(format!(
                        "it ran but never connected to Redis ({URL_VAR} or {QUORUM_VAR})"
                    ));
                }
                Ok(())
            }
            Err(e) => Err(e.clone()),
        });
        let secs = started.elapsed().as_secs_f64();
        match outcome {
            Ok(()) => println!("ok    {place} ({}, {secs:.1} s)", job.lang.tag()),
            Err(e) => {
                println!("FAIL  {place} ({}):\n{}", job.lang.tag(), indent(&e));
                failed.push(place);
            }
        }
    }
    if failed.is_empty() {
        println!("readme: all {} program blocks ran", jobs.len());
        ExitCode::SUCCESS
    } else {
        println!(
            "readme: {} of {} program blocks failed: {}",
            failed.len(),
            jobs.len(),
            failed.join(", ")
        );
        ExitCode::FAILURE
    }
}

/// The JavaScript blocks must parse on Node 20 (the oldest Node the package supports, and
/// the one that cannot parse `await using`), so a newer Node proves less: say so.
fn warn_unless_node_20() {
    let version = Command::new("node")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    if !version.starts_with("v20.") {
        println!(
            "note: the js blocks run on Node {version:?}, not Node 20: syntax Node 20 cannot \
             parse would not be caught"
        );
    }
}

/// Every block starts from empty Redis servers.
fn flush(fleet: &Fleet) -> Result<(), String> {
    for server in fleet.single.iter().chain(&fleet.quorum) {
        server.cli(&["FLUSHALL"]).map_err(|e| format!("FLUSHALL: {e}"))?;
    }
    Ok(())
}

/// Connections the servers have accepted so far (`INFO stats`), summed over the fleet.
fn connections(fleet: &Fleet) -> Result<u64, String> {
    let mut total = 0;
    for server in fleet.single.iter().chain(&fleet.quorum) {
        let info = server.cli(&["INFO", "stats"]).map_err(|e| format!("INFO: {e}"))?;
        total += info
            .lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .ok_or("INFO stats has no total_connections_received")?;
    }
    Ok(total)
}

/// Writes one language's blocks into `dir` and builds them; one command (or build error)
/// per block, in order. An error for the whole language when its toolchain is missing.
fn prepare(
    lang: Lang,
    blocks: &[&Found],
    dir: &Path,
    options: &Options,
) -> Result<Vec<Result<Command, String>>, String> {
    let ids: Vec<String> = blocks.iter().map(|f| block_id(f.readme, f.block.line)).collect();
    let write = |dir: &Path, id: &str, f: &Found| {
        let path = dir.join(format!("{id}.{}", lang.extension()));
        fs::write(&path, &f.block.code).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok::<PathBuf, String>(path)
    };
    match lang {
        Lang::Rust => match options.rust_crate.as_deref() {
            Some(krate) => rust::prepare(krate, &ids, blocks, dir),
            None => {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                Ok(blocks
                    .iter()
                    .map(|f| {
                        let mut c = Command::new(&exe);
                        c.arg("rust").arg(f.readme).arg(f.block.line.to_string());
                        Ok(c)
                    })
                    .collect())
            }
        },
        Lang::Python => {
            let python = options.need(&options.python, "--python", lang)?;
            let mut commands = Vec::new();
            for (id, f) in ids.iter().zip(blocks) {
                commands.push(write(dir, id, f).map(|path| {
                    let mut c = Command::new(python);
                    c.arg(path).current_dir(dir);
                    c
                }));
            }
            Ok(commands)
        }
        Lang::Js => {
            // In the package's folder, so that `import 'redlatch'` resolves as in an app.
            let node_dir = options.need(&options.node_dir, "--node-dir", lang)?;
            let dir = node_dir.join("readme-js");
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let mut commands = Vec::new();
            for (id, f) in ids.iter().zip(blocks) {
                commands.push(write(&dir, id, f).map(|path| node(node_dir, path)));
            }
            Ok(commands)
        }
        Lang::Ts => {
            let node_dir = options.need(&options.node_dir, "--node-dir", lang)?;
            ts::prepare(node_dir, &ids, blocks, dir)
        }
        Lang::C => {
            let prefix = options.need(&options.c_prefix, "--c-prefix", lang)?;
            c::prepare_c(prefix, &ids, blocks, dir)
        }
        Lang::Cpp => {
            let prefix = options.need(&options.c_prefix, "--c-prefix", lang)?;
            c::prepare_cpp(prefix, &ids, blocks, dir)
        }
    }
}

/// `node <script>` from the folder where the packages are installed.
fn node(node_dir: &Path, script: PathBuf) -> Command {
    let mut c = Command::new("node");
    c.arg(script).current_dir(node_dir);
    c
}

/// Runs `command` with stdout and stderr into `log`; an error with the log's tail when it
/// fails, cannot start, or outlives `timeout` (then it is killed).
fn run_logged(command: &mut Command, log: &Path, timeout: Duration) -> Result<(), String> {
    let file = File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        sleep(Duration::from_millis(20));
    };
    let tail = || {
        let text = fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    };
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(format!("{what} exited with {s}\n{}", tail())),
        None => Err(format!(
            "{what} still running after {timeout:?}; killed\n{}",
            tail()
        )),
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("      {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

mod c;
mod rust;
mod ts;
