//! `redlatch-demo`: the stock-oversell scenario.
//!
//! Worker processes sell items from a Redis counter with a non-atomic read-modify-write.
//! Unlocked, they oversell; under a redlatch lock, they sell exactly the stock. The driver
//! starts its own Redis (via `redlatch-fleet`), runs both modes and prints a report; it exits
//! non-zero if a locked run is not exact.
//!
//! ```text
//! redlatch-demo [--workers N] [--stock N] [--worker-cmd CMD]... [--modes unlocked,locked] [--timeout SECS]
//! redlatch-demo worker <url> <unlocked|locked> <worker-id>
//! ```
#![deny(unsafe_code)]

mod driver;
mod lock;
mod overlap;
mod worker;

use std::process::exit;
use std::time::Duration;

use driver::{Config, WorkerCmd};
use worker::Mode;

const USAGE: &str = "usage:
  redlatch-demo [--workers N] [--stock N] [--worker-cmd CMD]... [--modes unlocked,locked] [--timeout SECS]
  redlatch-demo worker <url> <unlocked|locked> <worker-id>

--worker-cmd may be repeated; workers are assigned to the commands round-robin. Each command is
run as `sh -c 'exec CMD \"$@\"' - <url> <mode> <worker-id>` and must follow the worker protocol
(examples/demo/README.md). Default: this program's own Rust worker.";

fn parse_config(args: &[String]) -> Result<Config, String> {
    let mut config = Config {
        workers: 8,
        stock: 100,
        commands: Vec::new(),
        modes: vec![Mode::Unlocked, Mode::Locked],
        timeout: Duration::from_secs(120),
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().cloned().ok_or(format!("{flag} needs a value"));
        let number = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v:?}"))
        };
        match flag.as_str() {
            "--workers" => config.workers = number(value()?)?.max(1) as usize,
            "--stock" => config.stock = number(value()?)? as i64,
            "--timeout" => config.timeout = Duration::from_secs(number(value()?)?),
            "--worker-cmd" => config.commands.push(WorkerCmd::Shell(value()?)),
            "--modes" => {
                config.modes = value()?.split(',').map(Mode::parse).collect::<Result<_, _>>()?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if config.commands.is_empty() {
        config.commands.push(WorkerCmd::Rust);
    }
    Ok(config)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        let [_, url, mode, id] = args.as_slice() else {
            eprintln!("{USAGE}");
            exit(2);
        };
        let result = Mode::parse(mode)
            .map_err(Into::into)
            .and_then(|m| worker::run(url, m, id));
        if let Err(e) = result {
            eprintln!("redlatch-demo worker {id}: {e}");
            exit(1);
        }
        return;
    }

    let config = match parse_config(&args) {
        Ok(config) => config,
        Err(message) => {
            if message.is_empty() {
                println!("{USAGE}");
                exit(0);
            }
            eprintln!("redlatch-demo: {message}\n{USAGE}");
            exit(2);
        }
    };
    match driver::run(&config) {
        Ok(true) => {}
        Ok(false) => exit(1),
        Err(e) => {
            eprintln!("redlatch-demo: {e}");
            exit(1);
        }
    }
}
