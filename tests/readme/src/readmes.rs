//! The READMEs whose code blocks the test runs, relative to the repository root. Shared by
//! `build.rs` and the binary; the binary also fails when the repository has a README.md that
//! is not listed here, so a new README cannot be left out by accident.

/// Every README.md of the repository.
pub const READMES: &[&str] = &[
    "README.md",
    "core/README.md",
    "bindings/c/README.md",
    "python/README.md",
    "node/README.md",
    "bindings/wasm/README.md",
    "examples/demo/README.md",
    "tests/interop/README.md",
];
