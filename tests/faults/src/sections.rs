//! Critical sections rebuilt from holders' reports, and the checkers over them: overlapping
//! intervals (the fleet's [`find_overlaps`], the one interval checker) and fencing-token order.
//! Lost updates are counted by the [`FencedResource`](crate::FencedResource) itself.

use redlatch_fleet::{find_overlaps, Interval};

use crate::events::Event;
use crate::fenced::Answer;

/// One critical section of one holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The holder's id.
    pub holder: String,
    /// The holder's section number.
    pub seq: u64,
    /// Its fencing token (0 when not fenced).
    pub fence: u64,
    /// When the lock was granted (shared monotonic clock, ns).
    pub acquired_ns: u64,
    /// When the holder began releasing; `None` while open (or when the holder died in it).
    pub released_ns: Option<u64>,
    /// The resource's answer to the section's READ, if it got one.
    pub read: Option<Answer>,
    /// The resource's answer to the section's WRITE, if it got one.
    pub wrote: Option<Answer>,
    /// The release's outcome: `Some(None)` released, `Some(Some(kind))` failed.
    pub release: Option<Option<String>>,
    /// When the library reported the hold lost, if it did.
    pub lost_ns: Option<u64>,
}

impl Section {
    /// The section as an interval for the overlap checker. An open section (its holder was
    /// killed or paused in it) ends at `end_of_open`; the token names holder, section and fence.
    pub fn interval(&self, end_of_open: u64) -> Interval {
        Interval {
            acquired_ns: self.acquired_ns,
            released_ns: self.released_ns.unwrap_or(end_of_open.max(self.acquired_ns)),
            token: format!("{}#{} fence {}", self.holder, self.seq, self.fence),
        }
    }
}

/// Rebuilds the sections of holder `holder` from its events, in order.
pub fn sections_from(holder: &str, events: &[Event]) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    for event in events {
        let find = |sections: &mut Vec<Section>, seq: u64| -> Option<usize> {
            sections.iter().rposition(|s| s.seq == seq)
        };
        match event {
            Event::Acquired { at, seq, fence } => sections.push(Section {
                holder: holder.to_string(),
                seq: *seq,
                fence: *fence,
                acquired_ns: *at,
                released_ns: None,
                read: None,
                wrote: None,
                release: None,
                lost_ns: None,
            }),
            Event::Read { seq, answer, .. } => {
                if let Some(i) = find(&mut sections, *seq) {
                    sections[i].read = Some(*answer);
                }
            }
            Event::Wrote { seq, answer, .. } => {
                if let Some(i) = find(&mut sections, *seq) {
                    sections[i].wrote = Some(*answer);
                }
            }
            Event::Releasing { at, seq } => {
                if let Some(i) = find(&mut sections, *seq) {
                    sections[i].released_ns = Some(*at);
                }
            }
            Event::Released { seq, error, .. } => {
                if let Some(i) = find(&mut sections, *seq) {
                    sections[i].release = Some(error.clone());
                }
            }
            Event::Lost { at, seq } => {
                if let Some(i) = find(&mut sections, *seq) {
                    sections[i].lost_ns.get_or_insert(*at);
                }
            }
            Event::Ready | Event::Done | Event::AcquireFailed { .. } => {}
        }
    }
    sections
}

/// Every pair of sections that held the lock at once (see [`find_overlaps`]); open sections
/// end at `end_of_open`.
pub fn overlaps(sections: &[Section], end_of_open: u64) -> Vec<String> {
    let intervals: Vec<Interval> = sections.iter().map(|s| s.interval(end_of_open)).collect();
    find_overlaps(&intervals)
}

/// Fencing tokens must rise with grant order: sorted by acquire time, each section's token is
/// higher than every earlier one's (sections with token 0, unfenced, are skipped). Returns
/// every violation.
pub fn token_order_violations(sections: &[Section]) -> Vec<String> {
    let mut fenced: Vec<&Section> = sections.iter().filter(|s| s.fence != 0).collect();
    fenced.sort_by_key(|s| (s.acquired_ns, s.fence));
    let mut highest: Option<&Section> = None;
    let mut violations = Vec::new();
    for s in fenced {
        if let Some(h) = highest {
            if s.fence <= h.fence {
                violations.push(format!(
                    "fencing token went back: {}#{} acquired at {} ns got token {}, after {}#{} got {} at {} ns",
                    s.holder, s.seq, s.acquired_ns, s.fence, h.holder, h.seq, h.fence, h.acquired_ns
                ));
                continue;
            }
        }
        highest = Some(s);
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquired(at: u64, seq: u64, fence: u64) -> Event {
        Event::Acquired { at, seq, fence }
    }

    #[test]
    fn sections_are_rebuilt_and_open_ones_end_at_the_given_time() {
        let events = [
            Event::Ready,
            acquired(10, 1, 4),
            Event::Read {
                at: 11,
                seq: 1,
                answer: Answer::Ok(0),
            },
            Event::Wrote {
                at: 12,
                seq: 1,
                answer: Answer::Ok(0),
            },
            Event::Releasing { at: 13, seq: 1 },
            Event::Released {
                at: 14,
                seq: 1,
                error: None,
            },
            acquired(20, 2, 6),
            Event::Lost { at: 25, seq: 2 },
        ];
        let s = sections_from("h", &events);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].released_ns, s[0].release.clone()), (Some(13), Some(None)));
        assert_eq!(s[0].wrote, Some(Answer::Ok(0)));
        assert_eq!((s[1].released_ns, s[1].lost_ns), (None, Some(25)));
        assert_eq!(s[1].interval(30).released_ns, 30);
        assert!(overlaps(&s, 30).is_empty());
        assert!(token_order_violations(&s).is_empty());
    }

    #[test]
    fn overlaps_and_tokens_going_back_are_found() {
        let mut a = sections_from("a", &[acquired(10, 1, 5), Event::Releasing { at: 50, seq: 1 }]);
        let b = sections_from("b", &[acquired(30, 1, 2), Event::Releasing { at: 60, seq: 1 }]);
        a.extend(b);
        assert_eq!(overlaps(&a, 100).len(), 1);
        let found = token_order_violations(&a);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].contains("b#1") && found[0].contains("token 2"),
            "{found:?}"
        );
    }
}
