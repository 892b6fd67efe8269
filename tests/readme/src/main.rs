//! `redlatch-readme`: every code block of the READMEs runs as written, or the build fails.
//!
//! ```text
//! redlatch-readme list
//! redlatch-readme run [--python PY] [--node-dir DIR] [--c-prefix DIR] [--rust-crate DIR]
//!                     [--lang L,..] [--work DIR]
//! redlatch-readme rust <README> <line>
//! ```
//!
//! `list` prints each block and what is done with it. `run` starts its own Redis fleet (one
//! node and three quorum nodes on free ports) and runs every program block against it, with
//! `REDIS_URL` and `REDIS_QUORUM_URLS` (comma-separated) set, each after a FLUSHALL; the block
//! fails on a compile error, a non-zero exit or a hang (60 s). Blocks are whole programs in
//! the languages of [`blocks::Lang`]; blocks tagged `sh`, `text`, `cmake`, `toml` or `json`
//! are shown, not run; any other block (untagged, unknown tag) is an error, so that nothing
//! is skipped by accident. `rust` runs one of the Rust blocks that build.rs compiled in.
//!
//! Where the other languages come from: `--python` is an interpreter with the `redlatch`
//! wheel installed; `--node-dir` a folder whose `node_modules` has the `redlatch` package
//! (and `typescript` and `@types/node` for `ts` blocks, `redis` for the wasm README);
//! `--c-prefix` an unpacked C release (`lib/pkgconfig/redlatch.pc`, `lib/cmake/redlatch`);
//! `--rust-crate` an unpacked `redlatch-<version>.crate`, to build the Rust blocks against
//! (by default they run from this binary, compiled against the workspace's `redlatch`).
#![deny(unsafe_code)]

mod blocks;
mod readmes;
mod run;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{exit, ExitCode};

use blocks::{code_blocks, Kind, Lang};

/// A README's Rust block, compiled into this binary by build.rs.
pub struct RustBlock {
    /// The README, relative to the repository root.
    pub readme: &'static str,
    /// The line of its opening fence.
    pub line: usize,
    /// Its text, to compare with the README on disk.
    pub code: &'static str,
    /// Runs its `main`.
    pub run: fn() -> ExitCode,
}

include!(concat!(env!("OUT_DIR"), "/rust_blocks.rs"));

/// The repository root (this crate is `tests/readme`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One block of one README, with what to do with it.
pub struct Found {
    /// The README, relative to the repository root.
    pub readme: &'static str,
    /// The block.
    pub block: blocks::Block,
    /// Its kind.
    pub kind: Kind,
}

/// Every block of every listed README, or every problem found (untagged blocks, unknown tags,
/// unlisted READMEs, a binary built from other Rust blocks than those on disk).
fn collect() -> Result<Vec<Found>, Vec<String>> {
    let root = root();
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for &readme in readmes::READMES {
        let text = match std::fs::read_to_string(root.join(readme)) {
            Ok(text) => text,
            Err(e) => {
                problems.push(format!("{readme}: {e}"));
                continue;
            }
        };
        for block in code_blocks(&text) {
            match block.kind() {
                Ok(kind) => found.push(Found { readme, block, kind }),
                Err(message) => problems.push(format!("{readme}:{}: {message}", block.line)),
            }
        }
    }
    for unlisted in unlisted_readmes(&root) {
        problems.push(format!("{unlisted}: not in tests/readme/src/readmes.rs; add it"));
    }
    let on_disk: BTreeSet<(&str, usize, &str)> = found
        .iter()
        .filter(|f| f.kind == Kind::Program(Lang::Rust))
        .map(|f| (f.readme, f.block.line, f.block.code.as_str()))
        .collect();
    let compiled: BTreeSet<(&str, usize, &str)> =
        RUST_BLOCKS.iter().map(|b| (b.readme, b.line, b.code)).collect();
    if on_disk != compiled {
        problems.push("the Rust blocks compiled into this binary differ from the READMEs: rebuild it".into());
    }
    if problems.is_empty() {
        Ok(found)
    } else {
        Err(problems)
    }
}

/// README.md files of the repository (outside build output and dependencies) not listed.
fn unlisted_readmes(root: &Path) -> Vec<String> {
    // Build output and installed dependencies: directory names anywhere, paths from the root.
    const SKIP_NAMES: &[&str] = &["target", "node_modules"];
    const SKIP_PATHS: &[&str] = &["dist", "node/wasm", "bindings/wasm/pkg"];
    let mut unlisted = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = dir.join(&name);
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let skipped = SKIP_NAMES.contains(&name.as_str())
                    || SKIP_PATHS.iter().any(|p| relative == Path::new(p));
                if !name.starts_with('.') && !skipped {
                    dirs.push(relative);
                }
            } else if name == "README.md" {
                let relative = relative.to_string_lossy().into_owned();
                if !readmes::READMES.contains(&relative.as_str()) {
                    unlisted.push(relative);
                }
            }
        }
    }
    unlisted.sort();
    unlisted
}

fn collect_or_exit() -> Vec<Found> {
    collect().unwrap_or_else(|problems| {
        for p in &problems {
            eprintln!("redlatch-readme: {p}");
        }
        exit(1)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            for f in collect_or_exit() {
                let what = match f.kind {
                    Kind::Program(lang) => format!("run ({})", lang.tag()),
                    Kind::Shown => format!("shown, not run ({})", f.block.tag),
                };
                println!("{}:{}  {what}", f.readme, f.block.line);
            }
            ExitCode::SUCCESS
        }
        Some("run") => match run::Options::parse(&args[1..]) {
            Ok(options) => run::run_all(&collect_or_exit(), &options),
            Err(e) => {
                eprintln!("redlatch-readme run: {e}");
                ExitCode::from(2)
            }
        },
        Some("rust") if args.len() == 3 => {
            let line: usize = args[2].parse().unwrap_or(0);
            match RUST_BLOCKS.iter().find(|b| b.readme == args[1] && b.line == line) {
                Some(block) => (block.run)(),
                None => {
                    eprintln!("redlatch-readme: no Rust block at {}:{}", args[1], args[2]);
                    ExitCode::from(2)
                }
            }
        }
        _ => {
            eprintln!(
                "usage: redlatch-readme list\n       redlatch-readme run [--python PY] \
                 [--node-dir DIR] [--c-prefix DIR] [--rust-crate DIR] [--lang L,..] [--work DIR]\n       \
                 redlatch-readme rust <README> <line>"
            );
            ExitCode::from(2)
        }
    }
}
