//! Process and server readings taken around the measured loops: this process's (or
//! redis-server's) CPU time from `/proc/<pid>/stat`, RSS and thread count from `/proc/self`, the
//! kernel clock tick, and the `EVALSHA` call count from `INFO commandstats`. They turn "how fast"
//! into "at what cost": CPU per operation, CPU and memory of the watchdog, renewals per call.

use redlatch_fleet::RedisServer;

/// Clock ticks per second (`getconf CLK_TCK`; 100 if that fails).
pub fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// utime + stime of a process, in seconds (`/proc/<pid>/stat`).
pub fn cpu_seconds(pid: &str) -> f64 {
    let ticks = clock_ticks();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    let get = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (get(11) + get(12)) / ticks
}

/// Resident set size of this process in MB (`VmRSS` of `/proc/self/status`; NaN if unknown).
pub fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Number of threads of this process (`/proc/self/task`; "?" if unreadable).
pub fn threads() -> String {
    std::fs::read_dir("/proc/self/task").map_or_else(|_| "?".into(), |d| d.count().to_string())
}

/// `cmdstat_evalsha` calls from `INFO commandstats` (0 when absent).
pub fn evalsha_calls(server: &RedisServer) -> u64 {
    let info = tokio::task::block_in_place(|| server.cli(&["INFO", "commandstats"])).unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|v| v.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
