//! `redlatch-soak`: runs the fault soak (see `redlatch_faults::soak`) and prints its figures.
//!
//! ```text
//! redlatch-soak [--sections N] [--max-secs N] [--arenas fenced,fenced,paused,quorum]
//!               [--holders N] [--gap-ms LOW-HIGH] [--seed N]
//! ```
//! Defaults: 100000 sections, at most 1800 s, arenas `fenced,fenced,paused,quorum`, 3 holders
//! each, a fault every 300-900 ms per arena, a seed from the clock. Exits 1 when a figure the
//! suite claims to be zero is not, 2 on bad usage, 3 when the run itself failed.
#![deny(unsafe_code)]

use std::process::exit;
use std::time::Duration;

use redlatch_faults::holder_exe;
use redlatch_faults::soak::{run, ArenaKind, SoakConfig};

fn parse() -> Result<SoakConfig, String> {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(1);
    let mut config = SoakConfig {
        arenas: vec![
            ArenaKind::Fenced,
            ArenaKind::Fenced,
            ArenaKind::Paused,
            ArenaKind::Quorum,
        ],
        holders: 3,
        sections: 100_000,
        max_duration: Duration::from_secs(1800),
        gap_ms: (300, 900),
        seed,
        holder_exe: holder_exe(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v:?}"))
        };
        match flag.as_str() {
            "--sections" => config.sections = number(&value)?,
            "--max-secs" => config.max_duration = Duration::from_secs(number(&value)?),
            "--holders" => config.holders = number(&value)? as usize,
            "--seed" => config.seed = number(&value)?,
            "--gap-ms" => {
                let (low, high) = value.split_once('-').ok_or("--gap-ms takes LOW-HIGH")?;
                config.gap_ms = (number(low)?, number(high)?);
            }
            "--arenas" => {
                config.arenas = value
                    .split(',')
                    .map(|name| match name {
                        "fenced" => Ok(ArenaKind::Fenced),
                        "paused" => Ok(ArenaKind::Paused),
                        "quorum" => Ok(ArenaKind::Quorum),
                        other => Err(format!("unknown arena {other:?}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if config.arenas.is_empty() || config.holders == 0 || config.gap_ms.0 > config.gap_ms.1 {
        return Err("need at least one arena, one holder and LOW <= HIGH".into());
    }
    Ok(config)
}

fn main() {
    let config = parse().unwrap_or_else(|e| {
        eprintln!("redlatch-soak: {e}");
        exit(2)
    });
    eprintln!(
        "redlatch-soak: {} arenas x {} holders, until {} sections or {} s, seed {}",
        config.arenas.len(),
        config.holders,
        config.sections,
        config.max_duration.as_secs(),
        config.seed
    );
    let report = run(&config).unwrap_or_else(|e| {
        eprintln!("redlatch-soak: the run failed: {e}");
        exit(3)
    });
    print!("{report}");
    if !report.claimed_violations().is_empty() {
        exit(1);
    }
}
