//! What a holder process reports, one line per event on its stdout: written by the
//! `redlatch-fault-holder` binary, parsed by [`crate::holder::Holder`]. Times are
//! [`monotonic_ns`](redlatch_fleet::monotonic_ns), the clock all processes share.
//!
//! ```text
//! ready                      connected, about to start
//! A <ns> <seq> <fence>       section <seq> acquired (fence 0 when the lock is not fenced)
//! I <ns> <seq> ok|stale <n>  the resource's answer to READ (value, or the highest token)
//! W <ns> <seq> ok|stale <n>  the resource's answer to WRITE
//! R <ns> <seq>               about to release (the section's end)
//! D <ns> <seq> ok|<Kind>     the release's outcome (an ErrorKind name on failure)
//! L <ns> <seq>               the library reported the hold lost
//! X <ns> <Kind>              an acquire failed (the holder tries again)
//! done                       finished (sections done or stdin closed)
//! ```

use crate::fenced::Answer;

/// One line of a holder's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Connected, about to start.
    Ready,
    /// Section `seq` acquired the lock with fencing token `fence` (0 = not fenced).
    Acquired {
        /// When.
        at: u64,
        /// The holder's section number, from 1.
        seq: u64,
        /// The fencing token.
        fence: u64,
    },
    /// The resource answered the section's READ.
    Read {
        /// When.
        at: u64,
        /// Section.
        seq: u64,
        /// The answer.
        answer: Answer,
    },
    /// The resource answered the section's WRITE.
    Wrote {
        /// When.
        at: u64,
        /// Section.
        seq: u64,
        /// The answer.
        answer: Answer,
    },
    /// About to release: the end of the critical section.
    Releasing {
        /// When.
        at: u64,
        /// Section.
        seq: u64,
    },
    /// The release's outcome: `None` = released, `Some(kind)` = the error kind's name.
    Released {
        /// When.
        at: u64,
        /// Section.
        seq: u64,
        /// The error kind, if the release failed.
        error: Option<String>,
    },
    /// The library reported section `seq`'s hold lost.
    Lost {
        /// When.
        at: u64,
        /// Section.
        seq: u64,
    },
    /// An acquire failed with this error kind.
    AcquireFailed {
        /// When.
        at: u64,
        /// The error kind's name.
        kind: String,
    },
    /// Finished.
    Done,
}

fn answer_text(answer: Answer) -> String {
    match answer {
        Answer::Ok(n) => format!("ok {n}"),
        Answer::Stale(n) => format!("stale {n}"),
    }
}

impl Event {
    /// The event as one line (without the newline).
    pub fn to_line(&self) -> String {
        match self {
            Event::Ready => "ready".into(),
            Event::Acquired { at, seq, fence } => format!("A {at} {seq} {fence}"),
            Event::Read { at, seq, answer } => format!("I {at} {seq} {}", answer_text(*answer)),
            Event::Wrote { at, seq, answer } => format!("W {at} {seq} {}", answer_text(*answer)),
            Event::Releasing { at, seq } => format!("R {at} {seq}"),
            Event::Released { at, seq, error } => {
                format!("D {at} {seq} {}", error.as_deref().unwrap_or("ok"))
            }
            Event::Lost { at, seq } => format!("L {at} {seq}"),
            Event::AcquireFailed { at, kind } => format!("X {at} {kind}"),
            Event::Done => "done".into(),
        }
    }

    /// Parses one line.
    ///
    /// # Errors
    /// A message naming the line.
    pub fn parse(line: &str) -> Result<Event, String> {
        let bad = || format!("bad holder line {line:?}");
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).ok_or_else(bad);
        let answer = || -> Result<Answer, String> {
            match f.get(3).copied() {
                Some("ok") => Ok(Answer::Ok(num(4)?)),
                Some("stale") => Ok(Answer::Stale(num(4)?)),
                _ => Err(bad()),
            }
        };
        let word = |i: usize| f.get(i).map(|s| (*s).to_string()).ok_or_else(bad);
        Ok(match f.first().copied() {
            Some("ready") => Event::Ready,
            Some("done") => Event::Done,
            Some("A") => Event::Acquired {
                at: num(1)?,
                seq: num(2)?,
                fence: num(3)?,
            },
            Some("I") => Event::Read {
                at: num(1)?,
                seq: num(2)?,
                answer: answer()?,
            },
            Some("W") => Event::Wrote {
                at: num(1)?,
                seq: num(2)?,
                answer: answer()?,
            },
            Some("R") => Event::Releasing {
                at: num(1)?,
                seq: num(2)?,
            },
            Some("D") => {
                let outcome = word(3)?;
                Event::Released {
                    at: num(1)?,
                    seq: num(2)?,
                    error: (outcome != "ok").then_some(outcome),
                }
            }
            Some("L") => Event::Lost {
                at: num(1)?,
                seq: num(2)?,
            },
            Some("X") => Event::AcquireFailed {
                at: num(1)?,
                kind: word(2)?,
            },
            _ => return Err(bad()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips() {
        let events = [
            Event::Ready,
            Event::Acquired {
                at: 1,
                seq: 2,
                fence: 3,
            },
            Event::Read {
                at: 4,
                seq: 2,
                answer: Answer::Ok(7),
            },
            Event::Wrote {
                at: 5,
                seq: 2,
                answer: Answer::Stale(9),
            },
            Event::Releasing { at: 6, seq: 2 },
            Event::Released {
                at: 7,
                seq: 2,
                error: None,
            },
            Event::Released {
                at: 7,
                seq: 2,
                error: Some("NotOwned".into()),
            },
            Event::Lost { at: 8, seq: 2 },
            Event::AcquireFailed {
                at: 9,
                kind: "Connection".into(),
            },
            Event::Done,
        ];
        for event in events {
            assert_eq!(Event::parse(&event.to_line()), Ok(event.clone()), "{event:?}");
        }
        assert!(Event::parse("A 1 x 3").is_err());
        assert!(Event::parse("I 1 2 maybe 3").is_err());
        assert!(Event::parse("").is_err());
    }
}
