//! The Rust worker, and the worker protocol every language's worker follows.
//!
//! A worker sells items one at a time with a deliberately non-atomic read-modify-write
//! (`GET`, sleep 1 ms, `SET stock-1`), which loses updates when workers interleave. Under a
//! correct lock it sells exactly the initial stock; without one it oversells.
//!
//! Protocol (see also examples/demo/README.md):
//! - Invocation: `<worker command...> <url> <mode> <worker-id>`, `mode` = `unlocked` | `locked`.
//! - Start barrier: after connecting (and creating the lock client), `INCR demo:ready`, then
//!   `BLPOP demo:go 0`. The driver pushes one item per worker once all are ready, so slow
//!   starters (interpreters) do not miss the race.
//! - Loop, one critical section per item, under the lock `demo:stock-lock` (lease 5 s, wait
//!   forever) in `locked` mode: `t0` = CLOCK_MONOTONIC ns; `GET demo:stock` (missing = 0);
//!   if <= 0, section ends and the loop stops; else sleep 1 ms, `SET demo:stock <stock-1>`,
//!   `INCR demo:sold`; `t1` = CLOCK_MONOTONIC ns; release.
//! - Stdout: `interval <t0> <t1> <token>` per critical section (token: `w<id>#<n>`), then
//!   `done <worker-id> <items sold by this worker>`. Other lines are ignored; use stderr for
//!   diagnostics. Exit status 0 on success.

use std::error::Error;
use std::io::Write;
use std::thread::sleep;
use std::time::Duration;

use crate::lock::Locker;
use redlatch_fleet::monotonic_ns;

/// Boxed error for the demo's plumbing.
pub type BoxError = Box<dyn Error>;

/// The stock counter workers decrement non-atomically.
pub const STOCK_KEY: &str = "demo:stock";
/// Items sold, incremented atomically once per sale.
pub const SOLD_KEY: &str = "demo:sold";
/// Workers `INCR` this once ready to start.
pub const READY_KEY: &str = "demo:ready";
/// The driver pushes one element per worker here to start them all at once.
pub const GO_KEY: &str = "demo:go";
/// The lock guarding the stock.
pub const LOCK_NAME: &str = "demo:stock-lock";
/// The lock's lease: far longer than a critical section (about 1 ms).
pub const LEASE: Duration = Duration::from_secs(5);
/// The pause between reading and writing the stock, to make the race visible.
const RACE_WINDOW: Duration = Duration::from_millis(1);

/// Whether workers take the lock around each sale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No lock: the race is expected to oversell.
    Unlocked,
    /// Each sale is a critical section under [`LOCK_NAME`].
    Locked,
}

impl Mode {
    /// The protocol name, as passed on the worker's command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Unlocked => "unlocked",
            Mode::Locked => "locked",
        }
    }

    /// Parses a protocol name.
    pub fn parse(name: &str) -> Result<Mode, String> {
        match name {
            "unlocked" => Ok(Mode::Unlocked),
            "locked" => Ok(Mode::Locked),
            other => Err(format!("unknown mode {other:?} (expected unlocked or locked)")),
        }
    }
}

/// One critical section's outcome.
struct Section {
    sold: bool,
    acquired_ns: u64,
    released_ns: u64,
}

/// `redlatch-demo worker <url> <mode> <worker-id>`: runs one worker to completion.
pub fn run(url: &str, mode: Mode, id: &str) -> Result<(), BoxError> {
    let mut con = redis::Client::open(url)?.get_connection()?;
    let locker = match mode {
        Mode::Locked => Some(Locker::connect(url)?),
        Mode::Unlocked => None,
    };

    redis::cmd("INCR").arg(READY_KEY).query::<i64>(&mut con)?;
    redis::cmd("BLPOP")
        .arg(GO_KEY)
        .arg(0)
        .query::<(String, String)>(&mut con)?;

    let mut out = std::io::stdout().lock();
    let mut sold = 0u64;
    for n in 1.. {
        let section = match &locker {
            Some(locker) => locker.with_lock(|| sell_one(&mut con))?,
            None => sell_one(&mut con)?,
        };
        writeln!(
            out,
            "interval {} {} w{id}#{n}",
            section.acquired_ns, section.released_ns
        )?;
        if !section.sold {
            break;
        }
        sold += 1;
    }
    writeln!(out, "done {id} {sold}")?;
    out.flush()?;
    Ok(())
}

/// The non-atomic read-modify-write the lock must protect.
fn sell_one(con: &mut redis::Connection) -> Result<Section, BoxError> {
    let acquired_ns = monotonic_ns();
    let stock: i64 = redis::cmd("GET")
        .arg(STOCK_KEY)
        .query::<Option<i64>>(con)?
        .unwrap_or(0);
    if stock <= 0 {
        return Ok(Section {
            sold: false,
            acquired_ns,
            released_ns: monotonic_ns(),
        });
    }
    sleep(RACE_WINDOW);
    redis::cmd("SET").arg(STOCK_KEY).arg(stock - 1).query::<()>(con)?;
    redis::cmd("INCR").arg(SOLD_KEY).query::<i64>(con)?;
    Ok(Section {
        sold: true,
        acquired_ns,
        released_ns: monotonic_ns(),
    })
}
