//! redlatch benchmark: prints figures, compared with the raw Redis round trip of the same run.
//!
//! ```text
//! cargo run --release -p redlatch --example bench            # full run, about 1.5 minutes
//! cargo run --release -p redlatch --example bench -- --quick # short run, under 30 s
//! target/release/examples/bench --lock-turns URL               # the `lock` row in another
//!                                                              # benchmark's turns (`turns`)
//! ```
//!
//! It starts its own `redis-server` processes (one single node and five independent quorum
//! nodes, on free 127.0.0.1 ports) and measures:
//! 1. the raw floor: a redis-rs multiplexed connection doing `SET k v NX PX 10000` then an
//!    `EVALSHA` compare-and-delete (what one acquire + release needs), a `PING`, and the same
//!    pair fanned out to five nodes at once (the floor of a quorum-5 lock);
//! 2. uncontended acquire + release on one task: lease lock, reentrant lock in watchdog mode,
//!    quorum-3 and quorum-5 lease locks, plus two diagnostic rows that send the lease lock's two
//!    scripts straight through `RedisTransport` (no driver), the release without and with its
//!    idempotency latch, to split the overhead into "script and transport", "latch" (work in
//!    Redis: a key written per release) and "driver". All rows run interleaved in short slices (round robin), so
//!    noise from other processes on the machine hits them alike. The loops run in a spawned
//!    task (a worker thread, as a server's request handler would); section 2b repeats the key
//!    rows on the runtime's `block_on` thread (as `#[tokio::main]`'s own body does);
//! 3. hand-off latency: release by a holder until a blocked waiter's `acquire()` returns;
//! 4. watchdog scale: 10 000 locks held in watchdog mode; CPU of this process over the holding
//!    window (% of one core), RSS, and a `redis-cli` check that every key is still alive;
//! 5. fair and read locks: uncontended acquire + release of `fair_lock` and `rw_lock().read()`
//!    interleaved with `rlock`, and the fair lock's contended hand-off with FIFO order checked;
//! 6. the semaphore against `rlock` and a two-name multi-lock (one slot) against one lock.
//!
//! Layout: `stats` (plan, samples, percentiles, the interleaved driver, table rows, targets),
//! `procfs` (CPU time, RSS, threads, `INFO commandstats`), one module per section
//! (`uncontended` for 1, 2 and 2b, `handoff` for 3, `watchdog` for 4, `kinds` for 5, `family` for 6),
//! `turns` (the `lock` row served to the Python and C benchmarks), and here the argument
//! parsing, the run order and the summary.

mod family;
mod handoff;
mod kinds;
mod procfs;
mod stats;
mod turns;
mod uncontended;
mod watchdog;

use redlatch_fleet::RedisServer;
use stats::{Plan, Targets};
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, BoxError>;

/// The lease of the lease-mode locks in sections 2 and 3.
const LEASE: Duration = Duration::from_secs(10);

fn main() -> Res<()> {
    let mut quick = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--lock-turns" => return turns::serve(&args.next().ok_or("--lock-turns takes a Redis URL")?),
            // `cargo bench`-style harness flags are harmless.
            "--bench" => {}
            other => {
                return Err(format!("unknown argument {other:?} (only --quick, --lock-turns URL)").into())
            }
        }
    }
    let plan = Plan::new(quick);
    let started = Instant::now();
    let single = RedisServer::start()?;
    let quorum_servers = (0..5)
        .map(|_| RedisServer::start())
        .collect::<std::io::Result<Vec<_>>>()?;
    let quorum: Vec<String> = quorum_servers.iter().map(RedisServer::url).collect();
    let info = single.cli(&["INFO", "server"]).unwrap_or_default();
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    println!(
        "redlatch bench ({}): redis-server {version} x6 on 127.0.0.1, {cpus} CPUs, tokio multi-thread ({cpus} workers), {} build",
        if plan.quick { "--quick" } else { "full" },
        if cfg!(debug_assertions) { "DEBUG" } else { "release" }
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average at start: {}",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );

    runtime.block_on(async {
        let mut targets = Targets::default();
        let un = uncontended::run(plan, &single.url(), &quorum, &mut targets).await?;

        handoff::run(plan, &single, &quorum, &un, &mut targets).await?;
        watchdog::run(plan, &single, &mut targets).await?;
        kinds::run(plan, &single, &mut targets).await?;
        family::run(plan, &single.url(), &mut targets).await?;

        println!(
            "\n== Summary (PING p50 {:.1} us, raw pair p50 {:.1} us, lock pair p50 {:.1} us)",
            un.ping.pct(50.0),
            un.raw.pct(50.0),
            un.lock.pct(50.0)
        );
        for line in &targets.0 {
            println!("{line}");
        }
        Ok::<(), BoxError>(())
    })?;
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    drop(quorum_servers);
    drop(single);
    Ok(())
}
