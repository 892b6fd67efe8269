//! The line of one client's waiters for one exclusive lock (lease and reentrant kinds): every
//! wake-up goes to the waiter at its head, which keeps its place until its acquire ends.
//!
//! The transports wake one local waiter per release message, as Redisson's `LockPubSub` does
//! (native/pubsub.rs), but not a chosen one: a waiter whose attempt lost a race (the lock was
//! taken between the release and its attempt) went back to the end of the transport's queue,
//! so the same waiter could lose many rounds in a row; with 8 contenders in one Node process
//! the slowest 0.1 % of acquires waited 10-25 ms, against 0.2 ms for half of them. Here a
//! waiter joins the line once it starts to wait; a wake-up that reaches a waiter other than the
//! head is handed to the head, and the head tries. So one client's waiters get the lock in the
//! order they started waiting, and a release still costs one attempt (at most two: the next
//! waiter may act on the message its predecessor used, and then tries once in vain).
//!
//! The head leaves the line when its acquire ends. If it ended without the lock (its wait ran
//! out, it was cancelled, an error), the waiter after it tries at once: the lock may be free
//! and no message will say so. If it got the lock, the next waiter waits for that hold's
//! release message. The head also tries at each poll (`Config::poll_interval`), so a holder
//! that never publishes (redis-py) is seen as before; the waiters behind it let their polls
//! pass (acquire.rs `wait_turn`: trying on a poll would take a lock freed without a message
//! past the waiters ahead), except for a last try when their wait runs out.
//!
//! A new acquire of a lease lock that finds waiters of its client in the line takes the last
//! place without trying first: the releaser's own next acquire then waits its turn instead of
//! pausing for `Config::handoff_grace` and trying past the line (with 8 contenders in one
//! process, every acquire used to wait at least that pause, 2 ms; now each waits its turn,
//! about 7 hand-offs). Reentrant locks still try first: the owner may hold the lock already,
//! and queueing behind waiters that wait for that owner would never end.
//!
//! The order holds among one client's waiters; waiters of other clients and processes compete
//! as before (a client whose line is empty holds its next acquire back for
//! `Config::handoff_grace` after handing the lock to a waiter, who may be in another process).
//! Read/write locks keep waking their waiters as before (a write release lets all readers in),
//! fair locks have a channel per waiter, and semaphores and latches wait elsewhere
//! (waiting.rs).
//!
//! Three things let waiters past the line's order (each seen by a user trial to hold a waiter
//! far beyond its wait while the line kept order):
//! - a grant of a reentrant lock wakes the waiters of the same owner wherever they stand: they
//!   re-enter now, and the waiters ahead of them wait for that owner's release;
//! - once an attempt of any waiter in the line fails on an error, every waiter tries on its own
//!   until an attempt gets an answer (busy or granted), and errors count from when the line's
//!   first failed; a waiter without a wait that has not met them itself ends with the line's
//!   error once they persisted for a network timeout (its own attempt at a stalled server
//!   would take one more). So with Redis gone, waiters without a wait end one network timeout
//!   after the errors began, not one network timeout after another;
//! - a head whose acquire is not being polled (a future kept but parked, e.g. the losing branch
//!   of a `select!`) is moved to the end of the line once it has not run for two poll intervals
//!   (`Config::poll_interval`, at least 250 ms) plus, during an attempt, a network timeout.

use event_listener::Event;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::error::Error;

/// One client's lines, by channel (one per lock name).
#[derive(Default)]
pub(crate) struct Lines {
    lines: Mutex<HashMap<String, Line>>,
    /// Places alive in all lines: lets the acquire path skip the lines (a channel name and
    /// the lock) when nobody of this client waits, the usual case.
    places: AtomicUsize,
}

#[derive(Default)]
struct Line {
    turns: VecDeque<Arc<Turn>>,
    /// When the first of the errors that the line's attempts meet now began (the runtime's
    /// clock), and the latest of them; `None` once an attempt got an answer.
    erring: Option<(Duration, Error)>,
}

/// A waiter's state in its line.
#[derive(Default)]
struct Turn {
    /// The reentrant lock's owner this waiter acquires for (`None`: a lease lock).
    owner: Option<String>,
    /// At the head of the line.
    head: AtomicBool,
    /// The head should try now (a wake-up handed to it, or it became the head after a waiter
    /// that left without the lock).
    try_now: AtomicBool,
    /// Notified when `try_now` is set.
    event: Event,
    /// The waiter is attempting (or subscribing), not waiting.
    active: AtomicBool,
    /// When it last ran (ms of the runtime's clock).
    ran_ms: AtomicU64,
}

impl Turn {
    fn wake(&self) {
        self.try_now.store(true, Ordering::Release);
        self.event.notify(usize::MAX);
    }

    /// `true` when the waiter has not run for longer than its `patience` allows.
    fn stalled(&self, now: Duration, patience: Patience) -> bool {
        let limit = if self.active.load(Ordering::Acquire) {
            patience.waiting + patience.attempt
        } else {
            patience.waiting
        };
        let ran = Duration::from_millis(self.ran_ms.load(Ordering::Acquire));
        now.saturating_sub(ran) > limit
    }
}

/// How long a head may go without running before it counts as parked.
#[derive(Clone, Copy)]
pub(crate) struct Patience {
    /// While waiting: two poll intervals, at least 250 ms (a waiting head runs at least once
    /// per poll).
    pub(crate) waiting: Duration,
    /// Added during an attempt: the network timeout that bounds it.
    pub(crate) attempt: Duration,
}

/// A waiter's place in the line of `channel`; it leaves the line when dropped.
pub(crate) struct Place {
    lines: Arc<Lines>,
    channel: String,
    turn: Arc<Turn>,
    granted: bool,
    /// When it joined (the runtime's clock).
    joined: Duration,
}

impl Lines {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Line>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the line of `channel` at its end, at `now`; `owner`: the reentrant lock's owner
    /// the waiter acquires for.
    pub(crate) fn join(self: &Arc<Self>, channel: &str, owner: Option<&str>, now: Duration) -> Place {
        let turn = Arc::new(Turn {
            owner: owner.map(str::to_owned),
            active: AtomicBool::new(true),
            ran_ms: AtomicU64::new(as_ms(now)),
            ..Turn::default()
        });
        self.places.fetch_add(1, Ordering::SeqCst);
        let mut lines = self.lock();
        let line = lines.entry(channel.to_owned()).or_default();
        if line.turns.is_empty() {
            turn.head.store(true, Ordering::Release);
        }
        line.turns.push_back(turn.clone());
        Place {
            lines: self.clone(),
            channel: channel.to_owned(),
            turn,
            granted: false,
            joined: now,
        }
    }

    /// `owner` was granted the reentrant lock of `channel`: its waiters in the line re-enter now.
    pub(crate) fn wake_owner(&self, channel: &str, owner: &str) {
        if let Some(line) = self.lock().get(channel) {
            line.turns
                .iter()
                .filter(|t| t.owner.as_deref() == Some(owner))
                .for_each(|t| t.wake());
        }
    }
}

fn as_ms(at: Duration) -> u64 {
    u64::try_from(at.as_millis()).unwrap_or(u64::MAX)
}

impl Lines {
    /// Waiters in the line of `channel` (tests).
    #[cfg(all(test, feature = "native"))]
    pub(crate) fn len(&self, channel: &str) -> usize {
        self.lock().get(channel).map_or(0, |l| l.turns.len())
    }

    /// `true` when no waiter of this client is in any line.
    pub(crate) fn is_empty(&self) -> bool {
        self.places.load(Ordering::SeqCst) == 0
    }

    /// `true` when some waiter of this client is in the line of `channel`.
    pub(crate) fn has_waiters(&self, channel: &str) -> bool {
        self.lock().contains_key(channel)
    }
}

impl Place {
    /// `true` while this waiter is at the head of its line.
    pub(crate) fn is_head(&self) -> bool {
        self.turn.head.load(Ordering::Acquire)
    }

    /// Hands a wake-up this waiter received to the head of its line.
    pub(crate) fn pass_to_head(&self) {
        if let Some(head) = self.lines.lock().get(&self.channel).and_then(|l| l.turns.front()) {
            head.wake();
        }
    }

    /// Resolves when this waiter should try now: a wake-up handed to it (the head), it became
    /// the head after a waiter that left without the lock, its owner was granted the lock, or
    /// the line's attempts began to fail; at once if that happened since the last time it
    /// resolved.
    pub(crate) async fn woken(&self) {
        loop {
            let listener = self.turn.event.listen();
            if self.turn.try_now.swap(false, Ordering::AcqRel) {
                return;
            }
            listener.await;
        }
    }

    /// The waiter runs at `now`: it starts an attempt (`active`) or goes back to waiting.
    pub(crate) fn ran(&self, now: Duration, active: bool) {
        self.turn.ran_ms.store(as_ms(now), Ordering::Release);
        self.turn.active.store(active, Ordering::Release);
    }

    /// Moves a head that has not run within `patience` to the end of the line (a parked
    /// future would otherwise hold every waiter behind it); the new head tries at once.
    pub(crate) fn pass_parked_head(&self, now: Duration, patience: Patience) {
        let mut lines = self.lines.lock();
        let Some(line) = lines.get_mut(&self.channel) else {
            return;
        };
        let parked = line
            .turns
            .front()
            .is_some_and(|h| !Arc::ptr_eq(h, &self.turn) && h.stalled(now, patience));
        if !parked {
            return;
        }
        if let Some(head) = line.turns.pop_front() {
            head.head.store(false, Ordering::Release);
            line.turns.push_back(head);
        }
        if let Some(next) = line.turns.front() {
            next.head.store(true, Ordering::Release);
            next.wake();
        }
    }

    /// When the errors the line's attempts meet began, if they still do.
    pub(crate) fn erring_since(&self) -> Option<Duration> {
        let lines = self.lines.lock();
        lines.get(&self.channel)?.erring.as_ref().map(|(since, _)| *since)
    }

    /// The line's latest error once its errors, which began after this waiter joined the
    /// line, have persisted for `limit` at `now`.
    pub(crate) fn error_after(&self, now: Duration, limit: Duration) -> Option<Error> {
        let lines = self.lines.lock();
        let (since, error) = lines.get(&self.channel)?.erring.as_ref()?;
        (*since >= self.joined && now.saturating_sub(*since) >= limit).then(|| error.clone())
    }

    /// An attempt failed on `error`, errors persisting since `since`: if the line was not
    /// erring, every waiter in it tries on its own from now on.
    pub(crate) fn failed(&self, since: Duration, error: &Error) {
        let mut lines = self.lines.lock();
        let Some(line) = lines.get_mut(&self.channel) else {
            return;
        };
        match &mut line.erring {
            Some((_, latest)) => *latest = error.clone(),
            None => {
                line.erring = Some((since, error.clone()));
                line.turns.iter().for_each(|t| t.wake());
            }
        }
    }

    /// An attempt got an answer (busy or granted): the line waits in order again.
    pub(crate) fn answered(&self) {
        if let Some(line) = self.lines.lock().get_mut(&self.channel) {
            line.erring = None;
        }
    }

    /// This waiter got the lock: the next one waits for the release message.
    pub(crate) fn granted(&mut self) {
        self.granted = true;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.lines.places.fetch_sub(1, Ordering::SeqCst);
        let mut lines = self.lines.lock();
        let Some(line) = lines.get_mut(&self.channel) else {
            return;
        };
        let Some(at) = line.turns.iter().position(|t| Arc::ptr_eq(t, &self.turn)) else {
            return;
        };
        line.turns.remove(at);
        if at == 0 {
            if let Some(next) = line.turns.front() {
                next.head.store(true, Ordering::Release);
                if !self.granted {
                    next.wake();
                }
            }
        }
        if line.turns.is_empty() {
            lines.remove(&self.channel);
        }
    }
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/line.rs"]
mod tests;
