//! C blocks: compiled one by one with the flags `pkg-config --cflags --libs redlatch` gives for
//! the C release under `--c-prefix`. C++ blocks: one CMake project with an executable per
//! block, linked to `redlatch::redlatch` from `find_package(redlatch)`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use super::{run_logged, BUILD_TIMEOUT};
use crate::Found;

/// The `pkg-config` answer for redlatch under `prefix`.
fn pkg_config(prefix: &Path, args: &[&str]) -> Result<Vec<String>, String> {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("redlatch")
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .map_err(|e| format!("cannot run pkg-config: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pkg-config {args:?} redlatch: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect())
}

/// One command per block: `cc -Wall -Wextra -Werror <block>.c $(pkg-config ...)` and an rpath
/// to the unpacked library, as bindings/c/README.md tells a reader to build.
pub fn prepare_c(
    prefix: &Path,
    ids: &[String],
    blocks: &[&Found],
    dir: &Path,
) -> Result<Vec<Result<Command, String>>, String> {
    let flags = pkg_config(prefix, &["--cflags", "--libs"])?;
    let libdir = pkg_config(prefix, &["--variable=libdir"])?.join(" ");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut commands = Vec::new();
    for (id, f) in ids.iter().zip(blocks) {
        let source = dir.join(format!("{id}.c"));
        let exe = dir.join(id);
        let _ = fs::remove_file(&exe);
        let built = fs::write(&source, &f.block.code)
            .map_err(|e| format!("{}: {e}", source.display()))
            .and_then(|()| {
                let mut compile = Command::new(&cc);
                compile
                    .args(["-Wall", "-Wextra", "-Werror", "-o"])
                    .arg(&exe)
                    .arg(&source)
                    .args(&flags)
                    .arg(format!("-Wl,-rpath,{libdir}"));
                run_logged(&mut compile, &dir.join(format!("{id}.build.log")), BUILD_TIMEOUT)
            });
        commands.push(built.map(|()| Command::new(&exe)));
    }
    Ok(commands)
}

/// One CMake project (`find_package(redlatch REQUIRED)`, C++17, `-Wall -Wextra -Werror`) with
/// one executable per block, built from scratch with `make -k` so that one broken block does
/// not hide the others.
pub fn prepare_cpp(
    prefix: &Path,
    ids: &[String],
    blocks: &[&Found],
    dir: &Path,
) -> Result<Vec<Result<Command, String>>, String> {
    let mut cmake = String::from(
        "cmake_minimum_required(VERSION 3.16)\nproject(readme_examples CXX)\n\
         set(CMAKE_CXX_STANDARD 17)\nset(CMAKE_CXX_STANDARD_REQUIRED ON)\n\
         find_package(redlatch REQUIRED)\n",
    );
    for (id, f) in ids.iter().zip(blocks) {
        let source = dir.join(format!("{id}.cpp"));
        fs::write(&source, &f.block.code).map_err(|e| format!("{}: {e}", source.display()))?;
        writeln!(
            cmake,
            "add_executable({id} {id}.cpp)\ntarget_link_libraries({id} PRIVATE redlatch::redlatch)\n\
             target_compile_options({id} PRIVATE -Wall -Wextra -Werror)"
        )
        .unwrap();
    }
    fs::write(dir.join("CMakeLists.txt"), cmake).map_err(|e| e.to_string())?;
    let build = dir.join("build");
    let _ = fs::remove_dir_all(&build);
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(dir)
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg("-DCMAKE_BUILD_TYPE=Release");
    run_logged(&mut configure, &dir.join("configure.log"), BUILD_TIMEOUT)?;
    let log = dir.join("build.log");
    let mut make = Command::new("cmake");
    make.arg("--build").arg(&build).args(["--", "-k"]);
    let built = run_logged(&mut make, &log, BUILD_TIMEOUT);
    Ok(ids
        .iter()
        .map(|id| {
            let exe = build.join(id);
            if exe.exists() {
                Ok(Command::new(exe))
            } else {
                Err(format!(
                    "{id}.cpp did not build ({}):\n{}",
                    log.display(),
                    built.as_ref().err().map_or("", String::as_str)
                ))
            }
        })
        .collect())
}
