//! TypeScript blocks: written into `<node-dir>/readme-ts` (an ES module package beside the
//! installed `redlatch`), type-checked and compiled by one `tsc` run in strict mode for
//! Node 20 (ES2022 output, so `await using` is lowered to what Node 20 runs), then run by Node.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::{run_logged, BUILD_TIMEOUT};
use crate::Found;

const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "target": "es2022",
    "lib": ["es2022", "esnext.disposable"],
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "types": ["node"],
    "strict": true,
    "outDir": "out",
    "rootDir": "."
  },
  "include": ["*.ts"]
}
"#;

/// One command per block; a block that `tsc` reports errors in gets those errors instead.
pub fn prepare(
    node_dir: &Path,
    ids: &[String],
    blocks: &[&Found],
    logs: &Path,
) -> Result<Vec<Result<Command, String>>, String> {
    let dir = node_dir.join("readme-ts");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    fs::write(dir.join("tsconfig.json"), TSCONFIG).map_err(|e| e.to_string())?;
    fs::write(dir.join("package.json"), "{ \"type\": \"module\" }\n").map_err(|e| e.to_string())?;
    for (id, f) in ids.iter().zip(blocks) {
        fs::write(dir.join(format!("{id}.ts")), &f.block.code).map_err(|e| e.to_string())?;
    }
    let tsc = node_dir.join("node_modules/typescript/bin/tsc");
    let log = logs.join("tsc.log");
    let mut compile = Command::new("node");
    compile.arg(&tsc).arg("-p").arg(&dir);
    let compiled = run_logged(&mut compile, &log, BUILD_TIMEOUT);
    let output = fs::read_to_string(&log).unwrap_or_default();
    Ok(ids
        .iter()
        .map(|id| {
            let errors: Vec<&str> = output
                .lines()
                .filter(|l| l.contains(&format!("{id}.ts(")))
                .collect();
            let js = dir.join("out").join(format!("{id}.js"));
            if errors.is_empty() && js.exists() {
                let mut c = Command::new("node");
                c.arg(js).current_dir(node_dir);
                Ok(c)
            } else if errors.is_empty() {
                Err(format!(
                    "tsc wrote no {id}.js: {}",
                    compiled.as_ref().err().map_or("", String::as_str)
                ))
            } else {
                Err(format!("tsc:\n{}", errors.join("\n")))
            }
        })
        .collect())
}
