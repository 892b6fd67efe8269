//! Redlock quorum math (Redis docs, "Distributed Locks with Redis", steps 3-4).
//!
//! A single node is the degenerate quorum of one, so the same rules serve both modes.

use std::time::Duration;

/// Votes needed among `nodes`: `floor(nodes / 2) + 1`.
pub fn majority(nodes: usize) -> usize {
    nodes / 2 + 1
}

/// Clock drift allowance for a lease: 1 % of the lease plus 2 ms (Redlock reference).
pub fn drift(lease: Duration) -> Duration {
    lease / 100 + Duration::from_millis(2)
}

/// Validity left of a grant: `lease - elapsed - drift`, or `None` when nothing is left.
///
/// `elapsed` is measured on a monotonic clock from the moment the first request was sent.
pub fn validity(lease: Duration, elapsed: Duration) -> Option<Duration> {
    lease
        .checked_sub(elapsed)
        .and_then(|v| v.checked_sub(drift(lease)))
        .filter(|v| !v.is_zero())
}

/// The outcome of counting votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// A majority said yes.
    Granted,
    /// Enough definite "no" answers that a majority is impossible.
    Refused,
    /// No majority, but some nodes did not answer: the result is unknown.
    Undecided,
}

/// Counts `yes` and `no` votes out of `nodes` (the rest failed or timed out).
pub fn tally(nodes: usize, yes: usize, no: usize) -> Tally {
    let need = majority(nodes);
    if yes >= need {
        Tally::Granted
    } else if nodes.saturating_sub(no) < need {
        Tally::Refused
    } else {
        Tally::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majorities() {
        assert_eq!(majority(1), 1);
        assert_eq!(majority(2), 2);
        assert_eq!(majority(3), 2);
        assert_eq!(majority(5), 3);
    }

    #[test]
    fn validity_subtracts_elapsed_and_drift() {
        let lease = Duration::from_millis(10_000);
        assert_eq!(drift(lease), Duration::from_millis(102));
        assert_eq!(
            validity(lease, Duration::from_millis(100)),
            Some(Duration::from_millis(9_798))
        );
        assert_eq!(validity(lease, Duration::from_millis(9_898)), None);
        assert_eq!(validity(lease, Duration::from_secs(11)), None);
        assert_eq!(validity(Duration::from_millis(1), Duration::ZERO), None);
    }

    #[test]
    fn tally_distinguishes_refused_from_unknown() {
        assert_eq!(tally(5, 3, 0), Tally::Granted);
        assert_eq!(tally(5, 2, 3), Tally::Refused);
        assert_eq!(tally(5, 2, 1), Tally::Undecided);
        assert_eq!(tally(1, 0, 1), Tally::Refused);
        assert_eq!(tally(1, 0, 0), Tally::Undecided);
    }
}
