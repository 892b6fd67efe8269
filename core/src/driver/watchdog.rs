//! One renewal scheduler per client for all its watchdog-mode holds.
//!
//! Holds acquired without a lease are renewed every `watchdog_timeout / 3` back to
//! `watchdog_timeout` (Redisson's LockRenewalScheduler), up to 100 holds per script call.
//! Renewals due within a quarter period are sent together, so holds acquired one after
//! another still share calls. Read holds of a read/write lock renew with one `rw_read_extend`
//! per lock and owner instead (their timeout keys; Redisson's ReadLockTask), sent alongside.
//!
//! Loss rules: a renewal that a majority of nodes definitely refuses (key gone or taken) fires
//! the hold's lost signal at once; transient errors are retried quickly, and if the hold's
//! validity deadline passes first the signal fires by itself (see `signal.rs`). A hold is
//! unregistered *before* its release is sent and results for unregistered holds are ignored,
//! so a renewal racing a release never reports a false loss (and the token/owner check in the
//! script means it cannot extend someone else's lock).
//!
//! The task is spawned with the first watchdog hold and parks (no timer) while there are
//! none. Between rounds it holds only a weak reference to the client, and the client's drop
//! wakes it so it can exit.

use super::signal::{HoldSignal, Validity};
use super::Engine;
use crate::error::Reason;
use crate::protocol::quorum::{self, Tally};
use crate::protocol::reply::{self, OwnershipReply};
use crate::protocol::request::{self, Holder};
use crate::protocol::timing;
use futures::future::select;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// Holds renewed per script call (Redisson `lockWatchdogBatchSize`).
const BATCH: usize = 100;

/// The due time of a hold whose renewal is in flight. Another of the owner's calls may set the
/// shared hash's TTL to a shorter lease meanwhile, after the renewal in Redis' order, and bring
/// the due time forward (`renew_sharing`); the renewal's answer must not then push it back a
/// whole period, nor move the validity past that shorter TTL (a user trial of the fix:
/// 8 of 29 runs lost the hold so).
const IN_FLIGHT: Duration = Duration::MAX;

struct Entry {
    name: String,
    holder: Holder,
    due: Duration,
    /// The last renewal got no answer that counts (an error, no majority): `due` is its retry,
    /// which waits its turn, not pulled forward with the renewals due soon (see `run`).
    retrying: bool,
    signal: Arc<HoldSignal>,
}

#[derive(Default)]
struct State {
    entries: HashMap<u64, Entry>,
    next_id: u64,
    started: bool,
    /// When the task will next look at the entries (`None` = parked until notified).
    next_wake: Option<Duration>,
    closed: bool,
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

    /// Starts renewing a watchdog-mode hold.
    pub(crate) fn register(
        &self,
        engine: &Arc<Engine>,
        name: &str,
        holder: &Holder,
        signal: Arc<HoldSignal>,
    ) -> u64 {
        let due = engine.runtime.now() + timing::renewal_period(engine.config.watchdog_timeout);
        let (id, spawn, notify) = {
            let mut st = self.state();
            st.next_id += 1;
            let id = st.next_id;
            st.entries.insert(
                id,
                Entry {
                    name: name.to_owned(),
                    holder: holder.clone(),
                    due,
                    retrying: false,
                    signal,
                },
            );
            let spawn = !st.started;
            st.started = true;
            // Wake the task only if it would otherwise sleep past this hold's first renewal.
            let notify = !spawn && st.next_wake.is_none_or(|w| w > due);
            if notify {
                st.next_wake = Some(due);
            }
            (id, spawn, notify)
        };
        if spawn {
            engine.runtime.spawn(Box::pin(run(Arc::downgrade(engine))));
        } else if notify {
            self.wake.notify(1);
        }
        id
    }

    /// Renews hold `id` by `at` at the latest: an extend in watchdog mode set its key's TTL
    /// to a lease that may end before the renewal that was due (the renewal then sets it back
    /// to the watchdog timeout).
    pub(crate) fn renew_by(&self, id: u64, at: Duration) {
        let notify = {
            let mut st = self.state();
            let Some(entry) = st.entries.get_mut(&id) else {
                return;
            };
            entry.due = entry.due.min(at);
            let notify = st.next_wake.is_none_or(|w| w > at);
            if notify {
                st.next_wake = Some(at);
            }
            notify
        };
        if notify {
            self.wake.notify(1);
        }
    }

    /// Renews by `at` at the latest every hold here that shares `validity`: another hold of
    /// their owner set the hash's TTL to a lease that may end before their renewal was due
    /// (`Engine::ttl_set_for_owner`). One pass over the holds, made only for a lease shorter
    /// than the watchdog timeout.
    pub(crate) fn renew_sharing(&self, validity: &Arc<Validity>, at: Duration) {
        let notify = {
            let mut st = self.state();
            let mut found = false;
            for entry in st.entries.values_mut().filter(|e| e.signal.shares(validity)) {
                entry.due = entry.due.min(at);
                found = true;
            }
            let notify = found && st.next_wake.is_none_or(|w| w > at);
            if notify {
                st.next_wake = Some(at);
            }
            notify
        };
        if notify {
            self.wake.notify(1);
        }
    }

    /// Stops renewing a hold (release or loss).
    pub(crate) fn unregister(&self, id: u64) {
        self.state().entries.remove(&id);
    }

    /// Number of holds renewed (tests and diagnostics).
    pub(crate) fn len(&self) -> usize {
        self.state().entries.len()
    }

    /// The client is going away: let the task exit.
    pub(crate) fn close(&self) {
        self.state().closed = true;
        self.wake.notify(usize::MAX);
    }
}

type Due = (u64, String, Holder);

async fn run(weak: Weak<Engine>) {
    loop {
        let Some(engine) = weak.upgrade() else { return };
        let runtime = engine.runtime.clone();
        let period = timing::renewal_period(engine.config.watchdog_timeout);
        let now = runtime.now();
        let (due, listener) = {
            let mut st = engine.watchdog.state();
            if st.closed {
                return;
            }
            // A hold past its validity is lost (this fires its signal): renewing it would keep
            // a key alive that its holder is told it lost; what Redis may still keep of it is
            // deleted (`clear_lost`).
            let mut lost = Vec::new();
            st.entries.retain(|_, e| {
                let keep = !e.signal.is_lost_at(now) && e.signal.is_held();
                if let (false, Some(reason)) = (keep, e.signal.lost_reason()) {
                    lost.push((e.name.clone(), e.holder.clone(), reason));
                }
                keep
            });
            clear_in_background(&engine, lost);
            let horizon = now + period / 4;
            // Marked in flight (`IN_FLIGHT`): a `renew_by` meanwhile lowers the mark, and the
            // renewal's answer then keeps that earlier due (see `renew_chunk`).
            let due: Vec<Due> = st
                .entries
                .iter_mut()
                // A retry is not sent early with them: a renewal that fails at once (Redis down,
                // a replica answering READONLY) would otherwise be sent again at once, since its
                // retry is due within the horizon (a user trial of stop 43: one core busy and
                // thousands of requests a second per hold until the loss).
                .filter(|(_, e)| e.due <= if e.retrying { now } else { horizon })
                .map(|(id, e)| {
                    e.due = IN_FLIGHT;
                    (*id, e.name.clone(), e.holder.clone())
                })
                .collect();
            st.next_wake = if due.is_empty() {
                st.entries.values().map(|e| e.due).min()
            } else {
                Some(now)
            };
            (due, engine.watchdog.wake.listen())
        };
        if !due.is_empty() {
            for chunk in due.chunks(BATCH) {
                renew_chunk(&engine, chunk).await;
            }
            continue;
        }
        let next_wake = engine.watchdog.state().next_wake;
        drop(engine);
        match next_wake {
            Some(at) => {
                let pause = at.saturating_sub(now).max(Duration::from_millis(1));
                let _ = select(runtime.sleep(pause), listener).await;
            }
            None => listener.await,
        }
    }
}

async fn renew_chunk(engine: &Arc<Engine>, chunk: &[Due]) {
    let lease = engine.config.watchdog_timeout;
    let lease_ms = lease.as_millis().min(u128::from(timing::MAX_DURATION_MS)) as u64;
    let started = engine.runtime.now();
    let outcomes = renewals(engine, chunk, lease_ms).await;
    let now = engine.runtime.now();
    let validity = quorum::validity(lease, now - started);
    let period = timing::renewal_period(lease);
    let retry = (period / 4).min(Duration::from_secs(1));
    let mut lost = Vec::new();
    {
        let mut st = engine.watchdog.state();
        for (i, (id, name, _)) in chunk.iter().enumerate() {
            let answers = || outcomes[i].iter().flatten().copied();
            let yes = answers().filter(|o| *o == OwnershipReply::Done).count();
            let no = answers().count() - yes;
            let taken = answers().any(|o| o == OwnershipReply::Taken);
            let Some(entry) = st.entries.get_mut(id) else {
                continue;
            };
            match (quorum::tally(engine.nodes.len(), yes, no), validity) {
                (Tally::Granted, Some(v)) => {
                    if entry.due == IN_FLIGHT {
                        entry.signal.set_deadline(started + v);
                    }
                    // Else a shorter TTL was set meanwhile (see `IN_FLIGHT`): the validity it
                    // set stands, and the renewal brought forward follows at once.
                    entry.due = entry.due.min(now + period);
                    entry.retrying = false;
                    tracing::trace!(lock = %name, "renewed");
                }
                (Tally::Refused, _) => {
                    if let Some(e) = st.entries.remove(id) {
                        let reason = if taken { Reason::Taken } else { Reason::Deleted };
                        lost.push((e.signal, reason, e.name, e.holder));
                    }
                }
                _ => {
                    entry.due = entry.due.min(now + retry);
                    entry.retrying = true;
                }
            }
        }
    }
    let mut clear = Vec::new();
    for (signal, reason, name, holder) in lost {
        signal.fire(reason, "renewal found it gone or taken");
        clear.push((name, holder, reason));
    }
    clear_in_background(engine, clear);
}

/// Deletes, in the background, what the lost holds `lost` (name, holder, reason) may have
/// left in Redis (see `release::clear_lost`: lease holds that expired, or a quorum's).
fn clear_in_background(engine: &Arc<Engine>, lost: Vec<(String, Holder, Reason)>) {
    for (name, holder, reason) in lost {
        if !super::release::leaves_a_key(engine, &holder, reason) {
            continue;
        }
        let runtime = engine.runtime.clone();
        let engine = engine.clone();
        let clear = async move { super::release::clear_lost(&engine, &name, &holder, reason).await };
        super::cleanup::spawn(&*runtime, Box::pin(clear));
    }
}

/// The renewal outcome of every hold of `chunk` on every node (`None`: no answer): one
/// `renew_batch` for the holds that renew in it, one read extend per (lock, owner) of the read
/// holds, all sent at once.
async fn renewals(engine: &Arc<Engine>, chunk: &[Due], lease_ms: u64) -> Vec<Vec<Option<OwnershipReply>>> {
    let timeout = engine.node_timeout(engine.config.watchdog_timeout);
    let in_batch: Vec<usize> = (0..chunk.len())
        .filter(|&i| chunk[i].2.renews_in_batch())
        .collect();
    // Read holds of one owner on one lock share one request: it renews all their keys.
    let mut singles: Vec<(&str, &Holder, Vec<usize>)> = Vec::new();
    for (i, (_, name, holder)) in chunk.iter().enumerate() {
        if holder.renews_in_batch() {
            continue;
        }
        match singles
            .iter_mut()
            .find(|(n, h, _)| *n == name.as_str() && *h == holder)
        {
            Some((_, _, members)) => members.push(i),
            None => singles.push((name.as_str(), holder, vec![i])),
        }
    }
    let batch = async {
        if in_batch.is_empty() {
            return Vec::new();
        }
        let holds = in_batch.iter().map(|&i| (chunk[i].1.as_str(), &chunk[i].2));
        let request = request::renew_batch(lease_ms, holds);
        let replies = engine.nodes.broadcast(&request, timeout).await;
        replies
            .iter()
            .map(|r| match r {
                Ok(reply) => reply::decode_renew_batch(reply, in_batch.len()).ok(),
                Err(e) => {
                    tracing::debug!(error = %e, "watchdog renewal failed on a node");
                    None
                }
            })
            .collect::<Vec<_>>()
    };
    let reads = futures::future::join_all(singles.iter().map(|(name, holder, _)| async move {
        let replies = engine
            .nodes
            .broadcast(&holder.extend(name, lease_ms), timeout)
            .await;
        replies
            .into_iter()
            .map(|r| match r.and_then(|r| reply::decode_extend(&r)) {
                Ok(outcome) => Some(outcome),
                Err(e) => {
                    tracing::debug!(lock = %name, error = %e, "read hold renewal failed on a node");
                    None
                }
            })
            .collect::<Vec<_>>()
    }));
    let (batch, reads) = futures::future::join(batch, reads).await;
    let mut out = vec![vec![None; engine.nodes.len()]; chunk.len()];
    for (node, answer) in batch.into_iter().enumerate() {
        if let Some(answer) = answer {
            for (k, &i) in in_batch.iter().enumerate() {
                out[i][node] = Some(answer[k]);
            }
        }
    }
    for ((_, _, members), per_node) in singles.iter().zip(reads) {
        for &i in members {
            out[i].clone_from(&per_node);
        }
    }
    out
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use crate::driver::acquire::acquire;
    use crate::driver::testing::{self, cmd, lease_spec, raw, rlock_spec, within};
    use crate::driver::{Config, End};
    use crate::error::Reason;
    use std::time::Duration;

    /// Renewed every 333 ms back to 1 s (the first renewal comes well before the validity
    /// would run out, even on a loaded machine).
    fn config() -> Config {
        Config {
            watchdog_timeout: Duration::from_secs(1),
            ..testing::config()
        }
    }

    #[tokio::test]
    async fn watchdog_holds_outlive_their_lease_until_released() {
        let s = testing::server();
        let engine = testing::engine(&[&s], config()).await;
        let mut conn = raw(&s).await;
        let lease = acquire(&engine, &lease_spec("w:1", None), Some(Duration::ZERO))
            .await
            .unwrap();
        let reentrant = acquire(
            &engine,
            &rlock_spec(&engine, "w:2", 1, None),
            Some(Duration::ZERO),
        )
        .await
        .unwrap();
        let fixed = acquire(
            &engine,
            &lease_spec("w:3", Some(Duration::from_secs(60))),
            Some(Duration::ZERO),
        )
        .await
        .unwrap();
        assert_eq!(engine.watchdog.len(), 2, "fixed leases are not renewed");
        // Two and a half watchdog timeouts: without renewals both keys would be gone.
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        for key in ["w:1", "w:2"] {
            assert_eq!(cmd::<i64>(&mut conn, &["EXISTS", key]).await, 1, "{key} renewed");
        }
        assert!(!lease.is_lost() && !reentrant.is_lost());
        lease.release().await.unwrap();
        reentrant.release().await.unwrap();
        fixed.release().await.unwrap();
        assert_eq!(engine.watchdog.len(), 0, "released holds are no longer renewed");
    }

    #[tokio::test]
    async fn a_renewal_that_finds_the_key_gone_or_taken_reports_the_loss() {
        let s = testing::server();
        let engine = testing::engine(&[&s], config()).await;
        let mut conn = raw(&s).await;
        let gone = acquire(&engine, &lease_spec("w:4", None), Some(Duration::ZERO))
            .await
            .unwrap();
        let taken = acquire(&engine, &lease_spec("w:5", None), Some(Duration::ZERO))
            .await
            .unwrap();
        let _: i64 = cmd(&mut conn, &["DEL", "w:4"]).await;
        let _: () = cmd(&mut conn, &["SET", "w:5", "another-token", "PX", "60000"]).await;
        let rt = engine.runtime.clone();
        assert_eq!(within(gone.signal.ended(&*rt)).await, End::Lost(Reason::Deleted));
        assert_eq!(within(taken.signal.ended(&*rt)).await, End::Lost(Reason::Taken));
        assert_eq!(engine.watchdog.len(), 0);
        assert_eq!(
            cmd::<Option<String>>(&mut conn, &["GET", "w:5"]).await.as_deref(),
            Some("another-token"),
            "another owner's key is never renewed or touched"
        );
        assert!(cmd::<i64>(&mut conn, &["PTTL", "w:5"]).await > 30_000);
    }
}
