//! Compiles the READMEs' Rust blocks into this crate's binary: each block becomes a module
//! (its `main` untouched) plus a `run` function, listed in `RUST_BLOCKS` with its source text
//! so the binary can tell when it was built from other READMEs than those on disk.

use std::fmt::Write as _;
use std::path::Path;
use std::{env, fs};

#[path = "src/blocks.rs"]
#[allow(dead_code)]
mod blocks;
#[path = "src/readmes.rs"]
mod readmes;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let mut modules = String::new();
    let mut table = String::from("/// The Rust blocks, in README order.\n");
    table.push_str("pub const RUST_BLOCKS: &[RustBlock] = &[\n");
    for readme in readmes::READMES {
        let path = root.join(readme);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for block in blocks::code_blocks(&text) {
            if block.kind() != Ok(blocks::Kind::Program(blocks::Lang::Rust)) {
                continue;
            }
            let id = blocks::block_id(readme, block.line);
            let file = format!("{out}/{id}.rs");
            fs::write(&file, &block.code).unwrap_or_else(|e| panic!("{file}: {e}"));
            writeln!(
                modules,
                "#[allow(missing_docs)]\nmod {id} {{\n    include!({file:?});\n    \
                 pub fn run() -> std::process::ExitCode {{\n        \
                 std::process::Termination::report(main())\n    }}\n}}"
            )
            .unwrap();
            writeln!(
                table,
                "    RustBlock {{ readme: {readme:?}, line: {}, code: {:?}, run: {id}::run }},",
                block.line, block.code
            )
            .unwrap();
        }
    }
    table.push_str("];\n");
    fs::write(format!("{out}/rust_blocks.rs"), modules + &table).expect("write rust_blocks.rs");
}
