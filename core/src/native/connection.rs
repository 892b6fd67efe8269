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
use crate::protocol::request::Request;
use futures::future::{BoxFuture, FutureExt, Shared};
use redis::PushInfo;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    /// A connection was made (its set-up, TLS handshake included, answered) at least once.
    ever_made: AtomicBool,
    /// The calls abandoned (or timed out) in the last [`LINGER`], each with its connection,
    /// kept open after a newer one replaced it: for the undo that must follow its attempt
    /// onto it (within a connect timeout), and for the requests still queued there.
    suspects: Mutex<Vec<Suspect>>,
    /// A quorum node's acquire tries still running (`connection_grants.rs`).
    grants: grants::Running,
    /// The runtime the connections run on (set at connect): when this is dropped, the
    /// suspects linger out on it (see the `Drop` impl).
    runtime: std::sync::OnceLock<tokio::runtime::Handle>,
}

impl Reconnecting {
    pub(crate) fn new(source: Source, settings: Settings) -> Self {
        Reconnecting {
            source,
            settings,
            live: Mutex::new(None),
            connecting: Mutex::new(None),
            next_id: AtomicU64::new(1),
            ever_made: AtomicBool::new(false),
            suspects: Mutex::new(Vec::new()),
            grants: grants::Running::default(),
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
        let result = match self.newest_open_suspect() {
            Some(suspect) if tokio::runtime::Handle::try_current().is_ok() => {
                // A connection exists, suspect: a set-up held past half a connect timeout
                // means a paused or stalled server, and the request queues there instead, to
                // apply when it runs again (see `get_while_set_up_is_held`). A flow that is
                // only dead lets the new connection's set-up finish first.
                let held = Box::pin(tokio::time::sleep(self.settings.connect_timeout / 2));
                match futures::future::select(connecting.clone(), held).await {
                    futures::future::Either::Left((result, _)) => result,
                    futures::future::Either::Right(_) => {
                        tracing::debug!("the new connection's set-up is held: queued on the suspect one");
                        return Ok(suspect);
                    }
                }
            }
            _ => connecting.clone().await,
        };
        let mut slot = self.connecting();
        if slot.as_ref().is_some_and(|c| c.ptr_eq(&connecting)) {
            // The first of its callers to see it done makes it the live connection.
            *slot = None;
            if let Ok(live) = &result {
                *self.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(live.clone());
                self.ever_made.store(true, Ordering::Relaxed);
            }
        }
        result
    }

    /// A connection to queue a request on while the node holds the set-up of new connections
    /// (the calling thread could not make one within half its time: a paused or stalled server
    /// accepts the TCP connection but not its `HELLO`/`AUTH`): the live one even if suspect,
    /// else the newest suspect still open to the same node, else [`get`](Self::get). Queued
    /// there, the request applies when the server runs again, as one sent before the stall
    /// does; on a new connection it waited for a set-up that never finished in its time, and
    /// was never sent at all (a C user trial of stop 46: a semaphore release after two timed
    /// out lock releases never reached Redis, its permits taken for good).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub(crate) async fn get_while_set_up_is_held(&self) -> Result<Live> {
        match self.current().or_else(|| self.newest_open_suspect()) {
            Some(live) => Ok(live),
            None => self.get().await,
        }
    }

    fn connecting(&self) -> std::sync::MutexGuard<'_, Option<Connecting>> {
        self.connecting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `true` while the first connection to a TLS address (a fixed one) is being made, its
    /// handshake included: a call that times out then was most likely sent to a plain-text
    /// port. Once a handshake was answered, a stall is a paused or stalled server, and its
    /// timeout says "no reply" (a Python trial of stop 48 read "no answer to the TLS
    /// handshake" for a release that had been queued on the live connection and applied).
    pub(crate) fn is_connecting_tls(&self) -> bool {
        let tls = matches!(&self.source, Source::Fixed(spec) if spec.tls_name().is_some());
        tls && !self.ever_made.load(Ordering::Relaxed) && self.connecting().is_some()
    }

    /// Forgets connection `id` (broken, timed out, or the node is no longer the master).
    pub(crate) fn invalidate(&self, id: u64) {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        if live.as_ref().is_some_and(|l| l.id == id) {
            *live = None;
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

#[path = "connection_grants.rs"]
mod grants;
#[path = "connection_suspects.rs"]
mod suspects;
use suspects::Suspect;
pub(crate) use suspects::{linger_after_close, LINGER, MAX_LINGERING};
