//! One renewal scheduler per client for every hold it has.
//!
//! Holds acquired without a lease are renewed every `watchdog_timeout / 3` back to
//! `watchdog_timeout` (Redisson's LockRenewalScheduler), up to 100 holds per script call.
//! Fixed-lease holds are tracked too, only to report loss when their validity runs out.
//!
//! Loss rules: a renewal that a majority of nodes definitely refuses (key gone or taken) fires
//! the hold's lost signal at once; transient errors are retried quickly until the local
//! validity deadline passes, then the signal fires. A hold is unregistered *before* its release
//! is sent, and results for unregistered holds are ignored, so a renewal racing a release
//! never reports a false loss (and the token/owner check in the script means it cannot extend
//! someone else's lock).
//!
//! The task holds only a weak reference to the client between rounds and exits when no holds
//! remain or the client is gone.

use super::signal::LostSignal;
use super::Engine;
use crate::protocol::quorum::{self, Tally};
use crate::protocol::reply;
use crate::protocol::request::{self, Holder};
use crate::protocol::timing;
use futures::future::select;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Holds renewed per script call (Redisson `lockWatchdogBatchSize`).
const BATCH: usize = 100;

struct Entry {
    name: String,
    holder: Holder,
    renew: bool,
    due: Duration,
    deadline: Duration,
    signal: Arc<LostSignal>,
}

#[derive(Default)]
struct State {
    entries: HashMap<u64, Entry>,
    next_id: u64,
    running: bool,
}

#[derive(Default)]
pub(crate) struct Watchdog {
    state: Mutex<State>,
    wake: event_listener::Event,
}

impl Watchdog {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-update of plain data.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tracks a hold. `renew` = watchdog mode; `deadline` = end of its local validity.
    pub(crate) fn register(
        &self,
        engine: &Arc<Engine>,
        name: &str,
        holder: &Holder,
        renew: bool,
        deadline: Duration,
        signal: Arc<LostSignal>,
    ) -> u64 {
        let period = timing::renewal_period(engine.config.watchdog_timeout);
        let now = engine.runtime.now();
        let (id, start) = {
            let mut st = self.state();
            st.next_id += 1;
            let id = st.next_id;
            st.entries.insert(
                id,
                Entry {
                    name: name.to_owned(),
                    holder: holder.clone(),
                    renew,
                    due: now + period,
                    deadline,
                    signal,
                },
            );
            let start = !st.running;
            st.running = true;
            (id, start)
        };
        if start {
            engine.runtime.spawn(Box::pin(run(Arc::downgrade(engine))));
        } else {
            self.wake.notify(1);
        }
        id
    }

    /// Stops tracking a hold (release or loss); returns its validity deadline if it was tracked.
    pub(crate) fn unregister(&self, id: u64) -> Option<Duration> {
        self.state().entries.remove(&id).map(|e| e.deadline)
    }

    /// Moves a hold's validity deadline (after a successful extend).
    pub(crate) fn set_deadline(&self, id: u64, deadline: Duration) {
        if let Some(e) = self.state().entries.get_mut(&id) {
            e.deadline = deadline;
        }
        self.wake.notify(1);
    }

    /// Number of holds tracked (tests and diagnostics).
    pub(crate) fn len(&self) -> usize {
        self.state().entries.len()
    }
}

type Due = (u64, String, Holder);

async fn run(weak: Weak<Engine>) {
    loop {
        let Some(engine) = weak.upgrade() else { return };
        let runtime = engine.runtime.clone();
        let now = runtime.now();
        let mut expired = Vec::new();
        let (due, next, listener) = {
            let mut st = engine.watchdog.state();
            st.entries.retain(|_, e| {
                let keep = e.deadline > now;
                if !keep {
                    expired.push((e.name.clone(), e.signal.clone()));
                }
                keep
            });
            if st.entries.is_empty() {
                st.running = false;
                drop(st);
                report_lost(expired, "its validity ran out");
                return;
            }
            let due: Vec<Due> = st
                .entries
                .iter()
                .filter(|(_, e)| e.renew && e.due <= now)
                .map(|(id, e)| (*id, e.name.clone(), e.holder.clone()))
                .collect();
            let next = st
                .entries
                .values()
                .map(|e| {
                    if e.renew {
                        e.due.min(e.deadline)
                    } else {
                        e.deadline
                    }
                })
                .min()
                .unwrap_or(now);
            (due, next, engine.watchdog.wake.listen())
        };
        report_lost(expired, "its validity ran out");
        if !due.is_empty() {
            for chunk in due.chunks(BATCH) {
                renew_chunk(&engine, chunk).await;
            }
            continue;
        }
        drop(engine);
        let pause = next.saturating_sub(now).max(Duration::from_millis(1));
        let _ = select(runtime.sleep(pause), listener).await;
    }
}

fn report_lost(lost: Vec<(String, Arc<LostSignal>)>, why: &str) {
    for (name, signal) in lost {
        if signal.fire() {
            tracing::warn!(lock = %name, "lock lost: {why}");
        }
    }
}

async fn renew_chunk(engine: &Arc<Engine>, chunk: &[Due]) {
    let lease = engine.config.watchdog_timeout;
    let lease_ms = lease.as_millis().min(u128::from(timing::MAX_DURATION_MS)) as u64;
    let request = request::renew_batch(lease_ms, chunk.iter().map(|(_, n, h)| (n.as_str(), h)));
    let started = engine.runtime.now();
    let replies = engine.nodes.broadcast(&request, engine.node_timeout(lease)).await;
    let now = engine.runtime.now();
    let validity = quorum::validity(lease, now - started);
    let flags: Vec<Option<Vec<bool>>> = replies
        .iter()
        .map(|r| match r {
            Ok(reply) => reply::decode_renew_batch(reply, chunk.len()).ok(),
            Err(e) => {
                tracing::debug!(error = %e, "watchdog renewal failed on a node");
                None
            }
        })
        .collect();
    let period = timing::renewal_period(lease);
    let retry = (period / 4).min(Duration::from_secs(1));
    let mut lost = Vec::new();
    {
        let mut st = engine.watchdog.state();
        for (i, (id, name, _)) in chunk.iter().enumerate() {
            let yes = flags.iter().filter(|f| f.as_ref().is_some_and(|f| f[i])).count();
            let no = flags.iter().filter(|f| f.as_ref().is_some_and(|f| !f[i])).count();
            let Some(entry) = st.entries.get_mut(id) else {
                continue;
            };
            match (quorum::tally(engine.nodes.len(), yes, no), validity) {
                (Tally::Granted, Some(v)) => {
                    entry.deadline = started + v;
                    entry.due = now + period;
                    tracing::trace!(lock = %name, "renewed");
                }
                (Tally::Refused, _) => {
                    if let Some(e) = st.entries.remove(id) {
                        lost.push((e.name, e.signal));
                    }
                }
                _ => entry.due = now + retry,
            }
        }
    }
    report_lost(lost, "renewal found it gone or taken");
}
