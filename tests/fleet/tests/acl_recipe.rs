//! docs/deployments.md quotes the least-privilege user's `ACL SETUSER` line exactly as the
//! harness grants it (`tests/fleet/src/acl.rs`), so the documented recipe is the tested one.

use redlatch_fleet::acl;

fn document() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/deployments.md");
    std::fs::read_to_string(path).expect("read docs/deployments.md")
}

#[test]
fn the_documented_acl_line_is_the_one_the_harness_grants() {
    let line = acl::setuser_line("lock:*", "password", false);
    let doc = document();
    assert!(
        doc.lines().any(|l| l == line),
        "docs/deployments.md must quote, on a line of its own:\n{line}"
    );
    assert!(doc.contains(&format!("add `{}`", acl::VALKEY_COMMANDS)));
}

#[test]
fn the_line_has_the_password_placeholder_and_no_test_password() {
    let line = acl::setuser_line("lock:*", "password", true);
    assert!(line.starts_with("ACL SETUSER redlatch reset on >password -@all "));
    assert!(!line.contains(acl::PASSWORD));
    assert!(line.contains("+delifeq"));
    assert!(line.contains(" ~{lock:* "));
}
