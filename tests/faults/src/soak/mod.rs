//! The soak: several arenas (see [`ArenaKind`]) run side by side, each with holder processes
//! taking its lock in a loop and one thread injecting a random fault from the arena's list
//! (see [`FaultKind`]) every few hundred milliseconds, until enough sections ran or time is
//! up. Then every arena is checked and the figures printed. `make test` runs it briefly
//! (tests/storm.rs), `make soak` for 10^5 sections or more (`redlatch-soak`).

mod arena;
mod faults;

pub use arena::{Arena, ArenaKind, ArenaReport};
pub use faults::{inject, FaultKind};

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// The arenas, by kind (several of a kind run independently).
    pub arenas: Vec<ArenaKind>,
    /// Holder processes per arena.
    pub holders: usize,
    /// Stop once this many fenced sections ran (in the fenced and paused arenas; quorum
    /// sections come on top; all sections when there is no fenced arena). Checked about
    /// once per fault gap.
    pub sections: u64,
    /// Stop after this long at the latest.
    pub max_duration: Duration,
    /// Pause between two faults of one arena: uniformly random in this range (ms).
    pub gap_ms: (u64, u64),
    /// Seed of the fault choices (the run is not replayable exactly: timing differs).
    pub seed: u64,
    /// The `redlatch-fault-holder` executable.
    pub holder_exe: PathBuf,
}

/// The figures of one run.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    /// One report per arena.
    pub arenas: Vec<ArenaReport>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<FaultKind, u64>,
    /// How long it ran.
    pub elapsed: Duration,
    /// The seed used.
    pub seed: u64,
}

impl SoakReport {
    /// Sections run in all arenas.
    pub fn sections(&self) -> u64 {
        self.arenas.iter().map(|a| a.sections).sum()
    }

    /// Sections run in the fenced and paused arenas (with fencing tokens).
    pub fn fenced_sections(&self) -> u64 {
        self.arenas.iter().filter(|a| a.fenced).map(|a| a.sections).sum()
    }

    /// Violations where the suite claims there are none: overlaps and token order outside the
    /// paused arenas, lost updates everywhere, rejected operations in fenced arenas.
    pub fn claimed_violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.arenas {
            let paused = a.name.starts_with(ArenaKind::Paused.name());
            let mut claim = |what: &str, n: u64| {
                if n > 0 {
                    out.push(format!("{}: {n} {what} {:?}", a.name, a.examples));
                }
            };
            claim("lost updates", a.lost_updates);
            claim("fencing tokens out of order", a.token_order);
            if !paused {
                claim("overlapping sections", a.overlaps);
                claim("rejected operations", a.rejected);
            }
        }
        out
    }
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "soak: {} sections ({} fenced) in {:.0} s (seed {})",
            self.sections(),
            self.fenced_sections(),
            self.elapsed.as_secs_f64(),
            self.seed
        )?;
        writeln!(
            f,
            "{:<10} {:>9} {:>9} {:>12} {:>13} {:>9} {:>15} {:>15}",
            "arena",
            "sections",
            "overlaps",
            "token order",
            "lost updates",
            "rejected",
            "acquire errors",
            "release errors"
        )?;
        for a in &self.arenas {
            writeln!(
                f,
                "{:<10} {:>9} {:>9} {:>12} {:>13} {:>9} {:>15} {:>15}",
                a.name,
                a.sections,
                a.overlaps,
                a.token_order,
                a.lost_updates,
                a.rejected,
                a.acquire_errors,
                a.release_errors
            )?;
        }
        let mut errors: BTreeMap<&str, u64> = BTreeMap::new();
        for (kind, n) in self.arenas.iter().flat_map(|a| &a.errors_by_kind) {
            *errors.entry(kind).or_default() += n;
        }
        let errors: Vec<String> = errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(f, "errors reported to holders: {}", errors.join(", "))?;
        writeln!(
            f,
            "faults injected ({} in all):",
            self.faults.values().sum::<u64>()
        )?;
        for (kind, n) in &self.faults {
            writeln!(f, "  {:<32} {n:>6}", kind.name())?;
        }
        let violations = self.claimed_violations();
        writeln!(f, "violations where none is claimed: {}", violations.len())?;
        for v in violations {
            writeln!(f, "  {v}")?;
        }
        Ok(())
    }
}

/// Runs the soak (see the module docs).
///
/// # Errors
/// An arena that failed to start or a fault that could not be injected.
pub fn run(config: &SoakConfig) -> io::Result<SoakReport> {
    let started = Instant::now();
    let stop = AtomicBool::new(false);
    let progress: Vec<AtomicU64> = config.arenas.iter().map(|_| AtomicU64::new(0)).collect();
    let faults: Mutex<BTreeMap<FaultKind, u64>> = Mutex::default();
    let mut arenas = Vec::new();
    for (i, kind) in config.arenas.iter().enumerate() {
        arenas.push(Arena::start(
            *kind,
            i + 1,
            config.holders,
            config.holder_exe.clone(),
        )?);
    }
    let reports = std::thread::scope(|scope| {
        let workers: Vec<_> = arenas
            .into_iter()
            .enumerate()
            .map(|(i, arena)| {
                let (stop, done, faults) = (&stop, &progress[i], &faults);
                let seed = config.seed.wrapping_add(i as u64);
                scope.spawn(move || run_arena(arena, config, seed, stop, done, faults))
            })
            .collect();
        let counted: Vec<bool> = {
            let any_fenced = config.arenas.iter().any(|k| k.is_fenced());
            config
                .arenas
                .iter()
                .map(|k| k.is_fenced() || !any_fenced)
                .collect()
        };
        while !stop.load(Ordering::SeqCst) {
            let total: u64 = progress
                .iter()
                .zip(&counted)
                .filter(|(_, counted)| **counted)
                .map(|(p, _)| p.load(Ordering::SeqCst))
                .sum();
            if total >= config.sections || started.elapsed() >= config.max_duration {
                stop.store(true, Ordering::SeqCst);
            }
            if workers.iter().any(|w| w.is_finished()) {
                stop.store(true, Ordering::SeqCst); // an arena failed: stop the others
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(io::Error::other("an arena thread panicked")))
            })
            .collect::<io::Result<Vec<_>>>()
    })?;
    Ok(SoakReport {
        arenas: reports,
        faults: faults.into_inner().unwrap_or_else(|p| p.into_inner()),
        elapsed: started.elapsed(),
        seed: config.seed,
    })
}

fn run_arena(
    mut arena: Arena,
    config: &SoakConfig,
    seed: u64,
    stop: &AtomicBool,
    done: &AtomicU64,
    faults: &Mutex<BTreeMap<FaultKind, u64>>,
) -> io::Result<ArenaReport> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let kinds = FaultKind::for_arena(arena.kind);
    while !stop.load(Ordering::SeqCst) {
        let gap = Duration::from_millis(rng.u64(config.gap_ms.0..=config.gap_ms.1));
        let deadline = Instant::now() + gap;
        while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        done.store(arena.sections_done(), Ordering::SeqCst);
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let kind = kinds[rng.usize(..kinds.len())];
        if inject(&mut arena, kind, &mut rng)? {
            *faults
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .entry(kind)
                .or_default() += 1;
        }
    }
    arena.finish()
}
