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

/// The rule that makes a quorum a quorum: its nodes are independent servers (Redis docs,
/// "Distributed Locks with Redis": N masters "totally independent"). `labels` are the nodes'
/// `host:port` from their URLs: a node given twice would let one server cast two votes, so a
/// majority could be one server. The wasm entry applies it to its host transports' labels
/// (`host:port` from the adapters, else the caller's) and refuses one transport object given
/// twice; the native transports also tell servers apart by identity (`native/independence.rs`).
///
/// # Errors
/// `InvalidArgument` naming the node given twice.
pub fn independent(labels: &[&str]) -> crate::Result<()> {
    for (i, label) in labels.iter().enumerate() {
        if labels[..i].contains(label) {
            return Err(crate::Error::invalid(format!(
                "a quorum's nodes must be independent servers: {label} is given more than once"
            )));
        }
    }
    Ok(())
}

/// The connect-time rule of every client: `Ok` when a majority of the nodes labelled `labels`
/// answered `PING` (`pings[i]` is node `i`'s answer); else the error `Client::connect` gives.
/// One node: its own error kind, named by the node. More: `Quorum`, listing each failure
/// (`host:port: why`) and carrying every node's outcome; `InvalidArgument` (the same text and
/// outcomes) when a failure is one (a URL naming a database the server lacks, a node that
/// reached another node's server), even if a majority answered: a wrong URL, which the first
/// call of a lazily connected client reports as such too.
///
/// # Errors
/// As above, when fewer than a majority answered or a node's failure is InvalidArgument.
pub fn enough_answered(labels: &[&str], pings: Vec<crate::Result<()>>) -> crate::Result<()> {
    use crate::{Error, ErrorKind, NodeOutcome};
    let answered = pings.iter().filter(|p| p.is_ok()).count();
    // A wrong URL or a node that is another's server is refused even when a majority
    // answered: the client would run with a node that never votes.
    let invalid = pings
        .iter()
        .any(|p| matches!(p, Err(e) if e.kind() == ErrorKind::InvalidArgument));
    if answered >= majority(labels.len()) && !invalid {
        return Ok(());
    }
    // Each error named by its node, unless its message already starts with the node.
    let named = |label: &str, e: &Error| {
        let why = e.message();
        if why.starts_with(label) {
            why.to_owned()
        } else {
            format!("{label}: {why}")
        }
    };
    if labels.len() == 1 {
        let e = pings
            .into_iter()
            .find_map(|p| p.err())
            .unwrap_or_else(|| Error::connection("unreachable"));
        let named = Error::new(e.kind(), named(labels[0], &e));
        // A refused password stays one (a user trial of stop 45: `Client::connect` lost it,
        // where the first call of a lazily connected client kept it).
        return Err(if e.is_permanent() {
            named.permanently()
        } else {
            named
        });
    }
    let detail: Vec<String> = labels
        .iter()
        .zip(&pings)
        .filter_map(|(label, p)| p.as_ref().err().map(|e| named(label, e)))
        .collect();
    let nodes = labels
        .iter()
        .zip(&pings)
        .map(|(label, p)| NodeOutcome {
            node: (*label).to_owned(),
            result: p.as_ref().map(|_| ()).map_err(|e| e.message().to_owned()),
        })
        .collect();
    let kind = if invalid {
        ErrorKind::InvalidArgument
    } else {
        ErrorKind::Quorum
    };
    let error = Error::new(
        kind,
        format!(
            "only {answered} of {} nodes answered: {}",
            labels.len(),
            detail.join("; ")
        ),
    )
    .with_nodes(nodes);
    // Too many nodes refuse this client's settings (a password) for a majority ever to answer.
    let refusing = pings
        .iter()
        .filter(|p| p.as_ref().is_err_and(Error::is_permanent))
        .count();
    Err(if labels.len() - refusing < majority(labels.len()) {
        error.permanently()
    } else {
        error
    })
}

/// The nodes of `outcomes` that did not grant, each with why (`a:1: why; b:2: why`), for the
/// message of a quorum error: its node list has the same, but a reader of the message alone (a
/// log line, a traceback) saw only "0 of 3 nodes granted" (a user trial of stop 45).
pub(crate) fn not_granted(outcomes: &[crate::NodeOutcome]) -> String {
    outcomes
        .iter()
        .filter_map(|o| {
            let why = o.result.as_ref().err()?;
            // Connection errors name their node already.
            Some(if why.contains(o.node.as_str()) {
                why.clone()
            } else {
                format!("{}: {why}", o.node)
            })
        })
        .collect::<Vec<_>>()
        .join("; ")
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

    #[test]
    fn a_node_given_twice_is_no_quorum() {
        assert!(independent(&["a:1", "b:2", "c:3"]).is_ok());
        assert!(independent(&["a:1"]).is_ok());
        let e = independent(&["a:1", "b:2", "a:1"]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert_eq!(
            e.message(),
            "a quorum's nodes must be independent servers: a:1 is given more than once"
        );
    }

    #[test]
    fn connect_needs_a_majority_and_names_each_failure_once() {
        use crate::{Error, ErrorKind};
        let down = || Err(Error::connection("refused"));
        assert!(enough_answered(&["a:1", "b:2", "c:3"], vec![Ok(()), Ok(()), down()]).is_ok());
        let one = enough_answered(&["a:1"], vec![down()]).unwrap_err();
        assert_eq!(
            (one.kind(), one.message()),
            (ErrorKind::Connection, "a:1: refused")
        );
        let named = enough_answered(&["a:1"], vec![Err(Error::connection("a:1: refused"))]);
        assert_eq!(named.unwrap_err().message(), "a:1: refused");
        let few = enough_answered(&["a:1", "b:2", "c:3"], vec![Ok(()), down(), down()]).unwrap_err();
        assert_eq!(few.kind(), ErrorKind::Quorum);
        assert_eq!(
            few.message(),
            "only 1 of 3 nodes answered: b:2: refused; c:3: refused"
        );
        assert_eq!(few.nodes().len(), 3);
        // A user trial of stop 39: a quorum of URLs naming a database the servers lack was a
        // Quorum error at connect, where a lazily connected client's first call is InvalidArgument.
        let lacking = || Err(Error::invalid("no database of the URL's number"));
        let wrong = enough_answered(&["a:1", "b:2", "c:3"], vec![Ok(()), lacking(), down()]).unwrap_err();
        assert_eq!(wrong.kind(), ErrorKind::InvalidArgument, "{wrong}");
        assert_eq!(wrong.nodes().len(), 3);
        // ...even when a majority answered: that node would never vote.
        let one_wrong = enough_answered(&["a:1", "b:2", "c:3"], vec![Ok(()), lacking(), Ok(())]).unwrap_err();
        assert_eq!(one_wrong.kind(), ErrorKind::InvalidArgument, "{one_wrong}");
        assert_eq!(
            one_wrong.message(),
            "only 2 of 3 nodes answered: b:2: no database of the URL's number"
        );
    }

    #[test]
    fn a_refused_password_at_connect_stays_permanent() {
        // A Rust user trial of stop 45: `Client::connect` with a wrong password was not
        // `is_permanent()`, where the first call of a lazily connected client was.
        use crate::{Error, ErrorKind};
        let refused = || Err(Error::auth_refused());
        let one = enough_answered(&["a:1"], vec![refused()]).unwrap_err();
        assert_eq!(one.kind(), ErrorKind::Connection);
        assert!(one.is_permanent(), "{one}");
        let most = enough_answered(&["a:1", "b:2", "c:3"], vec![Ok(()), refused(), refused()]).unwrap_err();
        assert!(most.is_permanent(), "{most}");
        // One node refusing and one down: the down one may come back and make a majority.
        let down = Err(Error::connection("refused"));
        let some = enough_answered(&["a:1", "b:2", "c:3"], vec![Ok(()), refused(), down]).unwrap_err();
        assert!(!some.is_permanent(), "{some}");
    }
}
