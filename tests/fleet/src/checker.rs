//! The mutual-exclusion checker: mutual exclusion is checked, not assumed.
//!
//! Workers (in any language, in any process on this machine) log, for each critical section,
//! the time just after the lock was granted and the time just before it was released, on a
//! clock shared by all processes (Linux `CLOCK_MONOTONIC`: Python `time.monotonic_ns()`, Node
//! `process.hrtime.bigint()`, C `clock_gettime`). These inner intervals must never overlap.

use std::cmp::Ordering;

/// One critical section as logged by a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interval {
    /// When the lock was granted (nanoseconds on the shared clock).
    pub acquired_ns: u64,
    /// When the holder began releasing it (nanoseconds on the same clock); `>= acquired_ns`.
    pub released_ns: u64,
    /// What identifies the holder in messages: a lock token, fencing token or worker id.
    pub token: String,
}

impl Interval {
    /// Parses one log line, `<acquired_ns> <released_ns> <token>` (whitespace-separated; the
    /// token is the rest of the line, trimmed), the format workers in every language write.
    ///
    /// # Errors
    /// A message naming the bad line.
    pub fn parse(line: &str) -> Result<Interval, String> {
        let mut fields = line.trim().splitn(3, char::is_whitespace);
        let mut number = |what: &str| {
            fields
                .next()
                .and_then(|f| f.parse::<u64>().ok())
                .ok_or_else(|| format!("bad interval line {line:?}: no {what} nanoseconds"))
        };
        let acquired_ns = number("acquired")?;
        let released_ns = number("released")?;
        let token = fields.next().unwrap_or("").trim().to_string();
        Ok(Interval {
            acquired_ns,
            released_ns,
            token,
        })
    }
}

/// Checks that no two intervals overlap. Intervals are sorted by acquire time; an interval
/// acquired before an earlier-acquired one was released (strictly before: touching ends are
/// fine) is a violation. Every earlier interval counts, not only the previous one, so an
/// overlap hidden behind a short nested interval is still found.
///
/// # Errors
/// The first violation, naming both tokens and their times, or an interval released before
/// it was acquired.
pub fn check_no_overlap(intervals: &[Interval]) -> Result<(), String> {
    match find_overlaps(intervals).into_iter().next() {
        Some(violation) => Err(violation),
        None => Ok(()),
    }
}

/// Every violation [`check_no_overlap`] would report, in acquire order: each interval that
/// starts while an earlier-acquired one is still held is one violation (named with the
/// earlier interval that is released last), and so is each interval released before it was
/// acquired. Used to count violations where they are expected (a holder paused past its
/// lease) rather than stop at the first.
pub fn find_overlaps(intervals: &[Interval]) -> Vec<String> {
    let backwards: Vec<String> = intervals
        .iter()
        .filter(|i| i.released_ns < i.acquired_ns)
        .map(|bad| {
            format!(
                "interval {:?} released at {} ns before it was acquired at {} ns",
                bad.token, bad.released_ns, bad.acquired_ns
            )
        })
        .collect();
    if !backwards.is_empty() {
        return backwards;
    }
    overlapping_pairs(intervals)
        .into_iter()
        .map(|(held, current)| {
            format!(
                "mutual exclusion violated: {:?} acquired at {} ns while {:?} held the lock \
                 ({} ns .. {} ns), overlap {} ns",
                current.token,
                current.acquired_ns,
                held.token,
                held.acquired_ns,
                held.released_ns,
                held.released_ns.min(current.released_ns) - current.acquired_ns
            )
        })
        .collect()
}

/// The first violation of mutual exclusion, as `(holder, newcomer)`: the newcomer was
/// acquired while the holder (acquired earlier, or at the same time) was not yet released. The
/// order and rules are [`check_no_overlap`]'s; intervals released before they were acquired
/// are not looked at here. The demo uses it to name both workers of an overlap.
pub fn first_overlap(intervals: &[Interval]) -> Option<(&Interval, &Interval)> {
    overlapping_pairs(intervals).into_iter().next()
}

/// Every `(holder, newcomer)` pair in acquire order, where the holder is the earlier interval
/// released last (the one a newcomer must not start inside).
fn overlapping_pairs(intervals: &[Interval]) -> Vec<(&Interval, &Interval)> {
    let mut sorted: Vec<&Interval> = intervals.iter().collect();
    sorted.sort_by(|a, b| match a.acquired_ns.cmp(&b.acquired_ns) {
        Ordering::Equal => a.released_ns.cmp(&b.released_ns),
        other => other,
    });
    let mut pairs = Vec::new();
    let mut latest: Option<&Interval> = None;
    for current in sorted {
        if let Some(held) = latest {
            if current.acquired_ns < held.released_ns {
                pairs.push((held, current));
            }
        }
        if latest.is_none_or(|held| current.released_ns > held.released_ns) {
            latest = Some(current);
        }
    }
    pairs
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
    fn clean_log_passes_in_any_order_and_touching_ends_are_fine() {
        let log = [
            iv(30, 40, "c"),
            iv(0, 10, "a"),
            iv(10, 20, "b"),
            iv(25, 25, "empty"),
        ];
        assert_eq!(check_no_overlap(&log), Ok(()));
        assert_eq!(check_no_overlap(&[]), Ok(()));
    }

    #[test]
    fn overlap_is_detected_and_names_both_tokens() {
        let err = check_no_overlap(&[iv(0, 10, "alpha"), iv(9, 20, "beta")]).unwrap_err();
        assert!(err.contains("\"alpha\"") && err.contains("\"beta\""), "{err}");
    }

    #[test]
    fn overlap_behind_a_nested_interval_is_detected() {
        // b is nested inside a; c starts after b ended but still inside a.
        let err = check_no_overlap(&[iv(0, 100, "a"), iv(10, 20, "b"), iv(30, 40, "c")]).unwrap_err();
        assert!(err.contains("\"a\"") && err.contains("\"b\""), "{err}");
        let err = check_no_overlap(&[iv(0, 100, "a"), iv(30, 40, "c")]).unwrap_err();
        assert!(err.contains("\"a\"") && err.contains("\"c\""), "{err}");
    }

    #[test]
    fn identical_start_times_overlap() {
        assert!(check_no_overlap(&[iv(5, 6, "x"), iv(5, 7, "y")]).is_err());
    }

    #[test]
    fn find_overlaps_counts_each_interval_started_inside_another() {
        let log = [
            iv(0, 100, "a"),
            iv(10, 20, "b"),
            iv(30, 40, "c"),
            iv(100, 110, "d"),
        ];
        let found = find_overlaps(&log);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].contains("\"b\"") && found[1].contains("\"c\""),
            "{found:?}"
        );
        assert!(find_overlaps(&[iv(0, 1, "x"), iv(1, 2, "y")]).is_empty());
    }

    #[test]
    fn first_overlap_names_holder_then_newcomer() {
        let log = [iv(30, 40, "c"), iv(0, 100, "a"), iv(10, 20, "b")];
        let (held, newcomer) = first_overlap(&log).expect("b starts inside a");
        assert_eq!((held.token.as_str(), newcomer.token.as_str()), ("a", "b"));
        assert_eq!(first_overlap(&[iv(0, 10, "a"), iv(10, 20, "b")]), None);
    }

    #[test]
    fn backwards_interval_is_rejected() {
        let err = check_no_overlap(&[iv(10, 5, "w1#3")]).unwrap_err();
        assert!(err.contains("w1#3"), "{err}");
    }

    #[test]
    fn parses_log_lines() {
        assert_eq!(Interval::parse(" 12 34 w3#7 \n"), Ok(iv(12, 34, "w3#7")));
        assert_eq!(Interval::parse("12 34"), Ok(iv(12, 34, "")));
        assert!(Interval::parse("12 x w").is_err());
        assert!(Interval::parse("").is_err());
    }
}
