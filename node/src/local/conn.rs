//! One Redis connection on a Node socket (`net.Socket` / `tls.TLSSocket`, opened by
//! `lib/engine.mjs`), pipelined, on the JavaScript thread.
//!
//! Why not redis-rs' `MultiplexedConnection` over the socket: it runs each command through
//! a channel to a driver task, a codec and a sink; on the JavaScript thread that machinery
//! cost about as much as the round trip itself (README "Design"). Here a command is encoded
//! by redis-rs (`Cmd::write_packed_command`) straight into the socket's outgoing buffer and
//! its reply slot queued; the bytes of a `data` event are read as whole replies (`redlatch::resp`:
//! the core's reply shapes directly, the others by redis-rs' `parse_redis_value`), each
//! completing the oldest slot. Node does
//! the I/O and the TLS; bytes cross the boundary once per `data` event and once per drain.
//!
//! [`Conn`] implements redis-rs' `ConnectionLike`, so the core's `RedisTransport::run_on`
//! (EVALSHA, EVAL after NOSCRIPT, reply conversion) drives it as it drives its own.

use super::host::{self, Out, SocketSpec};
use futures::channel::oneshot;
use redis::{Cmd, PushKind, RedisError, RedisFuture, RedisResult, Value};
use redlatch::resp::{self, Next};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct State {
    open: bool,
    /// Why the socket ended (`None` while it lives).
    ended: Option<String>,
    /// The task waiting for `open`.
    opener: Option<Waker>,
    /// Received bytes not yet cut into replies.
    incoming: Vec<u8>,
    /// One slot per command sent and not yet answered, oldest first.
    waiting: VecDeque<oneshot::Sender<RedisResult<Value>>>,
    outgoing: Vec<u8>,
    write_queued: bool,
    /// Subscriber connections: called with each pub/sub message (channel, payload).
    on_message: Option<MessageHandler>,
    /// Called once when the connection ends.
    on_end: Option<Box<dyn FnOnce() + Send>>,
    /// Its last handle is gone with replies still owed ([`Owner`]'s drop): closed once they
    /// came, or after [`LINGER_MS`].
    lingering: bool,
}

/// What a subscriber connection does with a pub/sub message: `(channel, payload)`.
pub(crate) type MessageHandler = Arc<dyn Fn(&[u8], &[u8]) + Send + Sync>;

/// One socket's state, shared by its [`Conn`] handles and the entry points that feed it.
pub(crate) struct SocketShared {
    pub(crate) id: u32,
    state: Mutex<State>,
}

thread_local! {
    static SOCKETS: RefCell<HashMap<u32, Weak<SocketShared>>> = RefCell::new(HashMap::new());
    /// The lingering sockets (see [`Owner`]), kept alive here until they close.
    static LINGERING: RefCell<HashMap<u32, Arc<SocketShared>>> = RefCell::new(HashMap::new());
    static NEXT_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn find(id: u32) -> Option<Arc<SocketShared>> {
    SOCKETS.with(|s| s.borrow().get(&id).and_then(Weak::upgrade))
}

fn io_error(kind: io::ErrorKind, why: &str) -> RedisError {
    RedisError::from(io::Error::new(kind, why.to_owned()))
}

impl SocketShared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes waiting to be written (the host's flush sends them).
    pub(crate) fn take_outgoing(&self) -> Option<Vec<u8>> {
        let mut state = self.state();
        state.write_queued = false;
        if state.outgoing.is_empty() || state.ended.is_some() {
            return None;
        }
        Some(std::mem::take(&mut state.outgoing))
    }

    /// Starts lingering when replies are still owed (see [`Owner`]); `false` otherwise.
    fn linger(&self) -> bool {
        let mut state = self.state();
        state.lingering = state.ended.is_none() && state.open && !state.waiting.is_empty();
        state.lingering
    }

    /// Whether a lingering socket got every reply it owed.
    fn owes_nothing_and_lingers(&self) -> bool {
        let state = self.state();
        state.lingering && state.waiting.is_empty()
    }

    /// Ends the connection: every waiting command fails with `why`; later ones at once.
    fn end(&self, why: String) {
        let (waiting, on_end) = {
            let mut state = self.state();
            if state.ended.is_some() {
                return;
            }
            state.ended = Some(why.clone());
            if let Some(w) = state.opener.take() {
                w.wake();
            }
            state.on_message = None;
            (std::mem::take(&mut state.waiting), state.on_end.take())
        };
        for slot in waiting {
            let _ = slot.send(Err(io_error(io::ErrorKind::ConnectionReset, &why)));
        }
        if let Some(on_end) = on_end {
            on_end();
        }
    }
}

/// `socket.on('connect' | 'secureConnect')`.
pub(crate) fn opened(id: u32) {
    if let Some(socket) = find(id) {
        let mut state = socket.state();
        state.open = true;
        if let Some(w) = state.opener.take() {
            w.wake();
        }
    }
}

/// `socket.on('data')`: completes the oldest waiting commands with the whole replies
/// received; on a subscriber connection, hands pub/sub messages to its handler.
pub(crate) fn received(id: u32, data: &[u8]) {
    let Some(socket) = find(id) else { return };
    let mut messages = Vec::new();
    let invalid = {
        let mut guard = socket.state();
        let state = &mut *guard;
        let subscriber = state.on_message.is_some();
        let mut invalid = false;
        // Most data events hold whole replies: parse them in place, keep only a tail.
        let buffered = !state.incoming.is_empty();
        if buffered {
            state.incoming.extend_from_slice(data);
        }
        let input: &[u8] = if buffered { &state.incoming } else { data };
        let mut at = 0;
        while at < input.len() {
            let (reply, n) = match resp::next(&input[at..]) {
                Next::Reply(reply, n) => (reply, n),
                Next::Partial => break,
                Next::Invalid => {
                    invalid = true;
                    break;
                }
            };
            at += n;
            let reply = match classify(reply, subscriber) {
                Received::Reply(reply) => reply,
                Received::Message(channel, payload) => {
                    messages.push((channel, payload));
                    continue;
                }
                Received::Skip => continue,
            };
            match state.waiting.pop_front() {
                // A receiver dropped (its call timed out or was cancelled) skips its reply.
                Some(slot) => {
                    let _ = slot.send(reply);
                }
                None => {
                    invalid = true;
                    break;
                }
            }
        }
        if invalid || at == input.len() {
            state.incoming.clear();
        } else if buffered {
            state.incoming.drain(..at);
        } else {
            state.incoming = data[at..].to_vec();
        }
        invalid
    };
    if !messages.is_empty() {
        let handler = socket.state().on_message.clone();
        if let Some(handler) = handler {
            for (channel, payload) in &messages {
                handler(channel, payload);
            }
        }
    }
    if invalid {
        // Replies no longer line up with commands: nothing on this connection can be trusted.
        socket.end("the server's reply is not the Redis protocol".to_owned());
        host::push(Out::Destroy(id));
    } else if socket.owes_nothing_and_lingers() {
        LINGERING.with(|l| l.borrow_mut().remove(&id));
        socket.end("the connection was closed".to_owned());
        host::push(Out::Destroy(id));
    }
}

/// What one parsed frame is for.
enum Received {
    /// The reply to the oldest waiting command.
    Reply(RedisResult<Value>),
    /// A pub/sub message (subscriber connections): channel and payload.
    Message(Vec<u8>, Vec<u8>),
    /// Answers nothing (a RESP3 push no command waits for).
    Skip,
}

fn classify(reply: RedisResult<Value>, subscriber: bool) -> Received {
    let bulk = |v: &Value| match v {
        Value::BulkString(b) => Some(b.clone()),
        _ => None,
    };
    match reply {
        // RESP2: messages are arrays `message, channel, payload`.
        Ok(Value::Array(items))
            if subscriber && items.len() == 3 && bulk(&items[0]).as_deref() == Some(b"message") =>
        {
            match (bulk(&items[1]), bulk(&items[2])) {
                (Some(channel), Some(payload)) => Received::Message(channel, payload),
                _ => Received::Skip,
            }
        }
        // RESP3: pushes; (un)subscribe confirmations answer their command.
        Ok(Value::Push { kind, data }) => match kind {
            PushKind::Message if data.len() == 2 => match (bulk(&data[0]), bulk(&data[1])) {
                (Some(channel), Some(payload)) => Received::Message(channel, payload),
                _ => Received::Skip,
            },
            PushKind::Subscribe | PushKind::Unsubscribe if subscriber => {
                Received::Reply(Ok(Value::Push { kind, data }))
            }
            _ => Received::Skip,
        },
        other => Received::Reply(other),
    }
}

/// `socket.on('close')` (after `error`, if any): waiting commands fail with its error.
pub(crate) fn ended(id: u32, why: Option<String>) {
    LINGERING.with(|l| l.borrow_mut().remove(&id));
    let socket = SOCKETS
        .with(|s| s.borrow_mut().remove(&id))
        .and_then(|w| w.upgrade());
    if let Some(socket) = socket {
        socket.end(why.unwrap_or_else(|| "the connection was closed".to_owned()));
    }
}

/// How long a socket whose last handle is gone waits for the replies it still owes: the
/// core's `LINGER` (30 s), for the same reason (its `connection::linger_after_close`).
const LINGER_MS: f64 = 30_000.0;

/// The owner of a socket: dropping it closes the socket, unless replies are still owed
/// (calls abandoned on it: the releases `close()` sent while Redis was paused past the
/// network timeout). Then it lingers until they came, at most [`LINGER_MS`]: closed at
/// once, Redis would throw those requests away (stop 35's N5: a client closed during a pause
/// gave no semaphore permit back). Its sockets are `unref()`ed: lingering never keeps the
/// process alive.
struct Owner(Arc<SocketShared>);

impl Drop for Owner {
    fn drop(&mut self) {
        let id = self.0.id;
        if self.0.linger() {
            LINGERING.with(|l| l.borrow_mut().insert(id, self.0.clone()));
            host::push(Out::Linger(id, LINGER_MS));
            return;
        }
        SOCKETS.with(|s| s.borrow_mut().remove(&id));
        self.0.end("the connection was closed".to_owned());
        host::push(Out::Destroy(id));
    }
}

/// A pipelined Redis connection (module docs). Clones share the socket, which closes when
/// the last clone is dropped.
#[derive(Clone)]
pub(crate) struct Conn {
    owner: Arc<Owner>,
    /// The scripts run on this socket: the first of each goes by source (the core's
    /// `ScriptsRun`: an `EVALSHA` on a new connection may meet an empty script cache).
    pub(crate) scripts: Arc<redlatch::ScriptsRun>,
}

impl Conn {
    /// Opens a socket to `spec` (JavaScript does, at the end of this drain) and resolves
    /// once it is connected (after the TLS handshake for TLS), or fails with its error.
    /// Nothing is sent yet: the caller authenticates (transport.rs).
    pub(crate) async fn open(spec: SocketSpec) -> io::Result<Conn> {
        let id = NEXT_ID.with(|n| {
            let id = n.get().wrapping_add(1).max(1);
            n.set(id);
            id
        });
        let shared = Arc::new(SocketShared {
            id,
            state: Mutex::new(State::default()),
        });
        SOCKETS.with(|s| s.borrow_mut().insert(id, Arc::downgrade(&shared)));
        host::push(Out::Connect(id, spec));
        let conn = Conn {
            owner: Arc::new(Owner(shared)),
            scripts: Arc::default(),
        };
        Opening { conn: Some(conn) }.await
    }

    fn shared(&self) -> &Arc<SocketShared> {
        &self.owner.0
    }

    /// `false` once the socket ended.
    pub(crate) fn alive(&self) -> bool {
        self.shared().state().ended.is_none()
    }

    /// Why the socket ended (its error, or that it was closed); `None` while it is open.
    pub(crate) fn ended_with(&self) -> Option<String> {
        self.shared().state().ended.clone()
    }

    /// Closes the connection now: waiting commands fail, and its socket is destroyed.
    pub(crate) fn close(&self) {
        let shared = self.shared();
        shared.end("the connection was closed".to_owned());
        host::push(Out::Destroy(shared.id));
    }

    /// Makes this a subscriber connection: pub/sub messages go to `on_message` (a RESP2
    /// message is an array, so only a connection that subscribes may read one as such), and
    /// `on_end` runs once when the connection ends (at once if it already has).
    pub(crate) fn subscriber(&self, on_message: MessageHandler, on_end: Box<dyn FnOnce() + Send>) {
        let mut state = self.shared().state();
        if state.ended.is_some() {
            drop(state);
            on_end();
            return;
        }
        state.on_message = Some(on_message);
        state.on_end = Some(on_end);
    }

    /// Queues `cmd` and returns the receiver of its reply.
    fn send(&self, cmd: &Cmd) -> Result<oneshot::Receiver<RedisResult<Value>>, RedisError> {
        let mut rx = None;
        self.queue(|out| cmd.write_packed_command(out), 1, |r| rx = Some(r))?;
        rx.ok_or_else(|| io_error(io::ErrorKind::Other, "no reply slot"))
    }

    /// Writes a command (or a pipeline) with `write` and queues one reply slot per reply
    /// it is answered with (`replies`), handing each receiver to `slot`, oldest first.
    fn queue(
        &self,
        write: impl FnOnce(&mut Vec<u8>),
        replies: usize,
        mut slot: impl FnMut(oneshot::Receiver<RedisResult<Value>>),
    ) -> Result<(), RedisError> {
        let shared = self.shared();
        let mut state = shared.state();
        if let Some(why) = &state.ended {
            return Err(io_error(io::ErrorKind::BrokenPipe, why));
        }
        write(&mut state.outgoing);
        for _ in 0..replies {
            let (tx, rx) = oneshot::channel();
            state.waiting.push_back(tx);
            slot(rx);
        }
        if !state.write_queued {
            state.write_queued = true;
            host::push(Out::Write(shared.clone()));
        }
        Ok(())
    }
}

/// A reply slot whose sender went away: the connection ended before the reply came.
async fn reply(rx: oneshot::Receiver<RedisResult<Value>>) -> RedisResult<Value> {
    match rx.await {
        Ok(reply) => reply,
        Err(_) => Err(io_error(
            io::ErrorKind::ConnectionReset,
            "the connection was closed",
        )),
    }
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let sent = self.send(cmd);
        Box::pin(async move { reply(sent?).await })
    }

    /// A pipeline (the plain form of a multi-lock's first attempt: one `SET NX PX` per
    /// member, `Request::plain`): its commands go out together, and the replies after the
    /// first `offset` (a transaction's `OK` and `QUEUED`s) are its answer, as redis-rs'
    /// own connections give them (server errors as `Value::ServerError` items).
    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut slots = Vec::with_capacity(offset + count);
        let sent = self.queue(
            |out| out.extend_from_slice(&pipeline.get_packed_pipeline()),
            offset + count,
            |rx| slots.push(rx),
        );
        Box::pin(async move {
            sent?;
            let mut replies = Vec::with_capacity(count);
            for (i, rx) in slots.into_iter().enumerate() {
                let value = reply(rx).await?;
                if i >= offset {
                    replies.push(value);
                }
            }
            Ok(replies)
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}

struct Opening {
    conn: Option<Conn>,
}

impl Future for Opening {
    type Output = io::Result<Conn>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(conn) = self.conn.as_ref() else {
            return Poll::Ready(Err(io::Error::other("polled after completion")));
        };
        {
            let mut state = conn.shared().state();
            if let Some(why) = &state.ended {
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionRefused, why.clone())));
            }
            if !state.open {
                state.opener = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        Poll::Ready(Ok(self.conn.take().expect("checked above")))
    }
}
