//! The `redlatch-fleet` binary: environment, exit codes, cleanup.

use std::process::Command;
use std::time::Duration;

use redlatch_fleet::ping_port;

fn fleet_cmd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_redlatch-fleet"))
}

fn ports_of(urls: &str) -> Vec<u16> {
    urls.split([',', '\n', ' '])
        .filter_map(|u| u.trim().strip_prefix("redis://127.0.0.1:"))
        .map(|p| p.parse().unwrap())
        .collect()
}

#[test]
fn runs_the_command_against_the_single_node() {
    let out = fleet_cmd()
        .args(["--", "sh", "-c", "redis-cli -u $REDLATCH_TEST_URL ping"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "PONG");
}

#[test]
fn passes_quorum_urls_and_stops_every_server_afterwards() {
    let script = r#"echo "$REDLATCH_TEST_URL,$REDLATCH_TEST_QUORUM_URLS"
        for u in $(echo "$REDLATCH_TEST_QUORUM_URLS" | tr , ' '); do
            [ "$(redis-cli -u "$u" ping)" = PONG ] || exit 9
        done"#;
    let out = fleet_cmd()
        .args(["--quorum", "2", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ports = ports_of(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(ports.len(), 3, "{out:?}");
    for port in ports {
        assert!(
            !ping_port(port, Duration::from_millis(300)),
            "port {port} still answers"
        );
    }
}

#[test]
fn quorum_zero_gives_an_empty_list() {
    let out = fleet_cmd()
        .args([
            "--quorum=0",
            "sh",
            "-c",
            r#"test -n "$REDLATCH_TEST_URL" && test -z "$REDLATCH_TEST_QUORUM_URLS""#,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn propagates_a_failing_exit_code_and_still_cleans_up() {
    let out = fleet_cmd()
        .args([
            "--quorum",
            "1",
            "--",
            "sh",
            "-c",
            "echo $REDLATCH_TEST_URL; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    for port in ports_of(&String::from_utf8_lossy(&out.stdout)) {
        assert!(!ping_port(port, Duration::from_millis(300)));
    }
}

#[test]
fn reports_death_by_signal_as_128_plus_signal() {
    let out = fleet_cmd()
        .args(["--quorum", "0", "--", "sh", "-c", "kill -9 $$"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128 + 9), "{out:?}");
}

#[test]
fn sigterm_stops_the_command_and_the_servers() {
    let mut child = fleet_cmd()
        .args([
            "--quorum",
            "0",
            "--",
            "sh",
            "-c",
            "echo $REDLATCH_TEST_URL; exec sleep 60",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let port = ports_of(&line)[0];
    assert!(ping_port(port, Duration::from_millis(300)));
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    assert!(!ping_port(port, Duration::from_millis(300)));
}

#[test]
fn usage_errors_exit_2_and_missing_commands_127() {
    assert_eq!(fleet_cmd().output().unwrap().status.code(), Some(2));
    assert_eq!(
        fleet_cmd()
            .args(["--quorum", "x", "--", "true"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    let out = fleet_cmd()
        .args(["--quorum", "0", "--", "/nonexistent/redlatch-cmd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{out:?}");
}
