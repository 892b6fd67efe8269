//! Rust blocks against a packaged crate (`--rust-crate`, the unpacked `make dist` .crate): one
//! Cargo project outside the workspace with a binary per block, depending on that crate by
//! path and on tokio, as the README's `Cargo.toml` block tells a reader to. Without
//! `--rust-crate` the blocks run from this binary instead (build.rs compiled them in against
//! the workspace's `redlatch`).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use super::{run_logged, BUILD_TIMEOUT};
use crate::Found;

/// One command per block; a block that does not compile gets the compiler's errors about it.
pub fn prepare(
    krate: &Path,
    ids: &[String],
    blocks: &[&Found],
    dir: &Path,
) -> Result<Vec<Result<Command, String>>, String> {
    let project = dir.join("project");
    let src = project.join("src");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    // `[workspace]`: the project lies under the repository's target/, whose Cargo.toml is a
    // workspace this project must not join. The repository's Cargo.lock pins the versions the
    // crate was tested with (Cargo drops the entries it does not need).
    let mut manifest = format!(
        "[package]\nname = \"readme-examples\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n[dependencies]\nredlatch = {{ path = {:?} }}\n\
         tokio = {{ version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }}\n",
        krate.display().to_string()
    );
    for (id, f) in ids.iter().zip(blocks) {
        // No binary of an earlier run may stand in for one that no longer builds.
        let _ = fs::remove_file(project.join("target/debug").join(id));
        fs::write(src.join(format!("{id}.rs")), &f.block.code).map_err(|e| e.to_string())?;
        write!(manifest, "\n[[bin]]\nname = \"{id}\"\npath = \"src/{id}.rs\"\n").unwrap();
    }
    fs::write(project.join("Cargo.toml"), manifest).map_err(|e| e.to_string())?;
    let lock = crate::root().join("Cargo.lock");
    if !project.join("Cargo.lock").exists() {
        fs::copy(&lock, project.join("Cargo.lock")).map_err(|e| format!("{}: {e}", lock.display()))?;
    }
    let log = dir.join("cargo-build.log");
    let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    build
        .args(["build", "--bins", "--keep-going", "--manifest-path"])
        .arg(project.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", project.join("target"))
        .env_remove("RUSTFLAGS");
    let built = run_logged(&mut build, &log, BUILD_TIMEOUT);
    Ok(ids
        .iter()
        .map(|id| {
            let exe = project.join("target/debug").join(id);
            match &built {
                Ok(()) => Ok(Command::new(exe)),
                // `--keep-going` built the others; this one's errors name its file.
                Err(_) if exe.exists() && !mentions(&log, id) => Ok(Command::new(exe)),
                Err(e) => Err(format!("src/{id}.rs did not build ({}):\n{e}", log.display())),
            }
        })
        .collect())
}

/// Whether the build log names this block's source file.
fn mentions(log: &Path, id: &str) -> bool {
    fs::read_to_string(log).is_ok_and(|text| text.contains(&format!("src/{id}.rs")))
}
