//! The soak in its bounded form (about 20 s): every arena, every fault kind at random, and
//! the claims checked (docs/reliability.md). `make soak` runs the same for 10^5 sections.
//! Set `REDLATCH_SOAK_SEED` to repeat a run's fault choices.

use std::path::PathBuf;
use std::time::Duration;

use redlatch_faults::soak::{run, ArenaKind, FaultKind, SoakConfig};

#[test]
fn a_storm_of_faults_breaks_no_claim() {
    let seed = std::env::var("REDLATCH_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(1)
        });
    let config = SoakConfig {
        arenas: vec![ArenaKind::Fenced, ArenaKind::Paused, ArenaKind::Quorum],
        holders: 3,
        sections: u64::MAX,
        max_duration: Duration::from_secs(20),
        gap_ms: (150, 450),
        seed,
        holder_exe: PathBuf::from(env!("CARGO_BIN_EXE_redlatch-fault-holder")),
    };
    let report = run(&config).expect("the soak ran");
    println!("{report}");
    assert!(report.claimed_violations().is_empty(), "seed {seed}:\n{report}");
    assert!(
        report.sections() >= 100,
        "too few sections ran to mean anything:\n{report}"
    );
    let injected: u64 = report.faults.values().sum();
    assert!(injected >= 20, "too few faults:\n{report}");
    // Holders frozen past their lease in their section: the resource had stale operations
    // to refuse (and refused them: no lost update, checked above).
    let long_pauses = report
        .faults
        .get(&FaultKind::HolderPauseLong)
        .copied()
        .unwrap_or(0);
    let paused = report
        .arenas
        .iter()
        .find(|a| a.name.starts_with("paused"))
        .unwrap();
    if long_pauses >= 3 {
        assert!(
            paused.rejected > 0 && paused.overlaps > 0,
            "seed {seed}:\n{report}"
        );
    }
}
