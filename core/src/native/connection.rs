//! [`Reconnecting`]: one multiplexed redis-rs connection to a node, made on first use and
//! made again after it broke, to the node a [`Source`] names *now*.
//!
//! Why not redis-rs's `ConnectionManager`: it reconnects to a fixed address with fixed
//! options. A Sentinel client must ask the sentinels again after a failover, a TLS server name
//! needs a DNS override the manager cannot take, and the connect checks (eviction policy,
//! `DELIFEQ`) run once per connection. Callers report a broken connection with
//! [`Reconnecting::invalidate`]; the next call connects again.
//!
//! A call its caller abandons while the request is in flight (the driver's timeout, a quorum
//! node's timeout, a cancelled task), or whose reply timed out, makes the connection
//! suspect ([`InFlight`], [`Reconnecting::suspect`]): the reply may never come (a flow a
//! firewall dropped, a host gone without a reset), and every later call would queue behind
//! it on that connection until the kernel gives up on TCP (~15 min). The next call gets a
//! new connection; the calls in flight still finish on the old one. One exception: the undo
//! of an acquire attempt sent within a connect timeout of the suspicion
//! ([`Reconnecting::get_for`] with the undo) goes on the connection its own attempt was
//! abandoned on (kept for that even after a retry replaced it; each abandoned attempt is
//! kept with its [`AttemptMark`], so two attempts abandoned on two successive connections
//! each get their own undo), queued after the attempt, so on a node that is only slow (a
//! stall, a long reply delay) it runs after the grant it undoes; on a new connection it
//! could run first and leave the grant for its whole lease.
//!
//! A call that finds its connection dropped, or its connection's redis-rs task ended, ends
//! at once with a connection error instead of waiting out its reply timeout: see [`Live`].

pub(crate) use super::live::Live;
use super::node::NodeSpec;
use super::probe::Facts;
use super::sentinel::SentinelSource;
use super::warnings::Warnings;
use crate::error::Result;
use crate::protocol::independence::QuorumServers;
use crate::protocol::request::{AttemptMark, Request};
use futures::future::{BoxFuture, FutureExt, Shared};
use redis::PushInfo;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the node is: a fixed address, or the master a Sentinel deployment names.
#[derive(Clone)]
pub(crate) enum Source {
    Fixed(Box<NodeSpec>),
    Sentinel(Arc<SentinelSource>),
}

impl Source {
    async fn resolve(&self, timeout: Duration) -> Result<NodeSpec> {
        match self {
            Source::Fixed(spec) => Ok((**spec).clone()),
            Source::Sentinel(s) => s.resolve(timeout).await,
        }
    }

    /// Changes when the node the source names may have changed (a Sentinel failover).
    fn generation(&self) -> u64 {
        match self {
            Source::Fixed(_) => 0,
            Source::Sentinel(s) => s.generation(),
        }
    }
}

/// A connect in progress, which every call needing the connection meanwhile awaits. Shared, so
/// that whichever of them is polled drives it: owned by the call that began it (before stop
/// 45), it stood still while that call's future was kept but no longer polled (a `select!`
/// loser kept in a variable), and every other call of the client waited for it until its
/// network timeout (a user trial of stop 45). Boxed: connecting is rare, and its future
/// (redis-rs's connect, the connect checks) would otherwise make every call's future
/// kilobytes larger.
type Connecting = Shared<BoxFuture<'static, Result<Live>>>;

/// Called with every push message of connection `id` (subscriber connections only).
pub(crate) type PushHandler = Arc<dyn Fn(u64, PushInfo) + Send + Sync>;

/// Settings of a [`Reconnecting`].
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) connect_timeout: Duration,
    /// Each reply's bound; a reply not coming within it breaks the connection (a node gone
    /// without a reset, e.g. a dead host, is then reconnected, or re-resolved via Sentinel).
    pub(crate) response_timeout: Option<Duration>,
    /// RESP3 push messages go here (the subscriber); `None` for command connections.
    pub(crate) push: Option<PushHandler>,
    /// Run the connect checks ([`super::probe`]) and report warnings here (command connections).
    pub(crate) checks: Option<Arc<Warnings>>,
    /// A quorum's nodes: the server reached must be no other node's (`independence.rs`).
    pub(crate) servers: Option<Arc<QuorumServers>>,
}

/// See the module docs.
pub(crate) struct Reconnecting {
    source: Source,
    settings: Settings,
    live: Mutex<Option<Live>>,
    /// The connect in progress, if one is.
    connecting: Mutex<Option<Connecting>>,
    next_id: AtomicU64,
    /// The calls abandoned (or timed out) in the last [`LINGER`], each with its connection,
    /// kept open after a newer one replaced it: for the undo that must follow its attempt
    /// onto it (within a connect timeout), and for the requests still queued there.
    suspects: Mutex<Vec<Suspect>>,
    /// The runtime the connections run on (set at connect): when this is dropped, the
    /// suspects linger out on it (see the `Drop` impl).
    runtime: std::sync::OnceLock<tokio::runtime::Handle>,
}

/// How long a connection a call was abandoned on stays open after the suspicion (calls are
/// steered by it for a connect timeout only): requests still queued on it, such as a release
/// held up by a paused Redis, reach Redis when it runs again instead of being thrown away with
/// the connection (the calling thread's connections linger the same way, `local_io`). Found by
/// the re-trial of stop 35: a scope-end release sent while Redis was
/// paused for 3 s was never applied, its connection closed after a connect timeout of 0.5 s,
/// and the background retries, bounded by the release latch, gave up meanwhile. The undos of
/// acquire tries queued there follow them (see the module docs), so a late try is undone.
pub(crate) const LINGER: Duration = Duration::from_secs(30);

/// At most this many abandoned calls keep their connection open (the oldest go first).
pub(crate) const MAX_LINGERING: usize = 64;

/// A call abandoned on `live` at `since`: the acquire attempt it was, if one.
struct Suspect {
    live: Live,
    since: Instant,
    attempt: Option<AttemptMark>,
}

impl Reconnecting {
    pub(crate) fn new(source: Source, settings: Settings) -> Self {
        Reconnecting {
            source,
            settings,
            live: Mutex::new(None),
            connecting: Mutex::new(None),
            next_id: AtomicU64::new(1),
            suspects: Mutex::new(Vec::new()),
            runtime: std::sync::OnceLock::new(),
        }
    }

    /// The live connection, unless the source has moved on since it was made or a call found
    /// it dropped.
    fn current(&self) -> Option<Live> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if live
            .as_ref()
            .is_some_and(|l| l.generation() != self.source.generation() || l.is_lost())
        {
            *live = None;
        }
        live.clone()
    }

    /// The live connection, connecting first if there is none.
    ///
    /// # Errors
    /// `Connection` when the node (or, for Sentinel, every sentinel) cannot be reached,
    /// naming TLS failures; `InvalidArgument` for a bad TLS setup.
    pub(crate) async fn get(&self) -> Result<Live> {
        self.get_for(None).await
    }

    /// [`get`](Self::get), except that the undo of an attempt abandoned within a connect
    /// timeout goes on that attempt's connection (see the module docs).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub(crate) async fn get_for(&self, undo: Option<&Request>) -> Result<Live> {
        if let Some(live) = undo.and_then(|request| self.suspect_for(request)) {
            return Ok(live);
        }
        if let Some(live) = self.current() {
            let suspect = self
                .live_suspects()
                .iter()
                .any(|s| s.live.id == live.id && self.is_recent(s));
            if !suspect {
                return Ok(live);
            }
            self.invalidate(live.id);
        }
        let connecting = {
            let mut slot = self.connecting();
            if let Some(live) = self.current() {
                return Ok(live);
            }
            slot.get_or_insert_with(|| self.connect()).clone()
        };
        let result = connecting.clone().await;
        let mut slot = self.connecting();
        if slot.as_ref().is_some_and(|c| c.ptr_eq(&connecting)) {
            // The first of its callers to see it done makes it the live connection.
            *slot = None;
            if let Ok(live) = &result {
                *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(live.clone());
            }
        }
        result
    }

    fn connecting(&self) -> std::sync::MutexGuard<'_, Option<Connecting>> {
        self.connecting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection a try of the attempt `undo` undoes was abandoned on, if one was within a
    /// connect timeout (see the module docs).
    pub(crate) fn suspect_for(&self, undo: &Request) -> Option<Live> {
        let suspects = self.live_suspects();
        let own = suspects
            .iter()
            .find(|s| self.is_recent(s) && undo.undoes(s.attempt.as_ref()))?;
        Some(own.live.clone())
    }

    /// Every connection a try of the attempt `undo` undoes was abandoned on and that still
    /// lingers, however long ago: an acquire retried within its wait leaves one try per
    /// timeout, each queued on its own connection, and each may still apply when a stalled
    /// Redis runs again (a user trial of stop 38: the undo followed only the latest, and the
    /// first try's grant stayed for the whole lease).
    pub(crate) fn suspects_for(&self, undo: &Request) -> Vec<Live> {
        self.live_suspects()
            .iter()
            .filter(|s| undo.undoes(s.attempt.as_ref()))
            .map(|s| s.live.clone())
            .collect()
    }

    /// Whether `suspect` is recent enough to steer calls: within a connect timeout (an undo
    /// comes at once after its attempt, or it went elsewhere).
    fn is_recent(&self, suspect: &Suspect) -> bool {
        suspect.since.elapsed() < self.settings.connect_timeout
    }

    /// The abandoned calls whose connection is kept open: for [`LINGER`] after the suspicion
    /// (at most [`MAX_LINGERING`] of them), unless found dropped.
    fn live_suspects(&self) -> std::sync::MutexGuard<'_, Vec<Suspect>> {
        let mut suspects = self.suspects.lock().unwrap_or_else(|p| p.into_inner());
        suspects.retain(|s| s.since.elapsed() < LINGER && !s.live.is_lost());
        let excess = suspects.len().saturating_sub(MAX_LINGERING);
        suspects.drain(..excess);
        suspects
    }

    /// `true` while a connection to a TLS address (a fixed one) is being made, its handshake
    /// included.
    pub(crate) fn is_connecting_tls(&self) -> bool {
        let tls = matches!(&self.source, Source::Fixed(spec) if spec.tls_name().is_some());
        tls && self.connecting().is_some()
    }

    /// Forgets connection `id` (broken, timed out, or the node is no longer the master).
    pub(crate) fn invalidate(&self, id: u64) {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if live.as_ref().is_some_and(|l| l.id == id) {
            *live = None;
        }
    }

    /// Marks `live` suspect: a call on it (`request`, if it was one) was abandoned or timed
    /// out (see the module docs).
    pub(crate) fn suspect(&self, live: &Live, request: Option<&Request>) {
        if live.is_lost() {
            return; // nothing more is delivered on it
        }
        let attempt = request.and_then(Request::attempt_mark);
        let mut suspects = self.live_suspects();
        if !suspects
            .iter()
            .any(|s| s.live.id == live.id && s.attempt == attempt)
        {
            suspects.push(Suspect {
                live: live.clone(),
                since: Instant::now(),
                attempt,
            });
        }
    }

    /// Marks `request` (`None`: a call of the client's own, such as `PING`) on `live` as in
    /// flight until [`InFlight::done`]; dropped before that, the connection becomes suspect
    /// (see the module docs).
    pub(crate) fn in_flight<'a>(&'a self, live: &'a Live, request: Option<&'a Request>) -> InFlight<'a> {
        InFlight {
            conn: self,
            live,
            request,
            done: false,
        }
    }

    /// Where the node is.
    pub(crate) fn source(&self) -> &Source {
        &self.source
    }

    /// The connection if one is live (no connecting).
    pub(crate) fn existing(&self) -> Option<Live> {
        self.current()
    }

    /// The facts of the live connection, if there is one ([`Self::existing`] without the
    /// clone of the connection).
    pub(crate) fn existing_facts(&self) -> Option<Facts> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let live = live.as_ref()?;
        (live.generation() == self.source.generation() && !live.is_lost()).then_some(live.facts)
    }

    /// A new connect, to the node the source names now.
    fn connect(&self) -> Connecting {
        let generation = self.source.generation();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let _ = self.runtime.set(runtime);
        }
        let (source, settings) = (self.source.clone(), self.settings.clone());
        let connect = async move {
            let spec = source.resolve(settings.connect_timeout).await?;
            Live::connect(&spec, &settings, id, generation).await
        };
        connect.boxed().shared()
    }
}

impl Drop for Reconnecting {
    /// The client is gone (`Client::close`, or dropped): the connections calls were abandoned
    /// on stay open until every reply owed on them came, at most [`LINGER`] after the
    /// suspicion, so what is still queued there (the releases `Client::close` sends, held up
    /// by a Redis paused past the network timeout) reaches Redis when it runs again. Closed
    /// with the client before stop 36, and Redis threw those requests away with them (stop
    /// 35's N5: a client closed during a pause gave no semaphore permit back). A `PING` tells
    /// when the replies came: it is answered after every request before it.
    fn drop(&mut self) {
        let suspects = std::mem::take(self.suspects.get_mut().unwrap_or_else(|p| p.into_inner()));
        let mut lingering: Vec<(Live, Instant)> = Vec::new();
        for s in suspects.into_iter().filter(|s| !s.live.is_lost()) {
            match lingering.iter_mut().find(|(l, _)| l.id == s.live.id) {
                Some((_, since)) => *since = (*since).max(s.since),
                None => lingering.push((s.live, s.since)),
            }
        }
        let Some(runtime) = self.runtime.get().filter(|_| !lingering.is_empty()) else {
            return;
        };
        runtime.spawn(async move {
            for (live, since) in lingering {
                let until = tokio::time::Instant::from_std(since + LINGER);
                let (mut conn, ping) = (live.conn.clone(), redis::cmd("PING"));
                loop {
                    let ping = ping.query_async::<()>(&mut conn);
                    match tokio::time::timeout_at(until, ping).await {
                        // Its reply timed out (the node is still paused): ask again.
                        Ok(Err(e)) if e.is_timeout() => {}
                        // Answered (so was everything before it), gone, or out of time.
                        _ => break,
                    }
                }
            }
        });
    }
}

/// Keeps `connections` (a closed client's calling-thread connections, `local_io`, that calls
/// were abandoned on) open until `until`, on a thread of their own, for the reason the
/// multiplexed ones linger (`Reconnecting`'s drop). Blocking connections cannot tell when the
/// replies owed on them came (a `PING` read could take an earlier reply for its own), so they
/// stay for the whole linger; and a thread, since the runtime may be shutting down with the
/// client.
pub(crate) fn linger_after_close<T: Send + 'static>(until: Instant, connections: T) {
    let spawned = std::thread::Builder::new()
        .name("redlatch-linger".to_owned())
        .spawn(move || {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            drop(connections);
        });
    if let Err(e) = spawned {
        tracing::debug!(error = %e, "no thread to keep a closed client's abandoned connections open");
    }
}

/// A call on one connection, from sending to its reply (see [`Reconnecting::in_flight`]).
pub(crate) struct InFlight<'a> {
    conn: &'a Reconnecting,
    live: &'a Live,
    request: Option<&'a Request>,
    done: bool,
}

impl InFlight<'_> {
    /// The reply (or an error) came: the connection answered.
    pub(crate) fn done(mut self) {
        self.done = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            tracing::debug!("a call was abandoned before its reply: its connection is suspect");
            self.conn.suspect(self.live, self.request);
        }
    }
}
