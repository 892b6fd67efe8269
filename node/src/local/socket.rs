//! A Node socket (`net.Socket` / `tls.TLSSocket`, opened by `lib/engine.mjs`) as the
//! `AsyncRead + AsyncWrite` stream redis-rs runs a connection over. Node does the I/O and the
//! TLS on the JavaScript thread; bytes cross the boundary once per `data` event and once per
//! drain (everything a drain's tasks wrote goes out in one `socket.write`).

use super::host::{self, Out, SocketSpec};
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[derive(Default)]
struct State {
    open: bool,
    /// Why the socket ended (`None` while it lives): `None` inside for a plain close, else
    /// the socket's error.
    ended: Option<Option<String>>,
    incoming: Vec<u8>,
    read_from: usize,
    /// The connection's reader, or the task waiting for `open`.
    waiter: Option<Waker>,
    outgoing: Vec<u8>,
    write_queued: bool,
}

/// One socket's state, shared by its stream and the entry points that feed it.
pub(crate) struct SocketShared {
    pub(crate) id: u32,
    state: Mutex<State>,
}

thread_local! {
    static SOCKETS: RefCell<HashMap<u32, Weak<SocketShared>>> = RefCell::new(HashMap::new());
    static NEXT_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl SocketShared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wake(state: &mut State) {
        if let Some(w) = state.waiter.take() {
            w.wake();
        }
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
}

fn find(id: u32) -> Option<Arc<SocketShared>> {
    SOCKETS.with(|s| s.borrow().get(&id).and_then(Weak::upgrade))
}

/// `socket.on('connect' | 'secureConnect')`.
pub(crate) fn opened(id: u32) {
    if let Some(socket) = find(id) {
        let mut state = socket.state();
        state.open = true;
        SocketShared::wake(&mut state);
    }
}

/// `socket.on('data')`.
pub(crate) fn received(id: u32, data: &[u8]) {
    if let Some(socket) = find(id) {
        let mut state = socket.state();
        if state.read_from == state.incoming.len() {
            state.incoming.clear();
            state.read_from = 0;
        }
        state.incoming.extend_from_slice(data);
        SocketShared::wake(&mut state);
    }
}

/// `socket.on('close')` (after `error`, if any): the stream ends; readers see EOF or the error.
pub(crate) fn ended(id: u32, why: Option<String>) {
    let socket = SOCKETS.with(|s| s.borrow_mut().remove(&id)).and_then(|w| w.upgrade());
    if let Some(socket) = socket {
        let mut state = socket.state();
        if state.ended.is_none() {
            state.ended = Some(why);
        }
        SocketShared::wake(&mut state);
    }
}

/// A socket as a stream. Dropping it closes the socket.
pub(crate) struct JsStream {
    shared: Arc<SocketShared>,
}

impl JsStream {
    /// Opens a socket to `spec` (JavaScript does, at the end of this drain) and resolves
    /// once it is connected (after the TLS handshake for TLS), or fails with its error.
    pub(crate) async fn open(spec: SocketSpec) -> io::Result<JsStream> {
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
        let stream = JsStream { shared };
        Opening { stream: Some(stream) }.await
    }
}

struct Opening {
    stream: Option<JsStream>,
}

impl Future for Opening {
    type Output = io::Result<JsStream>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(stream) = self.stream.as_ref() else {
            return Poll::Ready(Err(io::Error::other("polled after completion")));
        };
        {
            let mut state = stream.shared.state();
            if let Some(why) = &state.ended {
                let why = why.clone().unwrap_or_else(|| "the connection was closed".to_owned());
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionRefused, why)));
            }
            if !state.open {
                state.waiter = Some(cx.waker().clone());
                return Poll::Pending;
            }
        }
        Poll::Ready(Ok(self.stream.take().expect("checked above")))
    }
}

impl Drop for JsStream {
    fn drop(&mut self) {
        let id = self.shared.id;
        SOCKETS.with(|s| s.borrow_mut().remove(&id));
        host::push(Out::Destroy(id));
    }
}

impl AsyncRead for JsStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let mut state = self.shared.state();
        let available = state.incoming.len() - state.read_from;
        if available > 0 {
            let n = available.min(buf.remaining());
            let from = state.read_from;
            buf.put_slice(&state.incoming[from..from + n]);
            state.read_from += n;
            return Poll::Ready(Ok(()));
        }
        match &state.ended {
            // EOF for a plain close; redis-rs reports the connection dropped either way.
            Some(None) => return Poll::Ready(Ok(())),
            Some(Some(why)) => return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionReset, why.clone()))),
            None => {}
        }
        state.waiter = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl AsyncWrite for JsStream {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut state = self.shared.state();
        if state.ended.is_some() {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "the connection was closed")));
        }
        state.outgoing.extend_from_slice(buf);
        if !state.write_queued {
            state.write_queued = true;
            host::push(Out::Write(self.shared.clone()));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Handed to Node at the end of this drain; Node buffers what the kernel does not take.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        host::push(Out::Destroy(self.shared.id));
        Poll::Ready(Ok(()))
    }
}
