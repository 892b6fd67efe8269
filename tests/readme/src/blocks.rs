//! The fenced code blocks of a Markdown file (CommonMark, parsed by pulldown-cmark) and what
//! the README test does with each, decided by the block's language tag.
//!
//! Shared by `build.rs` (which compiles the Rust blocks into the test binary) and the binary
//! (which runs every block), so both see the same blocks.

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};

/// A language the test compiles and runs; every block tagged with it must be a whole program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// `rust`: compiled into the test binary (build.rs), run as a subprocess of it.
    Rust,
    /// `c`: compiled with the flags of `pkg-config --cflags --libs redlatch`.
    C,
    /// `cpp`: built by CMake with `find_package(redlatch)`.
    Cpp,
    /// `python`: run by the interpreter of a venv with the wheel installed.
    Python,
    /// `js`: an ES module run by Node from a folder where the npm package is installed.
    Js,
    /// `ts`: compiled by `tsc` in that folder, then run by Node.
    Ts,
}

impl Lang {
    /// The file extension of an extracted block.
    pub fn extension(self) -> &'static str {
        match self {
            Lang::Rust => "rs",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Python => "py",
            Lang::Js => "mjs",
            Lang::Ts => "ts",
        }
    }

    /// The tag as written in the README.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Python => "python",
            Lang::Js => "js",
            Lang::Ts => "ts",
        }
    }
}

/// Tags of blocks that are not programs (commands, output, build files): shown, not run.
pub const NOT_PROGRAMS: &[&str] = &["sh", "text", "cmake", "toml", "json"];

/// What the test does with one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A whole program in this language: compiled and run.
    Program(Lang),
    /// Tagged as not a program (one of [`NOT_PROGRAMS`]): skipped on purpose.
    Shown,
}

/// One fenced code block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The first word of the info string (`rust` in "```rust,no_run").
    pub tag: String,
    /// The code, as the reader copies it.
    pub code: String,
}

impl Block {
    /// What to do with this block; an error (to fix in the README) for an untagged block or a
    /// tag this test does not know, so that no block is skipped by accident.
    pub fn kind(&self) -> Result<Kind, String> {
        let lang = match self.tag.as_str() {
            "rust" => Lang::Rust,
            "c" => Lang::C,
            "cpp" => Lang::Cpp,
            "python" => Lang::Python,
            "js" => Lang::Js,
            "ts" => Lang::Ts,
            "" => return Err(untagged_message()),
            tag if NOT_PROGRAMS.contains(&tag) => return Ok(Kind::Shown),
            tag => {
                return Err(format!(
                    "unknown language tag {tag:?}: use one of rust, c, cpp, python, js, ts \
                     (run as programs) or {} (not programs)",
                    NOT_PROGRAMS.join(", ")
                ))
            }
        };
        Ok(Kind::Program(lang))
    }
}

fn untagged_message() -> String {
    format!(
        "untagged code block: tag it with its language (rust, c, cpp, python, js, ts: run as a \
         program) or with one of {} if it is not a program",
        NOT_PROGRAMS.join(", ")
    )
}

/// Every code block of `markdown`, in order. Indented code blocks come back untagged (so
/// [`Block::kind`] refuses them): they cannot say what they are.
pub fn code_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (event, range) in Parser::new(markdown).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let tag = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .next()
                        .unwrap_or("")
                        .to_ascii_lowercase(),
                    CodeBlockKind::Indented => String::new(),
                };
                let line = markdown[..range.start].matches('\n').count() + 1;
                current = Some(Block {
                    line,
                    tag,
                    code: String::new(),
                });
            }
            Event::Text(text) => {
                if let Some(block) = current.as_mut() {
                    block.code.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}

/// A name for a block that is a file name and a Rust module name: `bindings_c_readme_md_l42`.
pub fn block_id(readme: &str, line: usize) -> String {
    let stem: String = readme
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{stem}_l{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Title\n\n```rust,no_run\nfn main() {}\n```\n\ntext\n\n```\nuntagged\n```\n\n    \
                       indented\n\n~~~ python extra words\nprint(1)\n~~~\n\n```sh\nmake\n```\n\n```basic\n10 GOTO 10\n```\n";

    #[test]
    fn finds_every_block_with_its_line_tag_and_code() {
        let blocks = code_blocks(DOC);
        let found: Vec<(usize, &str)> = blocks.iter().map(|b| (b.line, b.tag.as_str())).collect();
        assert_eq!(
            found,
            [
                (3, "rust"),
                (9, ""),
                (13, ""),
                (15, "python"),
                (19, "sh"),
                (23, "basic")
            ]
        );
        assert_eq!(blocks[0].code, "fn main() {}\n");
        assert_eq!(blocks[3].code, "print(1)\n");
    }

    #[test]
    fn programs_run_shown_blocks_are_skipped_the_rest_is_refused() {
        let kinds: Vec<Result<Kind, String>> = code_blocks(DOC).iter().map(Block::kind).collect();
        assert_eq!(kinds[0], Ok(Kind::Program(Lang::Rust)));
        assert!(kinds[1].as_ref().unwrap_err().contains("untagged"));
        assert!(
            kinds[2].as_ref().unwrap_err().contains("untagged"),
            "indented blocks say nothing"
        );
        assert_eq!(kinds[3], Ok(Kind::Program(Lang::Python)));
        assert_eq!(kinds[4], Ok(Kind::Shown));
        assert!(kinds[5]
            .as_ref()
            .unwrap_err()
            .contains("unknown language tag \"basic\""));
    }

    #[test]
    fn block_ids_are_module_and_file_names() {
        assert_eq!(block_id("bindings/c/README.md", 42), "bindings_c_readme_md_l42");
    }
}
