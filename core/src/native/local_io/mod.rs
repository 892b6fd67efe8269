//! Calling-thread I/O for blocking calls on a single-node client: while a blocking call
//! ([`crate::blocking`], the C ABI, sync Python) polls the core future on its own thread, the
//! node's [`super::RedisTransport`] sends each request on a synchronous redis-rs connection
//! from that thread, instead of handing it to the runtime's worker that owns the multiplexed
//! connection and waiting to be woken with the reply.
//!
//! Why (issue 15, measured with `make bench`): with the multiplexed connection every sync call
//! crosses threads twice (calling thread -> worker -> calling thread), and that wake-up pair
//! cost sync Python 1.27-1.73x and C 1.38-1.46x the latency of the Rust async `lock`. Here an
//! uncontended acquire or release is done before its first poll returns: the calling thread
//! writes the `EVALSHA`, reads the reply and never parks. See the figures in `bench/`'s rows.
//!
//! How:
//! - [`poll_here`] polls a future once on the calling thread, inside the runtime's context
//!   (timers and spawns still work) and inside an I/O scope (a thread-local flag). Only what
//!   runs in that first poll on that thread uses the synchronous connection: a wait that
//!   needs pub/sub or a sleep returns `Pending`, and the caller then moves the rest of the
//!   future onto the runtime as a task, where it uses the multiplexed connection as before
//!   (so does everything else on the runtime: watchdog renewals, background releases).
//! - [`LocalConnections`] is the node's small pool of synchronous connections, made lazily
//!   from the same `ConnectionInfo` as the multiplexed one (TLS via rustls, AUTH/ACL, db),
//!   with read and write timeouts equal to the client's network timeout.
//!
//! Faults follow the transport's rules: a connection that errors is dropped and never
//! reused, so the driver's one retry after a connection error goes out on a new one (the
//! attempt and its retry share one network timeout, connects included); a request for
//! which no connection could be made within half its time (none idle) goes to the
//! multiplexed connection instead, unsent here (a paused server holds a new connection's
//! `AUTH`: the request then still queues on a connection that exists, to apply when the
//! server runs again); a
//! connection made in another process (after `fork()`) is never used (leaked, not closed, so
//! the parent's socket is untouched). A reply timeout cannot be cut short by the driver's
//! timer on this path (the thread is blocked in `read`), so it ends the I/O scope for the
//! rest of the call, and the call ends by the driver's timer (started before the first
//! attempt, due by then), as on the multiplexed connection: no retry elsewhere, which could be
//! granted and released before the stalled attempt applied. The
//! timed-out connection is kept, for a connect timeout, only for the undo of that attempt
//! (the same lock: `Request::undoes`), which must be queued behind the attempt on the same
//! connection (see `connection.rs`); redis-rs skips the late reply before reading the undo's.
//!
//! Not for Cluster, Sentinel or quorum clients, nor a TLS server-name override, `WAIT`
//! (sync replicas) or Valkey's `DELIFEQ` path: those keep the multiplexed path (a quorum's
//! nodes must be asked concurrently; the others need async-only pieces of redis-rs).

mod connections;

pub(crate) use connections::{LocalConnections, Sent};

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Not inside [`poll_here`]: requests go to the multiplexed connection.
    Off,
    /// Inside [`poll_here`]: requests are sent from this thread. `failing_since` is when the
    /// first of a run of failed sends began (an attempt and its retry share one network
    /// timeout, as the driver's timer makes them do on the multiplexed path).
    On { failing_since: Option<Instant> },
    /// Inside [`poll_here`] after a reply timeout: the rest of the call leaves this thread.
    Ended,
}

thread_local! {
    static SCOPE: Cell<Scope> = const { Cell::new(Scope::Off) };
}

/// `true` when the current thread may do a request's I/O itself (see the module docs).
pub(crate) fn active() -> bool {
    SCOPE.with(|s| matches!(s.get(), Scope::On { .. }))
}

/// The time a send starting now may take: `network_timeout`, less what failed sends since
/// the last reply took. `None` when nothing is left.
pub(crate) fn budget(network_timeout: Duration) -> Option<Duration> {
    SCOPE.with(|s| match s.get() {
        Scope::On {
            failing_since: Some(since),
        } => network_timeout
            .checked_sub(since.elapsed())
            .filter(|d| !d.is_zero()),
        _ => Some(network_timeout),
    })
}

/// A send started at `started` failed (after a reply timeout, also call [`end_scope`]).
pub(crate) fn failed(started: Instant) {
    SCOPE.with(|s| {
        if let Scope::On { failing_since: None } = s.get() {
            s.set(Scope::On {
                failing_since: Some(started),
            });
        }
    });
}

/// A reply came: the next send has a whole network timeout again.
pub(crate) fn replied() {
    SCOPE.with(|s| {
        if let Scope::On {
            failing_since: Some(_),
        } = s.get()
        {
            s.set(Scope::On { failing_since: None });
        }
    });
}

/// After a reply timeout on this thread: no more calling-thread I/O in this scope.
pub(crate) fn end_scope() {
    SCOPE.with(|s| {
        if active() {
            s.set(Scope::Ended);
        }
    });
}

/// Restores the scope a [`poll_here`] found, also when the future panics.
struct Restore(Scope);

impl Drop for Restore {
    fn drop(&mut self) {
        SCOPE.with(|s| s.set(self.0));
    }
}

/// Runs `fut` with calling-thread I/O off, for a call that sends several requests at once
/// (a multi-lock's members released concurrently, or rolled back): the
/// calling thread would send them one after another, each blocking for up to a whole network
/// timeout on a stalled server, where the multiplexed connection waits for all of them within
/// one (a user trial of stop 42: 2.02 s for a multi-lock of two members, network timeout 1 s).
pub(crate) async fn concurrently<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        let _restore = Restore(SCOPE.with(|s| s.replace(Scope::Off)));
        fut.as_mut().poll(cx)
    })
    .await
}

/// Polls `fut` once on the calling thread, inside `handle`'s runtime context, with
/// calling-thread I/O on for the requests of single-node clients (see the module docs).
///
/// `Ready` means the call is done (an uncontended acquire or a release usually is); on
/// `Pending`, the caller must move the rest of the future onto the runtime (for example
/// `handle.spawn(fut)` of a `Pin<Box<_>>`) and wait for it there: the first poll registered no
/// waker that will ever be woken (it used a no-op one), and a task polls it again at once.
/// Blocks the calling thread for the I/O it does: call it only where blocking is allowed (not
/// on a runtime's worker thread).
///
/// # Panics
/// When `fut` panics (the panic propagates).
pub fn poll_here<F: Future + ?Sized>(fut: Pin<&mut F>, handle: &tokio::runtime::Handle) -> Poll<F::Output> {
    let _runtime = handle.enter();
    let _restore = Restore(SCOPE.with(|s| s.replace(Scope::On { failing_since: None })));
    fut.poll(&mut Context::from_waker(Waker::noop()))
}
