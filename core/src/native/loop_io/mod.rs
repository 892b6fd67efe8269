//! Event-loop I/O for a binding's asynchronous calls on a single-node client: while a binding
//! polls a call's future on the thread of its host's event loop (Python's asyncio loop),
//! inside [`poll_on_loop`], the node's [`super::RedisTransport`] writes each request on a
//! non-blocking socket that loop owns and the loop reads the reply when the socket becomes
//! readable, instead of handing the request to the tokio worker that owns the multiplexed
//! connection and waiting for that thread to send the result back.
//!
//! Why (issue 15, measured with `make bench`): a call through the tokio runtime crosses
//! threads twice (loop -> worker -> loop), about 45 us of an acquire + release pair on this
//! kind of machine; redlatch.asyncio measured 1.01-1.04x redis-py's asyncio `Lock` that way,
//! while a plain asyncio protocol doing the same two commands reached 1.40x. Here an
//! uncontended acquire writes its command during the call itself and is finished by the
//! loop's reader callback, on the loop's thread, with no other thread woken.
//!
//! The binding's part ([`LoopWatcher`]): to watch a socket's file descriptor for reading (and
//! for writing while a write is unfinished) and call [`LoopSocket::readable`] /
//! [`LoopSocket::writable`] on the loop's thread; and to call [`EventLoop::run_pending`] soon
//! after [`LoopWatcher::kick`], from the loop's thread. Everything else (sleeps, spawns,
//! pub/sub waits, watchdog renewals) stays on the tokio runtime, whose wake-ups reach the
//! loop through the binding's waker.
//!
//! Connections: a loop's connection to a node is opened in the background on the runtime
//! (TCP or Unix socket, then `AUTH` / `HELLO 3` / `SELECT` as the URL says, within the
//! network timeout); until it is ready, and after it failed, requests take the multiplexed
//! path, so opening one never delays or fails a call. A connection that ends (`CLIENT KILL`, a
//! restart, a reply that is not the protocol) fails the requests waiting on it, which the
//! driver retries (at most twice) within its timeout; the next request opens another. A request
//! abandoned before its reply (the driver's timeout, a cancelled task) makes the connection
//! suspect, as on the multiplexed path (`connection.rs`): later requests do not use it, except
//! the undo of that attempt, which is queued behind the attempt on it (from whichever
//! thread sends it), so it cannot run before the grant it undoes; it is closed once every
//! reply it waits for has come, or with its loop.
//!
//! Not for TLS (`rediss://`), Cluster, Sentinel or quorum clients, nor `WAIT` (sync replicas):
//! those keep the multiplexed path, as calling-thread I/O does (`local_io`). On Valkey, lease
//! locks use `SET IFEQ` / `DELIFEQ` here as on the multiplexed path (`ifeq`).

mod open;
mod socket;

pub(crate) use open::handshake_commands;
pub use socket::LoopSocket;

use super::connection::{LINGER, MAX_LINGERING};
use super::ifeq;
use super::redis_calls::{eval_script, run_plain};
use crate::protocol::reply::Reply;
use crate::protocol::request::{AttemptMark, Request};
use socket::Socket;
use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// What a binding's event loop does for [`EventLoop`] (see the module docs). Every method
/// but [`LoopWatcher::kick`] is called on the loop's thread only.
pub trait LoopWatcher: Send + Sync {
    /// Calls `socket.readable()` whenever its descriptor is readable, until [`Self::unwatch`].
    fn watch(&self, socket: LoopSocket);
    /// Calls `socket.writable()` whenever its descriptor is writable, until
    /// [`Self::unwatch_writable`] or [`Self::unwatch`].
    fn watch_writable(&self, socket: LoopSocket);
    /// Stops the `writable` calls for `fd`.
    fn unwatch_writable(&self, fd: RawFd);
    /// Stops every call for `fd` (before it is closed).
    fn unwatch(&self, fd: RawFd);
    /// From any thread: asks the loop to call [`EventLoop::run_pending`] soon.
    fn kick(&self);
}

/// A loop's connection to one node.
enum Slot {
    /// Being opened on the runtime.
    Opening,
    /// Opened, not yet watched by the loop (that happens on the loop's thread).
    Opened(open::Stream),
    /// In use.
    Open(Arc<Socket>),
    /// The last attempt failed at this time: requests take the multiplexed path for a while.
    Failed(Instant),
}

/// How long after a failed open requests keep to the multiplexed path.
const RETRY_OPEN_AFTER: Duration = Duration::from_secs(1);

/// One event loop's connections (made by the binding, on the loop's thread, once per loop).
pub struct EventLoop {
    watcher: Box<dyn LoopWatcher>,
    thread: ThreadId,
    slots: Mutex<HashMap<u64, Slot>>,
    /// What other threads asked of the watcher, for [`EventLoop::run_pending`].
    pending: Mutex<Vec<Pending>>,
}

enum Pending {
    WatchWritable(Arc<Socket>),
    Close(Arc<Socket>),
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl EventLoop {
    /// The connections of the loop running on the calling thread, driven by `watcher`.
    pub fn new(watcher: Box<dyn LoopWatcher>) -> Arc<EventLoop> {
        Arc::new(EventLoop {
            watcher,
            thread: std::thread::current().id(),
            slots: Mutex::new(HashMap::new()),
            pending: Mutex::new(Vec::new()),
        })
    }

    fn on_loop_thread(&self) -> bool {
        std::thread::current().id() == self.thread
    }

    /// Does what other threads asked of the watcher (call it on the loop's thread, after a
    /// [`LoopWatcher::kick`]).
    pub fn run_pending(&self) {
        let pending = std::mem::take(&mut *locked(&self.pending));
        for action in pending {
            self.pending_now(action);
        }
    }

    /// Reads what arrived on every open connection (loop thread only), as their reader
    /// callbacks would. The binding calls it before it runs calls that other threads woke:
    /// after the loop's thread was blocked (a long callback, CPU work), replies that came in
    /// time wait unread beside the timers that fired meanwhile, and a call that met its timer
    /// first would give up on a grant Redis already made (its undo could then come after the
    /// grant's idempotency latch expired, leaving the lock taken for its lease).
    pub fn read_arrived(&self) {
        let open: Vec<Arc<Socket>> = locked(&self.slots)
            .values()
            .filter_map(|slot| match slot {
                Slot::Open(socket) => Some(socket.clone()),
                _ => None,
            })
            .collect();
        for socket in open {
            LoopSocket(socket).readable();
        }
    }

    /// Runs `action` with the watcher now on the loop's thread, else queues it.
    fn on_loop(&self, action: Pending) {
        if self.on_loop_thread() {
            self.pending_now(action);
        } else {
            locked(&self.pending).push(action);
            self.watcher.kick();
        }
    }

    fn pending_now(&self, action: Pending) {
        match action {
            Pending::WatchWritable(socket) => socket.watch_writable(&*self.watcher),
            Pending::Close(socket) => socket.close(&*self.watcher),
        }
    }

    /// The open connection to `node` (watched now if it was just opened), starting an open in
    /// the background when there is none; `None` means: take the multiplexed path.
    fn connection(self: &Arc<Self>, node: &Arc<LoopNode>) -> Option<Arc<Socket>> {
        let mut slots = locked(&self.slots);
        match slots.remove(&node.serial) {
            Some(Slot::Open(socket)) if socket.usable() => {
                slots.insert(node.serial, Slot::Open(socket.clone()));
                Some(socket)
            }
            Some(Slot::Opened(stream)) => {
                let socket = Socket::new(stream, Arc::downgrade(self));
                slots.insert(node.serial, Slot::Open(socket.clone()));
                drop(slots);
                socket.watch(&*self.watcher);
                Some(socket)
            }
            Some(Slot::Opening) => {
                slots.insert(node.serial, Slot::Opening);
                None
            }
            Some(Slot::Failed(at)) if at.elapsed() < RETRY_OPEN_AFTER => {
                slots.insert(node.serial, Slot::Failed(at));
                None
            }
            // None, a failed open long enough ago, or a connection that ended or became
            // suspect (a suspect one stays alive through its `Socket` for the undo).
            _ => {
                slots.insert(node.serial, Slot::Opening);
                drop(slots);
                node.homes_add(self);
                self.open_in_background(node);
                None
            }
        }
    }

    fn open_in_background(self: &Arc<Self>, node: &Arc<LoopNode>) {
        let (home, node) = (Arc::downgrade(self), node.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            locked(&self.slots).insert(node.serial, Slot::Failed(Instant::now()));
            return;
        };
        runtime.spawn(async move {
            let opened = open::open(&node.info, node.network_timeout).await;
            let Some(home) = home.upgrade() else { return };
            let mut slots = locked(&home.slots);
            // Only if no one replaced the attempt meanwhile (the client was dropped).
            if matches!(slots.get(&node.serial), Some(Slot::Opening)) {
                let slot = match opened {
                    Ok(stream) => Slot::Opened(stream),
                    Err(e) => {
                        tracing::debug!(error = %e, "event-loop connection not opened; using the multiplexed one");
                        Slot::Failed(Instant::now())
                    }
                };
                slots.insert(node.serial, slot);
            }
        });
    }

    /// Forgets `serial`'s connection (its client is gone): closed on the loop's thread.
    fn forget(&self, serial: u64) {
        if let Some(Slot::Open(socket)) = locked(&self.slots).remove(&serial) {
            self.on_loop(Pending::Close(socket));
        }
    }

    /// A connection that ended or became suspect is no longer handed out.
    fn retire(&self, serial: u64, socket: &Arc<Socket>) {
        let mut slots = locked(&self.slots);
        if matches!(slots.get(&serial), Some(Slot::Open(s)) if Arc::ptr_eq(s, socket)) {
            slots.remove(&serial);
        }
    }
}

impl Drop for EventLoop {
    fn drop(&mut self) {
        // The loop is gone (and its selector with it): its sockets just close.
        for (_, slot) in locked(&self.slots).drain() {
            if let Slot::Open(socket) = slot {
                socket.end("the event loop was closed".to_owned());
            }
        }
    }
}

thread_local! {
    /// The loop whose call is being polled on this thread ([`poll_on_loop`]).
    static CURRENT: RefCell<Option<Arc<EventLoop>>> = const { RefCell::new(None) };
}

fn current() -> Option<Arc<EventLoop>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether the calling code runs inside [`poll_on_loop`]: only then does a request other than
/// an undo go to a loop connection.
pub(crate) fn on_a_loop() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// Restores the loop a [`poll_on_loop`] found, also when the future panics.
struct Restore(Option<Arc<EventLoop>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Polls `fut` once on the calling thread (the thread `event_loop` was made on), inside
/// `handle`'s runtime context (timers and spawns work), with event-loop I/O on for the
/// requests of single-node clients (see the module docs). `cx` is the call's own waker: the
/// binding polls the future again when it is woken, on this thread, the same way.
///
/// # Panics
/// When `fut` panics (the panic propagates).
pub fn poll_on_loop<F: Future + ?Sized>(
    fut: Pin<&mut F>,
    cx: &mut Context<'_>,
    handle: &tokio::runtime::Handle,
    event_loop: &Arc<EventLoop>,
) -> Poll<F::Output> {
    let _runtime = handle.enter();
    let previous = CURRENT.with(|c| c.borrow_mut().replace(event_loop.clone()));
    let _restore = Restore(previous);
    fut.poll(cx)
}

/// A node's side of event-loop I/O: how to open a connection, and the loops that have one.
pub(crate) struct LoopNode {
    serial: u64,
    info: redis::ConnectionInfo,
    network_timeout: Duration,
    homes: Mutex<Vec<Weak<EventLoop>>>,
    /// The connections of the requests abandoned before their replies, kept for those
    /// attempts' undos ([`LoopNode::suspects_for`]) while they linger (`connection::LINGER`,
    /// at most `MAX_LINGERING`): one per request, since many calls in flight on one
    /// connection time out together (the loop's thread was blocked, the node stalled).
    suspects: Mutex<Vec<Suspect>>,
}

/// A connection a request was abandoned on, which attempt that was (if it was one) and when.
struct Suspect {
    socket: Arc<Socket>,
    attempt: Option<AttemptMark>,
    since: Instant,
}

impl LoopNode {
    /// `None` for what event-loop I/O does not serve (TLS; see the module docs).
    pub(crate) fn new(info: &redis::ConnectionInfo, network_timeout: Duration) -> Option<Arc<LoopNode>> {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        if !open::supports(info.addr()) {
            return None;
        }
        Some(Arc::new(LoopNode {
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            info: info.clone(),
            network_timeout,
            homes: Mutex::new(Vec::new()),
            suspects: Mutex::new(Vec::new()),
        }))
    }

    fn homes_add(&self, home: &Arc<EventLoop>) {
        let mut homes = locked(&self.homes);
        homes.retain(|h| h.strong_count() > 0);
        if !homes.iter().any(|h| std::ptr::eq(h.as_ptr(), Arc::as_ptr(home))) {
            homes.push(Arc::downgrade(home));
        }
    }

    /// Every connection a try of the attempt `request` undoes was left queued on and that is
    /// still open, however long ago: an acquire retried within its wait leaves one try per
    /// timeout, each on a connection of its own (the loop opens a new one after a suspicion),
    /// and each may still apply when a stalled Redis runs again. (A user trial of stop 41: the
    /// undo followed only one, and the other try's grant stayed for the whole lease; the
    /// multiplexed and calling-thread paths follow every try since stop 38.)
    fn suspects_for(&self, request: &Request) -> Vec<Arc<Socket>> {
        if !request.is_undo() {
            return Vec::new();
        }
        let mut suspects = locked(&self.suspects);
        Self::keep_lingering(&mut suspects);
        suspects
            .iter()
            .filter(|s| request.undoes(s.attempt.as_ref()))
            .map(|s| s.socket.clone())
            .collect()
    }

    /// Sends `request` on the calling loop's connection, or, for an undo, behind every try of
    /// its attempt left on a suspect connection (see the module docs: answered by a reply that
    /// came, else an error); `None` sends it on the multiplexed path.
    /// `ifeq`: the multiplexed connection's checks found Valkey's `SET IFEQ` / `DELIFEQ`, which
    /// lease-lock requests then use here too, as there.
    pub(crate) async fn eval(
        self: &Arc<Self>,
        request: &Request,
        ifeq: bool,
    ) -> Option<redis::RedisResult<Reply>> {
        let suspects = self.suspects_for(request);
        if suspects.is_empty() {
            let socket = current()?.connection(self)?;
            return Some(self.run_on(&socket, request, ifeq).await);
        }
        let replies = futures::future::join_all(suspects.iter().map(|s| self.run_on(s, request, ifeq))).await;
        let mut replies = replies.into_iter();
        let first = replies.next()?;
        Some(replies.fold(first, |kept, next| if kept.is_ok() { kept } else { next }))
    }

    async fn run_on(
        self: &Arc<Self>,
        socket: &Arc<Socket>,
        request: &Request,
        ifeq: bool,
    ) -> redis::RedisResult<Reply> {
        let mut call = socket.call(self, request);
        let scripts = Some(&socket.scripts);
        if ifeq && ifeq::handles(request) {
            ifeq::run(&mut call, request, scripts).await
        } else if let Some(plain) = request.plain.as_ref().filter(|_| socket.scripts.may_go_plain()) {
            run_plain(&mut call, plain).await
        } else {
            eval_script(&mut call, request, scripts).await
        }
    }

    /// Drops the suspects that no longer linger: ended, older than `LINGER`, or beyond the
    /// newest `MAX_LINGERING` (as on the multiplexed path, `connection.rs`).
    fn keep_lingering(suspects: &mut Vec<Suspect>) {
        suspects.retain(|s| s.since.elapsed() < LINGER && !s.socket.ended());
        let excess = suspects.len().saturating_sub(MAX_LINGERING);
        suspects.drain(..excess);
    }

    /// Called by a call dropped before its reply: the connection is suspect.
    fn suspected(&self, socket: &Arc<Socket>, attempt: Option<AttemptMark>) {
        let mut suspects = locked(&self.suspects);
        Self::keep_lingering(&mut suspects);
        suspects.push(Suspect {
            socket: socket.clone(),
            attempt,
            since: Instant::now(),
        });
    }
}

impl Drop for LoopNode {
    fn drop(&mut self) {
        for home in locked(&self.homes).drain(..) {
            if let Some(home) = home.upgrade() {
                home.forget(self.serial);
            }
        }
    }
}
