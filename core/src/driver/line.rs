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

use event_listener::Event;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One client's lines, by channel (one per lock name).
#[derive(Default)]
pub(crate) struct Lines {
    lines: Mutex<HashMap<String, VecDeque<Arc<Turn>>>>,
}

/// A waiter's state in its line.
#[derive(Default)]
struct Turn {
    /// At the head of the line.
    head: AtomicBool,
    /// The head should try now (a wake-up handed to it, or it became the head after a waiter
    /// that left without the lock).
    try_now: AtomicBool,
    /// Notified when `try_now` is set.
    event: Event,
}

impl Turn {
    fn wake(&self) {
        self.try_now.store(true, Ordering::Release);
        self.event.notify(usize::MAX);
    }
}

/// A waiter's place in the line of `channel`; it leaves the line when dropped.
pub(crate) struct Place {
    lines: Arc<Lines>,
    channel: String,
    turn: Arc<Turn>,
    granted: bool,
}

impl Lines {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, VecDeque<Arc<Turn>>>> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the line of `channel` at its end.
    pub(crate) fn join(self: &Arc<Self>, channel: &str) -> Place {
        let turn = Arc::new(Turn::default());
        let mut lines = self.lock();
        let line = lines.entry(channel.to_owned()).or_default();
        if line.is_empty() {
            turn.head.store(true, Ordering::Release);
        }
        line.push_back(turn.clone());
        Place {
            lines: self.clone(),
            channel: channel.to_owned(),
            turn,
            granted: false,
        }
    }
}

impl Lines {
    /// Waiters in the line of `channel` (tests).
    #[cfg(all(test, feature = "native"))]
    pub(crate) fn len(&self, channel: &str) -> usize {
        self.lock().get(channel).map_or(0, VecDeque::len)
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
        if let Some(head) = self.lines.lock().get(&self.channel).and_then(VecDeque::front) {
            head.wake();
        }
    }

    /// Resolves when this waiter (the head) should try now: a wake-up handed to it, or it
    /// became the head after a waiter that left without the lock; at once if that happened
    /// since the last time it resolved.
    pub(crate) async fn woken(&self) {
        loop {
            let listener = self.turn.event.listen();
            if self.turn.try_now.swap(false, Ordering::AcqRel) {
                return;
            }
            listener.await;
        }
    }

    /// This waiter got the lock: the next one waits for the release message.
    pub(crate) fn granted(&mut self) {
        self.granted = true;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut lines = self.lines.lock();
        let Some(line) = lines.get_mut(&self.channel) else {
            return;
        };
        let Some(at) = line.iter().position(|t| Arc::ptr_eq(t, &self.turn)) else {
            return;
        };
        line.remove(at);
        if at == 0 {
            if let Some(next) = line.front() {
                next.head.store(true, Ordering::Release);
                if !self.granted {
                    next.wake();
                }
            }
        }
        if line.is_empty() {
            lines.remove(&self.channel);
        }
    }
}

#[cfg(all(test, feature = "native"))]
#[path = "tests/line.rs"]
mod tests;
