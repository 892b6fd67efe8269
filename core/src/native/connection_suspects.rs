//! The calls abandoned on a [`Reconnecting`] connection (the suspects: see the module docs of
//! `connection.rs`): which connection an undo follows, which one a request queues on while
//! the node holds a new connection's set-up, and how long they linger.

use super::{Live, Reconnecting};
use crate::protocol::request::{AttemptMark, Request};
use std::time::{Duration, Instant};

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
pub(super) struct Suspect {
    pub(super) live: Live,
    pub(super) since: Instant,
    pub(super) attempt: Option<AttemptMark>,
}

impl Reconnecting {
    /// The connection the latest abandoned call was on, if still open to the node the source
    /// names now.
    pub(super) fn newest_open_suspect(&self) -> Option<Live> {
        let generation = self.source.generation();
        self.live_suspects()
            .iter()
            .filter(|s| s.live.generation() == generation)
            .max_by_key(|s| s.since)
            .map(|s| s.live.clone())
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
    /// A lease release goes behind its grant's abandoned tries the same way
    /// ([`Request::goes_behind`]), and behind those still running (`connection_grants.rs`).
    pub(crate) fn suspects_for(&self, undo: &Request) -> Vec<Live> {
        self.live_suspects()
            .iter()
            .filter(|s| undo.goes_behind(s.attempt.as_ref()))
            .map(|s| s.live.clone())
            .collect()
    }

    /// Whether `suspect` is recent enough to steer calls: within a connect timeout (an undo
    /// comes at once after its attempt, or it went elsewhere).
    pub(super) fn is_recent(&self, suspect: &Suspect) -> bool {
        suspect.since.elapsed() < self.settings.connect_timeout
    }

    /// The abandoned calls whose connection is kept open: for [`LINGER`] after the suspicion
    /// (at most [`MAX_LINGERING`] of them), unless found dropped.
    pub(super) fn live_suspects(&self) -> std::sync::MutexGuard<'_, Vec<Suspect>> {
        let mut suspects = self.suspects.lock().unwrap_or_else(|p| p.into_inner());
        suspects.retain(|s| s.since.elapsed() < LINGER && !s.live.is_lost());
        let excess = suspects.len().saturating_sub(MAX_LINGERING);
        suspects.drain(..excess);
        suspects
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
