//! Undoing acquire attempts that did not (or may not) end in a grant (Redlock step 5:
//! release everywhere it may have applied).
//!
//! A clean-up must finish, so it runs in the background, each node bounded by the network
//! timeout rather than the per-node timeout of the attempt: on a slow node whose script cache
//! is empty the undo is an `EVALSHA` answered `NOSCRIPT` and then an `EVAL`, and cutting it at
//! the node timeout would leave the grant in place for the whole lease. The failed attempt
//! waits for its clean-up up to the node timeout (as long as an inline undo took); the next
//! attempt of the same acquire skips a node whose clean-up is still running there. That
//! alone cannot keep a late undo off the next attempt's grant: an undo whose reply timed out
//! is over for the skip while its request may still land. A quorum acquire's next attempt
//! therefore uses ids of its own (`acquire.rs`): a lease lock a new token, a reentrant lock a
//! new request id (its owner id stays: the owner's count is what the grant adds).

use super::owner::InFlight;
use super::Engine;
use crate::protocol::request::Holder;
use event_listener::Event;
use futures::future::select;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Per node, whether a clean-up of this acquire is still running there. Set up at the first
/// clean-up: most acquires never run one (a single node never does).
pub(super) struct Cleanups {
    nodes: usize,
    state: std::sync::OnceLock<Arc<Running>>,
}

struct Running {
    nodes: Vec<AtomicBool>,
    /// Per node, what the attempt whose clean-up runs there got from it (for the errors of
    /// the attempts that skip the node meanwhile).
    why: std::sync::Mutex<Vec<Option<String>>>,
    done: Event,
}

impl Cleanups {
    pub(super) fn new(nodes: usize) -> Self {
        Cleanups {
            nodes,
            state: std::sync::OnceLock::new(),
        }
    }

    fn state(&self) -> &Arc<Running> {
        self.state.get_or_init(|| {
            Arc::new(Running {
                nodes: (0..self.nodes).map(|_| AtomicBool::new(false)).collect(),
                why: std::sync::Mutex::new(vec![None; self.nodes]),
                done: Event::new(),
            })
        })
    }

    /// The nodes an attempt must skip (their clean-up is not done); empty before the first
    /// clean-up (none skipped).
    pub(super) fn busy(&self) -> Vec<bool> {
        self.state.get().map_or_else(Vec::new, |state| {
            state.nodes.iter().map(|r| r.load(Ordering::Acquire)).collect()
        })
    }

    /// Notes what node `i` answered the attempt whose clean-up will run there.
    pub(super) fn note(&self, i: usize, why: String) {
        let mut all = self.state().why.lock().unwrap_or_else(|p| p.into_inner());
        all[i] = Some(why);
    }

    /// What node `i` answered the attempt whose clean-up runs there, if noted.
    pub(super) fn why(&self, i: usize) -> Option<String> {
        let state = self.state.get()?;
        state.why.lock().unwrap_or_else(|p| p.into_inner())[i].clone()
    }

    /// Undoes the attempt of `holder` (request `request_id`) on `nodes` in the background,
    /// and waits for it up to `wait`.
    pub(super) async fn run(
        &self,
        engine: &Arc<Engine>,
        (name, holder, request_id, lease): (&str, &Holder, &str, Duration),
        nodes: &[usize],
        wait: Duration,
    ) {
        let running = self.state();
        for &i in nodes {
            running.nodes[i].store(true, Ordering::Release);
        }
        for &i in nodes {
            let state = running.clone();
            let undo = undo(
                engine.clone(),
                (name.to_owned(), holder.clone(), request_id.to_owned(), lease),
                vec![i],
            );
            super::cleanup::spawn(
                &*engine.runtime,
                Box::pin(async move {
                    undo.await;
                    state.nodes[i].store(false, Ordering::Release);
                    state.done.notify(usize::MAX);
                }),
            );
        }
        let deadline = engine.now() + wait;
        loop {
            let listener = running.done.listen();
            if !self.busy().contains(&true) {
                return;
            }
            let left = deadline.saturating_sub(engine.now());
            if left.is_zero() {
                return;
            }
            let _ = select(listener, engine.runtime.sleep(left)).await;
        }
    }
}

/// Undoes an acquire (of `holder`, request `request_id`, with `lease`) on `nodes`, each call
/// bounded by the network timeout.
async fn undo(
    engine: Arc<Engine>,
    (name, holder, request_id, lease): (String, Holder, String, Duration),
    nodes: Vec<usize>,
) {
    let lease_ms = lease
        .as_millis()
        .min(u128::from(crate::protocol::timing::MAX_DURATION_MS)) as u64;
    let request = holder.abort(&name, &request_id, lease_ms);
    let timeout = engine.config.network_timeout;
    engine
        .nodes
        .undo_or_warn(&nodes, &request, timeout, &name, "an acquire attempt")
        .await;
}

/// Armed while an attempt's outcome is unknown: if the acquire ends without a grant (an error
/// return, or the caller dropping the future: cancellation), undoes it in the background on
/// every node. It owns the attempt's holder and request id (the acquire uses these), so that
/// arming it copies nothing.
pub(super) struct UndoOnDrop<'a> {
    pub(super) engine: &'a Arc<Engine>,
    pub(super) name: &'a str,
    pub(super) holder: Holder,
    pub(super) request_id: String,
    pub(super) lease: Duration,
    pub(super) pending: bool,
    /// The acquire's own in-flight count: a field, so it ends only after `drop` has taken the
    /// rollback's.
    pub(super) _in_flight: Option<InFlight>,
}

impl Drop for UndoOnDrop<'_> {
    fn drop(&mut self) {
        if !self.pending {
            return;
        }
        let engine = self.engine.clone();
        let (name, holder, request_id) = (
            self.name.to_owned(),
            self.holder.clone(),
            std::mem::take(&mut self.request_id),
        );
        tracing::debug!(lock = %name, lease_ms = self.lease.as_millis() as u64, "acquire ended with an unknown outcome; undoing it in the background");
        // Counted as in flight (taken before the acquire's own count ends, so without a gap)
        // until the rollback is done: its grant may still be in the hash, and a re-acquire
        // of the owner must not take that count for an orphan.
        let in_flight = engine.in_flight(&name, &holder);
        let lease = self.lease;
        let runtime = self.engine.runtime.clone();
        super::cleanup::spawn(
            &*runtime,
            Box::pin(async move {
                let all: Vec<usize> = (0..engine.nodes.len()).collect();
                undo(engine.clone(), (name, holder, request_id, lease), all).await;
                drop(in_flight);
            }),
        );
    }
}

impl UndoOnDrop<'_> {
    /// Undoes now, on every node, what `drop` would undo in the background (nothing when
    /// nothing is pending). Stays armed while it runs: if this future is dropped midway, the
    /// undo is sent again in the background (every undo may be repeated).
    pub(super) async fn run_now(&mut self) {
        if !self.pending {
            return;
        }
        let _in_flight = self.engine.in_flight(self.name, &self.holder);
        let all: Vec<usize> = (0..self.engine.nodes.len()).collect();
        let what = (
            self.name.to_owned(),
            self.holder.clone(),
            self.request_id.clone(),
            self.lease,
        );
        undo(self.engine.clone(), what, all).await;
        self.pending = false;
    }
}

#[cfg(all(test, feature = "native"))]
mod tests {
    use super::*;
    use crate::driver::owner::Seen;
    use crate::driver::testing::{self, cmd, raw, within};

    const LEASE: Duration = Duration::from_secs(60);

    fn owner(engine: &Engine) -> Holder {
        Holder::Reentrant {
            owner: format!("{}:1", engine.client_id),
        }
    }

    /// Grants `holder`'s acquire (request `request_id`) on node `i`, as an attempt would.
    async fn grant_on(engine: &Engine, i: usize, holder: &Holder, name: &str, request_id: &str) {
        let request = holder.acquire(
            name,
            LEASE.as_millis() as u64,
            None,
            request_id,
            engine.latch_ttl_ms(),
        );
        let reply = engine
            .nodes
            .call(i, &request, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(holder.decode_acquire(&reply).is_ok(), "{reply:?}");
    }

    async fn exists(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {
        cmd::<i64>(conn, &["EXISTS", key]).await == 1
    }

    #[tokio::test]
    async fn a_cleanup_keeps_its_node_busy_until_it_is_done_there() {
        let (a, b) = (testing::server(), testing::server());
        let engine = testing::engine(&[&a, &b], testing::config()).await;
        let holder = owner(&engine);
        for i in 0..2 {
            grant_on(&engine, i, &holder, "r:1", "req-1").await;
        }
        b.pause().unwrap();
        let cleanups = Cleanups::new(2);
        let what = ("r:1", &holder, "req-1", LEASE);
        within(cleanups.run(&engine, what, &[0, 1], Duration::from_millis(200))).await;
        assert_eq!(
            cleanups.busy(),
            [false, true],
            "the attempt waited up to its bound; the paused node is still being cleaned up"
        );
        assert!(
            !exists(&mut raw(&a).await, "r:1").await,
            "undone on the live node"
        );
        b.resume().unwrap();
        within(async {
            while cleanups.busy().contains(&true) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            !exists(&mut raw(&b).await, "r:1").await,
            "undone there too once it answered"
        );
    }

    #[tokio::test]
    async fn a_dropped_acquire_is_undone_in_the_background_and_counts_as_in_flight_until_then() {
        let s = testing::server();
        let engine = testing::engine(&[&s], testing::config()).await;
        let holder = owner(&engine);
        let field = holder.shared_field().unwrap();
        let mut conn = raw(&s).await;
        let undo = |request_id: &str, pending| UndoOnDrop {
            engine: &engine,
            name: "r:2",
            holder: holder.clone(),
            request_id: request_id.to_owned(),
            lease: LEASE,
            pending,
            _in_flight: engine.in_flight("r:2", &holder),
        };
        // Nothing pending (the attempt was granted, or refused): nothing is sent.
        grant_on(&engine, 0, &holder, "r:2", "req-2").await;
        drop(undo("req-2", false));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(exists(&mut conn, "r:2").await);
        let _: i64 = cmd(&mut conn, &["DEL", "r:2"]).await;

        // Pending (cancelled with an unknown outcome): undone in the background.
        grant_on(&engine, 0, &holder, "r:2", "req-3").await;
        drop(undo("req-3", true));
        // Until that undo is done, a grant of the owner must not take the count for an
        // orphan: the rollback counts as a call in flight.
        let seen = |holds| Seen {
            deadline: engine.now() + LEASE,
            now: engine.now(),
            holds,
            quorum: false,
        };
        let acquire = engine.validities.begin("r:2", &field);
        let joined = engine.validities.join("r:2", &field, acquire.ticket(), seen(2));
        assert_eq!(joined.orphaned, 0, "the rollback still runs");
        drop((joined, acquire));
        within(async {
            while exists(&mut conn, "r:2").await {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        // Once it is done (its count ends just after its reply), a lone grant may remove
        // orphans again.
        within(async {
            loop {
                let acquire = engine.validities.begin("r:2", &field);
                if engine
                    .validities
                    .join("r:2", &field, acquire.ticket(), seen(2))
                    .orphaned
                    == 1
                {
                    return;
                }
                drop(acquire);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }
}
