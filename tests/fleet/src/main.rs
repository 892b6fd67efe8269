//! `redlatch-fleet [--quorum N] [--deployments] [--verbose] -- <command> [args...]`
//!
//! Starts a fleet (one single node plus N quorum nodes, N = 3 by default), runs `<command>`
//! with `REDLATCH_TEST_URL` and `REDLATCH_TEST_QUORUM_URLS` set, stops every server it
//! started, and exits with the command's exit code. With `--deployments` it also starts a TLS
//! server, a Cluster, a Sentinel group and an evicting server (`REDLATCH_TEST_TLS_URL`, ...,
//! see `Deployments`). `REDLATCH_FLEET_SERVER` / `REDLATCH_FLEET_ACL` change every node. This is how the Python, Node and C suites
//! get their Redis servers without each re-implementing port picking and cleanup.
//!
//! Exit codes: the command's own; 128 + signal if it died of a signal; 2 for a usage error;
//! 125 if the fleet could not be started; 127 if the command could not be run.
//! On SIGTERM/SIGHUP the command gets SIGTERM at once; on SIGINT (which a terminal already
//! delivers to the whole process group) it gets 2 s to exit first. After 5 more seconds it
//! is killed. The servers are stopped in every case.
#![deny(unsafe_code)]

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{exit, Child, Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use redlatch_fleet::{Deployments, Fleet};

const USAGE: &str = "usage: redlatch-fleet [--quorum N] [--deployments] [--verbose] -- <command> [args...]\n\
    Starts redis-server on free 127.0.0.1 ports (one single node + N quorum nodes, default 3),\n\
    runs <command> with REDLATCH_TEST_URL and REDLATCH_TEST_QUORUM_URLS set, stops the servers\n\
    and exits with the command's exit code.";

/// The last termination signal received (0 = none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

struct Args {
    quorum: usize,
    deployments: bool,
    verbose: bool,
    command: Vec<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        quorum: 3,
        deployments: false,
        verbose: false,
        command: Vec::new(),
    };
    while let Some(arg) = args.next() {
        let quorum_value = match arg.as_str() {
            "--" => break,
            "-h" | "--help" => return Err(String::new()),
            "-v" | "--verbose" => {
                parsed.verbose = true;
                continue;
            }
            "--deployments" => {
                parsed.deployments = true;
                continue;
            }
            "-q" | "--quorum" => args.next().ok_or("--quorum needs a value")?,
            other if other.starts_with("--quorum=") => other["--quorum=".len()..].to_string(),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            _ => {
                parsed.command.push(arg);
                break;
            }
        };
        parsed.quorum = quorum_value
            .parse()
            .map_err(|_| format!("--quorum: not a number: {quorum_value:?}"))?;
    }
    parsed.command.extend(args);
    if parsed.command.is_empty() {
        return Err("no command given".to_string());
    }
    Ok(parsed)
}

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

#[allow(unsafe_code)]
fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: the handler only stores into an atomic, which is async-signal-safe. Handlers
        // are reset to the default in the processes we spawn (execve does that).
        unsafe {
            libc::signal(sig, handler);
        }
    }
}

/// Sends SIGTERM to our child, which is not yet reaped (so its pid is still its own).
#[allow(unsafe_code)]
fn terminate(child: &Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) takes plain integers.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// Waits for the command, forwarding termination requests to it.
fn supervise(child: &mut Child) -> io::Result<ExitStatus> {
    let mut signalled_at: Option<Instant> = None;
    let mut terminated_at: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            let now = Instant::now();
            let since = *signalled_at.get_or_insert(now);
            let grace = if sig == libc::SIGINT {
                Duration::from_secs(2)
            } else {
                Duration::ZERO
            };
            match terminated_at {
                None if now >= since + grace => {
                    terminate(child);
                    terminated_at = Some(now);
                }
                Some(at) if now >= at + Duration::from_secs(5) => {
                    child.kill()?;
                    return child.wait();
                }
                _ => {}
            }
        }
        sleep(Duration::from_millis(20));
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

fn main() {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            exit(0);
        }
        Err(message) => {
            eprintln!("redlatch-fleet: {message}\n{USAGE}");
            exit(2);
        }
    };
    install_signal_handlers();

    let fleet = match Fleet::start(args.quorum) {
        Ok(fleet) => fleet,
        Err(e) => {
            eprintln!("redlatch-fleet: cannot start the fleet: {e}");
            exit(125);
        }
    };
    let deployments = if args.deployments {
        match Deployments::start() {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("redlatch-fleet: cannot start the deployments: {e}");
                drop(fleet);
                exit(125);
            }
        }
    } else {
        None
    };
    let mut env = fleet.env_vars();
    env.extend(deployments.iter().flat_map(Deployments::env_vars));
    if args.verbose {
        for (name, value) in &env {
            eprintln!("redlatch-fleet: {name}={value}");
        }
    }
    let early_signal = SIGNAL.load(Ordering::SeqCst);
    if early_signal != 0 {
        drop(deployments);
        drop(fleet);
        exit(128 + early_signal);
    }

    let spawned = Command::new(&args.command[0])
        .args(&args.command[1..])
        .envs(env)
        .spawn();
    let code = match spawned {
        Ok(mut child) => match supervise(&mut child) {
            Ok(status) => exit_code(status),
            Err(e) => {
                eprintln!("redlatch-fleet: waiting for {:?} failed: {e}", args.command[0]);
                let _ = child.kill();
                let _ = child.wait();
                1
            }
        },
        Err(e) => {
            eprintln!("redlatch-fleet: cannot run {:?}: {e}", args.command[0]);
            127
        }
    };
    drop(deployments);
    drop(fleet); // stops every server by pid; exit() would skip destructors
    exit(code);
}
