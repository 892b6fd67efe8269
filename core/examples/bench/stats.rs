//! Measurement plumbing shared by every section: the run plan (how long each part runs), the
//! latency samples and their percentiles, the interleaved round-robin driver, the table rows
//! and the PASS / MISS target lines. Kept apart so that every section reports its figures
//! the same way and the uncontended rows are measured under the same conditions.

use crate::uncontended::Op;
use crate::Res;
use std::time::Duration;

/// How long each part runs.
#[derive(Clone, Copy)]
pub struct Plan {
    pub quick: bool,
    pub warmup: Duration,
    pub slice: Duration,
    pub rounds: usize,
    pub handoffs: usize,
    pub quorum_handoffs: usize,
    pub short_wd_hold: Duration,
    pub default_wd_hold: Option<Duration>,
}

impl Plan {
    pub fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                quick,
                warmup: Duration::from_millis(150),
                slice: Duration::from_millis(100),
                rounds: 4,
                handoffs: 200,
                quorum_handoffs: 50,
                short_wd_hold: Duration::from_secs(4),
                default_wd_hold: None,
            }
        } else {
            Plan {
                quick,
                warmup: Duration::from_millis(500),
                slice: Duration::from_millis(250),
                rounds: 10,
                handoffs: 1000,
                quorum_handoffs: 300,
                short_wd_hold: Duration::from_secs(10),
                default_wd_hold: Some(Duration::from_secs(12)),
            }
        }
    }
}

/// Latency samples (ns), the time they took in all and this process's CPU time meanwhile.
#[derive(Default)]
pub struct Stats {
    pub samples: Vec<u64>,
    pub busy: Duration,
    pub cpu: f64,
}

impl Stats {
    pub fn finish(&mut self) {
        self.samples.sort_unstable();
    }

    pub fn ops(&self) -> f64 {
        self.samples.len() as f64 / self.busy.as_secs_f64()
    }

    /// CPU time of this process (all threads) per operation, in microseconds.
    pub fn cpu_us(&self) -> f64 {
        self.cpu * 1e6 / self.samples.len() as f64
    }

    /// Percentile `p` (0..=100) in microseconds, nearest rank.
    pub fn pct(&self, p: f64) -> f64 {
        if self.samples.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.samples.len() as f64).ceil() as usize;
        self.samples[rank.clamp(1, self.samples.len()) - 1] as f64 / 1000.0
    }
}

/// Warms every op up, then runs them round robin, `plan.rounds` slices each.
pub async fn measure(ops: &mut [(&'static str, Op)], plan: Plan) -> Res<Vec<Stats>> {
    let mut stats: Vec<Stats> = ops.iter().map(|_| Stats::default()).collect();
    let mut seq = 0u64;
    for (_, op) in ops.iter_mut() {
        op.run_for(plan.warmup, &mut seq, None).await?;
    }
    for _ in 0..plan.rounds {
        for ((_, op), s) in ops.iter_mut().zip(stats.iter_mut()) {
            op.run_for(plan.slice, &mut seq, Some(s)).await?;
        }
    }
    stats.iter_mut().for_each(Stats::finish);
    Ok(stats)
}

pub fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "MISS"
    }
}

/// Result lines of the targets, printed again at the end.
#[derive(Default)]
pub struct Targets(pub Vec<String>);

impl Targets {
    pub fn add(&mut self, pass: bool, what: String) {
        self.0.push(format!("  [{}] {what}", verdict(pass)));
    }
}

/// Appends `s` as one JSON line `{"row": key, "ops", "p50_us", "p99_us", "n"}` to the file
/// named by `REDLATCH_BENCH_ROWS`, if set: `make bench` collects every language's rows there
/// and `bench/summary.py` compares them.
pub fn export_row(key: &str, s: &Stats) -> Res<()> {
    let Some(path) = std::env::var_os("REDLATCH_BENCH_ROWS").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(
        file,
        "{{\"row\": \"{key}\", \"ops\": {:.1}, \"p50_us\": {:.2}, \"p99_us\": {:.2}, \"n\": {}}}",
        s.ops(),
        s.pct(50.0),
        s.pct(99.0),
        s.samples.len()
    )?;
    Ok(())
}

/// Appends a ratio target `{"target", "row", "ref", "metric": "p50_us", "max"}` to the file
/// named by `REDLATCH_BENCH_ROWS`, if set (see `bench/summary.py`).
pub fn export_target(what: &str, row: &str, reference: &str, max: f64) -> Res<()> {
    let Some(path) = std::env::var_os("REDLATCH_BENCH_ROWS").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(
        file,
        "{{\"target\": \"{what}\", \"row\": \"{row}\", \"ref\": \"{reference}\", \"metric\": \"p50_us\", \"max\": {max}}}"
    )?;
    Ok(())
}

pub fn print_header(first: &str, extra: &str) {
    println!(
        "  {first:<34} {:>8} {:>8} {:>8} {:>8} {:>7}{extra}",
        "ops/s", "p50 us", "p99 us", "samples", "cpu us"
    );
}

pub fn print_row(name: &str, s: &Stats) {
    print!(
        "  {name:<34} {:>8.0} {:>8.1} {:>8.1} {:>8} {:>7.1}",
        s.ops(),
        s.pct(50.0),
        s.pct(99.0),
        s.samples.len(),
        s.cpu_us()
    );
}
