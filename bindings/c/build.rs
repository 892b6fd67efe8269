//! Gives the shared library a SONAME, so programs linked with `-lredlatch` record
//! `libredlatch.so.<abi>` and keep working when a compatible release replaces the file.
//! ABI version: `0.<minor>` while the major version is 0 (every 0.x release may break the
//! ABI), else `<major>`. `bindings/c/c.mk` computes the same name for the install symlinks.

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_default();
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").unwrap_or_default();
    let abi = if major == "0" { format!("0.{minor}") } else { major };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libredlatch.so.{abi}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
