//! [`Socket`]: one pipelined, non-blocking connection owned by an event loop (see the module
//! docs of `loop_io`), and [`Call`], the redis-rs `ConnectionLike` one request runs on.
//!
//! A command is encoded by redis-rs into the socket's outgoing buffer and written at once
//! (a request of a few hundred bytes fits the kernel's buffer; what does not is written when
//! the loop says the socket is writable); its reply slot is queued. The loop's reader
//! callback reads what arrived, cuts it into whole replies (`redlatch::resp`) and completes
//! the oldest slots, waking the calls waiting on them.

use super::open::Stream;
use super::{EventLoop, LoopNode, LoopWatcher, Pending};
use crate::native::resp::{self, Next};
use crate::native::scripts_run::ScriptsRun;
use crate::protocol::request::Request;
use futures::channel::oneshot;
use redis::{Cmd, RedisError, RedisFuture, RedisResult, Value};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

#[derive(Default)]
struct State {
    /// One slot per command sent and not yet answered, oldest first.
    waiting: VecDeque<oneshot::Sender<RedisResult<Value>>>,
    /// Received bytes not yet cut into replies.
    incoming: Vec<u8>,
    /// Bytes not yet written (the kernel's buffer was full).
    outgoing: Vec<u8>,
    /// The loop calls `writable` until `outgoing` is empty.
    write_watched: bool,
    /// The loop calls `readable`.
    watched: bool,
    /// A call was abandoned before its reply: no new calls (see the module docs).
    suspect: bool,
    /// Why the connection ended (`None` while it lives).
    ended: Option<String>,
}

/// See the module docs.
pub(crate) struct Socket {
    stream: Stream,
    fd: RawFd,
    /// The process that opened it: a forked child must never shut the parent's socket down.
    pid: u32,
    state: Mutex<State>,
    home: Weak<EventLoop>,
    /// The scripts run on this socket (the first of each goes by source).
    pub(super) scripts: ScriptsRun,
}

/// A socket as a binding's [`LoopWatcher`] sees it: a descriptor to watch, and what to call.
#[derive(Clone)]
pub struct LoopSocket(pub(super) Arc<Socket>);

impl LoopSocket {
    /// The file descriptor to watch.
    pub fn fd(&self) -> RawFd {
        self.0.fd
    }

    /// The descriptor is readable: reads what arrived and completes the calls it answers.
    pub fn readable(&self) {
        self.0.readable();
    }

    /// The descriptor is writable: writes what is left to write.
    pub fn writable(&self) {
        self.0.writable();
    }
}

fn io_error(kind: io::ErrorKind, why: &str) -> RedisError {
    RedisError::from(io::Error::new(kind, why.to_owned()))
}

impl Socket {
    pub(super) fn new(stream: Stream, home: Weak<EventLoop>) -> Arc<Socket> {
        Arc::new(Socket {
            fd: stream.as_raw_fd(),
            pid: std::process::id(),
            stream,
            state: Mutex::new(State::default()),
            home,
            scripts: ScriptsRun::new(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn home(&self) -> Option<Arc<EventLoop>> {
        self.home.upgrade()
    }

    /// For new calls: not ended and not suspect.
    pub(super) fn usable(&self) -> bool {
        let state = self.state();
        state.ended.is_none() && !state.suspect
    }

    pub(super) fn ended(&self) -> bool {
        self.state().ended.is_some()
    }

    pub(super) fn watch(self: &Arc<Self>, watcher: &dyn LoopWatcher) {
        self.state().watched = true;
        watcher.watch(LoopSocket(self.clone()));
    }

    pub(super) fn watch_writable(self: &Arc<Self>, watcher: &dyn LoopWatcher) {
        let wanted = {
            let state = self.state();
            state.write_watched && state.ended.is_none() && state.watched
        };
        if wanted {
            watcher.watch_writable(LoopSocket(self.clone()));
        }
    }

    /// Ends the connection (if it lives) and stops the loop watching it (loop thread only).
    pub(super) fn close(&self, watcher: &dyn LoopWatcher) {
        self.end("the connection was closed".to_owned());
        let watched = std::mem::take(&mut self.state().watched);
        if watched {
            watcher.unwatch(self.fd);
        }
        // The descriptor closes with the last handle (the watcher just dropped its own); a
        // handle a call still holds must not keep the connection open meanwhile.
        if self.pid == std::process::id() {
            let _ = self.stream.shutdown();
        }
    }

    /// Ends the connection: every waiting command fails with `why`; later ones at once.
    pub(super) fn end(&self, why: String) {
        let waiting = {
            let mut state = self.state();
            if state.ended.is_some() {
                return;
            }
            state.ended = Some(why.clone());
            state.outgoing = Vec::new();
            std::mem::take(&mut state.waiting)
        };
        for slot in waiting {
            let _ = slot.send(Err(io_error(io::ErrorKind::ConnectionReset, &why)));
        }
    }

    /// Ends the connection and has the loop close it (from any thread).
    fn fail(self: &Arc<Self>, why: String) {
        self.end(why);
        if let Some(home) = self.home() {
            home.on_loop(Pending::Close(self.clone()));
        }
    }

    /// Writes `write`'s bytes and queues one reply slot per reply (`replies`), oldest first.
    fn queue(
        self: &Arc<Self>,
        write: impl FnOnce(&mut Vec<u8>),
        replies: usize,
    ) -> Result<Vec<oneshot::Receiver<RedisResult<Value>>>, RedisError> {
        let mut state = self.state();
        if let Some(why) = &state.ended {
            return Err(io_error(io::ErrorKind::BrokenPipe, why));
        }
        write(&mut state.outgoing);
        let slots = (0..replies)
            .map(|_| {
                let (tx, rx) = oneshot::channel();
                state.waiting.push_back(tx);
                rx
            })
            .collect();
        if state.write_watched {
            return Ok(slots); // behind bytes the loop writes when it can
        }
        match self.flush(&mut state) {
            Ok(true) => Ok(slots),
            Ok(false) => {
                state.write_watched = true;
                drop(state);
                if let Some(home) = self.home() {
                    home.on_loop(Pending::WatchWritable(self.clone()));
                }
                Ok(slots)
            }
            Err(e) => {
                drop(state);
                self.fail(format!("write failed: {e}"));
                Err(e.into())
            }
        }
    }

    /// Writes what it can of `outgoing`; `true` when all of it is written.
    fn flush(&self, state: &mut State) -> io::Result<bool> {
        while !state.outgoing.is_empty() {
            match (&self.stream).write(&state.outgoing) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => drop(state.outgoing.drain(..n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn writable(self: &Arc<Self>) {
        let mut state = self.state();
        if !state.write_watched {
            return;
        }
        match self.flush(&mut state) {
            Ok(false) => {}
            Ok(true) => {
                state.write_watched = false;
                drop(state);
                if let Some(home) = self.home() {
                    home.watcher.unwatch_writable(self.fd);
                }
            }
            Err(e) => {
                drop(state);
                self.fail(format!("write failed: {e}"));
            }
        }
    }

    fn readable(self: &Arc<Self>) {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) => return self.fail("the server closed the connection".to_owned()),
                Ok(n) => {
                    if !self.received(&buf[..n]) {
                        // Replies no longer line up with commands: nothing here can be trusted.
                        return self.fail("the server's reply is not the Redis protocol".to_owned());
                    }
                    if n < buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(format!("read failed: {e}")),
            }
        }
        let done = {
            let state = self.state();
            state.suspect && state.waiting.is_empty()
        };
        if done {
            // Every reply a suspect connection waited for came: nothing will use it again.
            self.fail("the connection was closed".to_owned());
        }
    }

    /// Completes the oldest waiting commands with the whole replies in `data`; `false` when
    /// the bytes are not the protocol, or answer no command.
    fn received(&self, data: &[u8]) -> bool {
        let mut guard = self.state();
        let state = &mut *guard;
        state.incoming.extend_from_slice(data);
        let mut at = 0;
        let mut valid = true;
        while at < state.incoming.len() {
            let (reply, n) = match resp::next(&state.incoming[at..]) {
                Next::Reply(reply, n) => (reply, n),
                Next::Partial => break,
                Next::Invalid => {
                    valid = false;
                    break;
                }
            };
            at += n;
            if matches!(reply, Ok(Value::Push { .. })) {
                continue; // RESP3 pushes answer no command (no subscriptions here)
            }
            match state.waiting.pop_front() {
                // A receiver dropped (its call was abandoned) skips its reply.
                Some(slot) => drop(slot.send(reply)),
                None => {
                    valid = false;
                    break;
                }
            }
        }
        state.incoming.drain(..at);
        valid
    }

    /// A call on this connection for `request`.
    pub(super) fn call<'r>(self: &Arc<Self>, node: &Arc<LoopNode>, request: &'r Request) -> Call<'r> {
        Call {
            socket: self.clone(),
            node: node.clone(),
            request,
            awaiting: false,
        }
    }
}

/// One request's use of a [`Socket`]; dropped while awaiting a reply (abandoned), it makes
/// the socket suspect (see the module docs).
pub(crate) struct Call<'r> {
    socket: Arc<Socket>,
    node: Arc<LoopNode>,
    /// Read only when the call is abandoned: which attempt it was, if one.
    request: &'r Request,
    awaiting: bool,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if !self.awaiting {
            return;
        }
        self.socket.state().suspect = true;
        self.node.suspected(&self.socket, self.request.attempt_mark());
        if let Some(home) = self.socket.home() {
            home.retire(self.node.serial, &self.socket);
        }
    }
}

/// A reply slot whose sender went away: the connection ended before the reply came.
async fn reply(rx: oneshot::Receiver<RedisResult<Value>>) -> RedisResult<Value> {
    rx.await.unwrap_or_else(|_| {
        Err(io_error(
            io::ErrorKind::ConnectionReset,
            "the connection was closed",
        ))
    })
}

impl redis::aio::ConnectionLike for Call<'_> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let sent = self.socket.queue(|out| cmd.write_packed_command(out), 1);
        Box::pin(async move {
            let rx = sent?
                .pop()
                .ok_or_else(|| io_error(io::ErrorKind::Other, "no reply slot"))?;
            self.awaiting = true;
            let value = reply(rx).await;
            self.awaiting = false;
            value
        })
    }

    /// A pipeline (the plain form of a multi-lock's first attempt): the replies after the
    /// first `offset`, as redis-rs' own connections give them.
    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let sent = self.socket.queue(
            |out| out.extend_from_slice(&pipeline.get_packed_pipeline()),
            offset + count,
        );
        Box::pin(async move {
            let slots = sent?;
            self.awaiting = true;
            let mut replies = Vec::with_capacity(count);
            for (i, rx) in slots.into_iter().enumerate() {
                let value = reply(rx).await;
                let value = match value {
                    Ok(v) => v,
                    Err(e) => {
                        self.awaiting = false;
                        return Err(e);
                    }
                };
                if i >= offset {
                    replies.push(value);
                }
            }
            self.awaiting = false;
            Ok(replies)
        })
    }

    fn get_db(&self) -> i64 {
        self.node.info.redis_settings().db()
    }
}
