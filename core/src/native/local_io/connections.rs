//! [`LocalConnections`]: one node's pool of synchronous redis-rs connections for
//! calling-thread I/O (see the module docs of `local_io`).

use crate::protocol::reply::Reply;
use crate::protocol::request::{AttemptMark, Request};
use redis::{ConnectionInfo, Value};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::connection::{linger_after_close, LINGER, MAX_LINGERING};
use super::super::redis_calls::{answered, convert, plain_command, PlainCommand};
use super::super::scripts_run::{evalsha_refused, ScriptsRun};

/// Idle connections kept beyond this many are closed (one per calling thread is typical).
const MAX_IDLE: usize = 8;

/// A synchronous connection and the process that made it.
struct Local {
    conn: redis::Connection,
    pid: u32,
    /// The scripts run on `conn` (the first of each goes by source).
    scripts: ScriptsRun,
}

/// A connection whose reply timed out, kept for the undo of that attempt only (one per
/// attempt: several threads may time out together, each attempt on its own connection).
struct Suspect {
    local: Local,
    /// Which attempt timed out on it ([`Request::attempt_mark`]).
    attempt: Option<AttemptMark>,
    since: Instant,
}

/// See the module docs.
pub(crate) struct LocalConnections {
    info: ConnectionInfo,
    network_timeout: Duration,
    idle: Mutex<Vec<Local>>,
    suspects: Mutex<Vec<Suspect>>,
}

/// The outcome of a request sent from the calling thread.
pub(crate) enum Sent {
    Reply(Reply),
    /// A redis-rs error; `timed_out` when no reply came within the network timeout.
    Failed {
        error: redis::RedisError,
        timed_out: bool,
    },
    /// No connection could be made within half the time left (none was idle): the request
    /// was not sent, and goes to the multiplexed connection, which exists.
    NoConnection,
}

impl LocalConnections {
    pub(crate) fn new(info: ConnectionInfo, network_timeout: Duration) -> Self {
        LocalConnections {
            info,
            network_timeout,
            idle: Mutex::new(Vec::new()),
            suspects: Mutex::new(Vec::new()),
        }
    }

    /// Sends `request` on an idle connection (or a new one) and reads its reply, on the
    /// calling thread, within the time [`super::budget`] leaves. A connection that errors is
    /// not put back; one that timed out is kept for the undo of this attempt
    /// ([`Self::follow_up`]).
    pub(crate) fn send(&self, request: &Request) -> Sent {
        let started = Instant::now();
        let sent = self.send_within(request, started);
        match &sent {
            Sent::Reply(_) => super::replied(),
            Sent::Failed { .. } => super::failed(started),
            Sent::NoConnection => {}
        }
        sent
    }

    fn send_within(&self, request: &Request, started: Instant) -> Sent {
        let Some(budget) = super::budget(self.network_timeout) else {
            return timed_out(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
        };
        let (mut local, shortened) = match self.take_idle() {
            Some(local) if budget == self.network_timeout => (local, false),
            idle => {
                let made: redis::RedisResult<Local> = match idle {
                    Some(local) => Ok(local),
                    // Half the time, not all of it: a connect held up (a paused server holds
                    // AUTH; a stalled one the TLS handshake) then leaves the multiplexed
                    // connection the other half to queue the request on, where it still
                    // applies once the server runs again (as one sent here would have).
                    None => match self.connect(budget / 2) {
                        Ok(local) => Ok(local),
                        Err(error) => {
                            let kind = error.kind();
                            tracing::debug!(
                                ?kind,
                                "no calling-thread connection: the request goes to the multiplexed one"
                            );
                            return Sent::NoConnection;
                        }
                    },
                };
                let left = budget.saturating_sub(started.elapsed());
                let shortened = made.and_then(|local| {
                    let left = Some(left.max(Duration::from_millis(1)));
                    local.conn.set_read_timeout(left)?;
                    local.conn.set_write_timeout(left)?;
                    Ok(local)
                });
                match shortened {
                    Ok(local) => (local, true),
                    Err(e) if e.is_timeout() => return timed_out(e),
                    Err(error) => {
                        return Sent::Failed {
                            error,
                            timed_out: false,
                        }
                    }
                }
            }
        };
        match run(&mut local.conn, &local.scripts, request) {
            Ok(value) => {
                if !shortened || self.restore_timeouts(&local).is_ok() {
                    self.put_idle(local);
                }
                Sent::Reply(convert(value))
            }
            Err(error) if error.is_timeout() => {
                let mut suspects = self.live_suspects();
                suspects.push(Suspect {
                    local,
                    attempt: request.attempt_mark(),
                    since: Instant::now(),
                });
                timed_out(error)
            }
            Err(error) => {
                if error.is_connection_dropped() || error.is_io_error() {
                    // One `CLIENT KILL` (or restart) closes every connection at once: the
                    // idle ones are as dead, and the retry must not take them one after the
                    // other (a user trial of stop 38: 12 threads sharing a client, releases
                    // failed with "unexpected end of file" after the retries ran out).
                    self.drop_idle();
                }
                Sent::Failed {
                    error,
                    timed_out: false,
                }
            }
        }
    }

    fn restore_timeouts(&self, local: &Local) -> redis::RedisResult<()> {
        local.conn.set_read_timeout(Some(self.network_timeout))?;
        local.conn.set_write_timeout(Some(self.network_timeout))
    }

    /// `true` when `request` (an undo) must follow the timed-out attempt it undoes onto
    /// its connection; [`Self::follow_up`] then sends it there.
    pub(crate) fn has_suspect_for(&self, request: &Request) -> bool {
        self.live_suspects()
            .iter()
            .any(|s| request.undoes(s.attempt.as_ref()))
    }

    /// Sends the undo `request` on the connection its attempt timed out on (queued behind the
    /// attempt; redis-rs skips the attempt's late reply), then drops that connection, unless
    /// the undo's reply timed out too: then it lingers, so that both still reach Redis. `None`
    /// when there is no such connection any more.
    pub(crate) fn follow_up(&self, request: &Request) -> Option<redis::RedisResult<Reply>> {
        // Every try of the attempt still lingering, however long ago: an acquire retried
        // within its wait may have left one per timeout (a user trial of stop 38: the undo
        // followed only a recent one, and an older try's grant stayed for the whole lease).
        let own: Vec<Suspect> = {
            let mut suspects = self.live_suspects();
            let (own, others) = std::mem::take(&mut *suspects)
                .into_iter()
                .partition(|s| request.undoes(s.attempt.as_ref()));
            *suspects = others;
            own
        };
        let mut answer: Option<redis::RedisResult<Reply>> = None;
        for mut suspect in own {
            let sent = run(&mut suspect.local.conn, &suspect.local.scripts, request);
            if sent.as_ref().is_err_and(redis::RedisError::is_timeout) {
                self.live_suspects().push(suspect);
            }
            let sent = sent.map(convert);
            if answer.as_ref().is_none_or(|a| a.is_err()) {
                answer = Some(sent);
            }
        }
        answer
    }

    /// The suspect connections, kept open for [`LINGER`] after the suspicion (at most
    /// [`MAX_LINGERING`]): requests still queued on them reach Redis when it runs again (see
    /// `connection.rs`). Those a forked child inherited are forgotten, never closed.
    fn live_suspects(&self) -> std::sync::MutexGuard<'_, Vec<Suspect>> {
        let mut suspects = self.suspects.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        let mut i = 0;
        while i < suspects.len() {
            let s = &suspects[i];
            if s.since.elapsed() >= LINGER || s.local.pid != pid {
                forget_if_foreign(suspects.swap_remove(i).local);
            } else {
                i += 1;
            }
        }
        while suspects.len() > MAX_LINGERING {
            forget_if_foreign(suspects.remove(0).local);
        }
        suspects
    }

    fn take_idle(&self) -> Option<Local> {
        let pid = std::process::id();
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(local) = idle.pop() {
            if local.pid == pid {
                return Some(local);
            }
            // Made before a fork: its socket is the parent's, so it is neither used nor closed.
            std::mem::forget(local);
        }
        None
    }

    /// Closes the idle connections (those made before a fork are forgotten, as in
    /// [`Self::take_idle`]).
    fn drop_idle(&self) {
        let pid = std::process::id();
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        for local in idle.into_iter().filter(|local| local.pid != pid) {
            std::mem::forget(local);
        }
    }

    fn put_idle(&self, local: Local) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(local);
        }
    }

    /// A new connection within `timeout` (TCP, TLS and the AUTH/SELECT set-up); its read
    /// and write timeouts are set by the caller.
    ///
    /// Over TLS a `PING` answered is part of the set-up: rustls finishes its handshake on a
    /// connection's first I/O, and without `AUTH` or `HELLO` (a server with no password) that
    /// was the request itself, so a paused server held the handshake with the request still
    /// unsent inside rustls, where it never reached Redis (a Python trial of stop 48: a
    /// release on a TLS client during a pause never applied, on a plain one it did). A set-up
    /// held so within `timeout` leaves the request to the multiplexed connection, where it
    /// queues and applies when the server runs again.
    fn connect(&self, timeout: Duration) -> redis::RedisResult<Local> {
        let started = Instant::now();
        let client = redis::Client::open(self.info.clone())?;
        let mut conn = client.get_connection_with_timeout(timeout)?;
        if matches!(self.info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
            let left = Some(
                timeout
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1)),
            );
            conn.set_read_timeout(left)?;
            conn.set_write_timeout(left)?;
            redis::cmd("PING").query::<()>(&mut conn)?;
        }
        Ok(Local {
            conn,
            pid: std::process::id(),
            scripts: ScriptsRun::new(),
        })
    }
}

impl Drop for LocalConnections {
    /// The client is gone: the suspect connections linger out their [`LINGER`] (see
    /// `connection::linger_after_close`).
    fn drop(&mut self) {
        let pid = std::process::id();
        let suspects = std::mem::take(self.suspects.get_mut().unwrap_or_else(|p| p.into_inner()));
        let (own, foreign): (Vec<Suspect>, Vec<Suspect>) =
            suspects.into_iter().partition(|s| s.local.pid == pid);
        foreign.into_iter().for_each(|s| forget_if_foreign(s.local));
        if let Some(last) = own.iter().map(|s| s.since).max() {
            linger_after_close(last + LINGER, own);
        }
    }
}

fn timed_out(error: redis::RedisError) -> Sent {
    Sent::Failed {
        error,
        timed_out: true,
    }
}

fn forget_if_foreign(local: Local) {
    if local.pid != std::process::id() {
        std::mem::forget(local);
    }
}

/// The request's plain form when it has one, else its script: `EVAL` by source (also the
/// first time on this connection: `scripts_run.rs`), or `EVALSHA` repeated as `EVAL` after a
/// `NOSCRIPT` (as the multiplexed path does).
fn run(conn: &mut redis::Connection, scripts: &ScriptsRun, request: &Request) -> redis::RedisResult<Value> {
    // One plain command only. A pipeline (a multi-lock's `SET NX PX` per member) goes as its
    // script here: redis-rs reads every reply of a pipeline even after one timed out, each
    // read waiting a whole read timeout again, so a 2-member multi-lock on a stalled Redis
    // took two network timeouts (a user trial of stop 42); the script is one reply.
    let plain = request.plain.as_deref().filter(|_| scripts.may_go_plain());
    if let Some(PlainCommand::One(cmd)) = plain.map(plain_command) {
        return cmd.query(conn);
    }
    let script = request.script;
    let invoke = |conn: &mut redis::Connection, command: &str, body: &str| {
        redis::cmd(command)
            .arg(body)
            .arg(request.keys.len())
            .arg(&request.keys)
            .arg(&request.args)
            .query(conn)
    };
    let reply = if request.by_source || scripts.is_new(script) || scripts.evalsha_denied() {
        let reply = invoke(conn, "EVAL", script.source());
        if answered(&reply) {
            scripts.ran(script);
        }
        reply
    } else {
        match invoke(conn, "EVALSHA", script.sha1()) {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                tracing::debug!(script = script.name(), "NOSCRIPT: falling back to EVAL");
                invoke(conn, "EVAL", script.source())
            }
            Err(e) if evalsha_refused(&e) => {
                scripts.deny_evalsha();
                invoke(conn, "EVAL", script.source())
            }
            other => other,
        }
    };
    if reply.is_ok() {
        scripts.answered_ok();
    }
    reply
}
