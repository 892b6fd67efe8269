//! The first overlapping critical section of a run, in words, for the report.

use redlatch_fleet::Interval;

/// One overlap in words: which workers (by id and language), which of their critical sections,
/// when (ms since the run started) and by how much:
/// `worker 3 (py_worker) entered its section 7 at 12.41 ms while worker 5 (c_worker) was in
/// its section 4 (12.05 .. 13.32 ms): 0.91 ms of overlap`.
pub fn describe(held: &Interval, newcomer: &Interval, started_ns: u64, labels: &[String]) -> String {
    let ms = |ns: u64| ns.saturating_sub(started_ns) as f64 / 1e6;
    // Tokens are `w<worker-id>#<n>`, n counting the worker's sections (examples/demo/README.md).
    let who = |i: &Interval| {
        let (worker, item) = i
            .token
            .trim_start_matches('w')
            .split_once('#')
            .unwrap_or((&i.token, "?"));
        let label = worker
            .parse::<usize>()
            .ok()
            .and_then(|id| labels.get(id.wrapping_sub(1)))
            .map_or(String::new(), |l| format!(" ({l})"));
        (format!("worker {worker}{label}"), item.to_string())
    };
    let ((new_worker, new_item), (held_worker, held_item)) = (who(newcomer), who(held));
    let overlap_ns = held.released_ns.min(newcomer.released_ns) - newcomer.acquired_ns;
    format!(
        "{new_worker} entered its section {new_item} at {:.2} ms while {held_worker} was in its \
         section {held_item} ({:.2} .. {:.2} ms): {:.2} ms of overlap",
        ms(newcomer.acquired_ns),
        ms(held.acquired_ns),
        ms(held.released_ns),
        overlap_ns as f64 / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(acquired_ns: u64, released_ns: u64, token: &str) -> Interval {
        Interval {
            acquired_ns,
            released_ns,
            token: token.to_string(),
        }
    }

    #[test]
    fn names_workers_and_sections_in_milliseconds_since_the_start() {
        let labels = ["rust", "py_worker", "c_worker"].map(String::from);
        let start = 5_000_000_000;
        let held = iv(start + 12_050_000, start + 13_320_000, "w3#4");
        let newcomer = iv(start + 12_410_000, start + 14_000_000, "w2#7");
        assert_eq!(
            describe(&held, &newcomer, start, &labels),
            "worker 2 (py_worker) entered its section 7 at 12.41 ms while worker 3 (c_worker) was in \
             its section 4 (12.05 .. 13.32 ms): 0.91 ms of overlap"
        );
    }
}
