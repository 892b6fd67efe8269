//! Timers of the local engine: the core's sleeps (every Redis call races one: the network
//! timeout), kept in one ordered map per thread and served by a single unref'd JavaScript
//! timer set for the earliest deadline. Most sleeps end dropped, not fired (the reply came
//! first), so the JavaScript timer is only moved when a new deadline is earlier than the one
//! it is set for; when it fires early for a deadline that was dropped, it is set again for
//! the next one.

use super::host::{self, Out};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

#[derive(Default)]
struct State {
    /// Pending sleeps by (deadline, id).
    pending: BTreeMap<(Instant, u64), Waker>,
    next_id: u64,
    /// The deadline the JavaScript timer is set for.
    armed: Option<Instant>,
}

/// The sleeps of one thread.
#[derive(Default)]
pub(crate) struct Timers {
    state: Mutex<State>,
}

impl Timers {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The JavaScript timer fired: wakes every sleep that is due and sets the timer again.
    pub(crate) fn fire(&self) {
        let now = Instant::now();
        let mut state = self.state();
        state.armed = None;
        while let Some(entry) = state.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            entry.remove().wake();
        }
        if let Some(&(deadline, _)) = state.pending.keys().next() {
            arm(&mut state, deadline, now);
        }
    }
}

/// Sets the JavaScript timer for `deadline` unless it is set for an earlier one already.
fn arm(state: &mut State, deadline: Instant, now: Instant) {
    if state.armed.is_some_and(|armed| armed <= deadline) {
        return;
    }
    state.armed = Some(deadline);
    // Whole ms, rounded up: setTimeout fires no earlier than asked.
    let ms = deadline.saturating_duration_since(now).as_micros().div_ceil(1000) as f64;
    host::push(Out::Timer(ms));
}

/// A sleep until `deadline` (the local runtime's `sleep`).
pub(crate) struct Sleep {
    timers: Arc<Timers>,
    deadline: Instant,
    key: Option<(Instant, u64)>,
}

impl Sleep {
    pub(crate) fn new(timers: Arc<Timers>, duration: Duration) -> Sleep {
        let now = Instant::now();
        let deadline = now
            .checked_add(duration)
            .unwrap_or(now + Duration::from_secs(86_400 * 365 * 100));
        Sleep {
            timers,
            deadline,
            key: None,
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = Instant::now();
        let this = &mut *self;
        let mut state = this.timers.state();
        if now >= this.deadline {
            if let Some(key) = this.key.take() {
                state.pending.remove(&key);
            }
            return Poll::Ready(());
        }
        let key = match this.key {
            Some(key) => key,
            None => {
                state.next_id += 1;
                let key = (this.deadline, state.next_id);
                this.key = Some(key);
                key
            }
        };
        state.pending.insert(key, cx.waker().clone());
        arm(&mut state, this.deadline, now);
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.timers.state().pending.remove(&key);
        }
    }
}
