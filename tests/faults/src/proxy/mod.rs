//! [`FaultProxy`]: a TCP proxy between a client and a `redis-server` on 127.0.0.1 that
//! injects network faults per direction, switchable at run time from the test.
//!
//! Why a proxy of our own: these kernels have no `tc netem`, and `iptables` needs root and a
//! network namespace. A userspace proxy reaches the same effects on loopback, per node and per
//! direction, from any test thread.
//!
//! Faults ([`Fault`]), set per [`Direction`]:
//! - `Pass`: bytes are forwarded as they arrive.
//! - `Delay(d)`: each chunk is forwarded `d` after it was read, in order (latency).
//! - `Drop`: bytes are read and discarded; the connection stays open. Note: no real network
//!   loses bytes inside a live TCP connection, and a pipelined client (redis-rs multiplexes
//!   many requests on one connection) matches replies to requests by order, so after a dropped
//!   reply every later reply on that connection answers the previous request. Scenarios that
//!   model "the reply was lost" therefore use `Reset` (the reply is lost *and* the connection
//!   dies, as when a node or link fails after applying the request), or follow `Drop` with
//!   [`FaultProxy::reset_all`].
//! - `Blackhole`: nothing is read or forwarded (a partition: TCP keeps the bytes). They are
//!   delivered, late, once the direction passes again, as a healed link delivers a
//!   retransmitted request the client may have given up on. New connections are accepted.
//! - `Reset`: the next chunk is discarded and the connection is reset (RST) on both sides.
//!
//! [`FaultProxy::once`] applies a fault to the next chunk only (one lost reply).
//! [`FaultProxy::reset_all`] resets every open connection now (a link flap).
//! [`FaultProxy::freeze_open`] blackholes the connections open now, for good, while new ones
//! pass: a half-open connection (a firewall or NAT that dropped the flow, a host gone without
//! a RST), which only a client that gives up on it recovers from.
//! The proxy runs on its own tokio runtime (one worker thread), so it serves blocking and
//! async tests alike and keeps running while the test's runtime is busy.

mod pump;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

/// Which way bytes travel through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server: requests.
    ToServer,
    /// Server to client: replies (and pub/sub messages).
    ToClient,
}

impl Direction {
    fn index(self) -> usize {
        match self {
            Direction::ToServer => 0,
            Direction::ToClient => 1,
        }
    }
}

/// What the proxy does with the bytes of one direction (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward bytes as they arrive.
    Pass,
    /// Forward each chunk this long after it was read, keeping the order.
    Delay(Duration),
    /// Read and discard; the connection stays open.
    Drop,
    /// Neither read nor forward until the direction is set to something else.
    Blackhole,
    /// Discard the next chunk and reset the connection on both sides.
    Reset,
}

/// Counters of one proxy, for asserting that a fault really bit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Connections accepted so far.
    pub accepted: u64,
    /// Connections open now.
    pub open: u64,
    /// Connections reset by a `Reset` fault or [`FaultProxy::reset_all`].
    pub resets: u64,
    /// Bytes forwarded, indexed by `[to server, to client]`.
    pub forwarded: [u64; 2],
    /// Bytes discarded by `Drop` or `Reset`, indexed by `[to server, to client]`.
    pub dropped: [u64; 2],
}

/// The fault of each direction, plus one-shot faults.
#[derive(Debug, Clone, Copy)]
struct DirectionState {
    fault: Fault,
    once: Option<Fault>,
}

/// State shared by the proxy handle, the acceptor and every connection.
struct Shared {
    directions: Mutex<[DirectionState; 2]>,
    /// Bumped on every change of a direction, so pumps re-read their fault at once.
    changed: watch::Sender<u64>,
    /// Bumped by `reset_all`.
    reset_all: watch::Sender<u64>,
    accepted: AtomicU64,
    /// Connections numbered below this (by accept order, from 0) are frozen for good.
    frozen_below: AtomicU64,
    open: AtomicU64,
    resets: AtomicU64,
    forwarded: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
}

impl Shared {
    fn directions(&self) -> std::sync::MutexGuard<'_, [DirectionState; 2]> {
        self.directions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fault in force, without consuming a one-shot fault.
    fn current(&self, direction: Direction) -> Fault {
        let state = self.directions()[direction.index()];
        state.once.unwrap_or(state.fault)
    }

    /// The fault for the chunk just read, consuming a one-shot fault.
    fn take(&self, direction: Direction) -> Fault {
        let mut states = self.directions();
        let state = &mut states[direction.index()];
        state.once.take().unwrap_or(state.fault)
    }

    fn bump(sender: &watch::Sender<u64>) {
        sender.send_modify(|generation| *generation += 1);
    }
}

/// A fault-injecting TCP proxy in front of one server on 127.0.0.1 (see the module docs).
/// Listens on a port chosen by the kernel; dropping it closes every connection.
pub struct FaultProxy {
    port: u16,
    upstream: u16,
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("port", &self.port)
            .field("upstream", &self.upstream)
            .field("to_server", &self.shared.current(Direction::ToServer))
            .field("to_client", &self.shared.current(Direction::ToClient))
            .finish()
    }
}

impl FaultProxy {
    /// Starts a proxy to `127.0.0.1:<upstream>`, passing everything. Each accepted
    /// connection opens its own upstream connection; when that fails (the server is down) the
    /// client's connection is reset.
    ///
    /// # Errors
    /// The runtime or the listening socket could not be created.
    pub fn start(upstream: u16) -> io::Result<FaultProxy> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fault-proxy")
            .enable_all()
            .build()?;
        let pass = DirectionState {
            fault: Fault::Pass,
            once: None,
        };
        let shared = Arc::new(Shared {
            directions: Mutex::new([pass, pass]),
            changed: watch::channel(0).0,
            reset_all: watch::channel(0).0,
            accepted: AtomicU64::new(0),
            frozen_below: AtomicU64::new(0),
            open: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            forwarded: Default::default(),
            dropped: Default::default(),
        });
        // Bound here, not with `block_on`: the proxy may be started inside a test's runtime.
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let listener = {
            let _context = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let upstream_addr = SocketAddr::from((Ipv4Addr::LOCALHOST, upstream));
        runtime.spawn(pump::accept_loop(listener, upstream_addr, shared.clone()));
        Ok(FaultProxy {
            port,
            upstream,
            shared,
            runtime: Some(runtime),
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>`: the URL to give a client instead of the server's.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port of the server behind the proxy.
    pub fn upstream_port(&self) -> u16 {
        self.upstream
    }

    /// Sets the fault of `direction` (and clears a pending [`once`](Self::once) fault there).
    /// Connections already open switch at once.
    pub fn set(&self, direction: Direction, fault: Fault) {
        self.shared.directions()[direction.index()] = DirectionState { fault, once: None };
        Shared::bump(&self.shared.changed);
    }

    /// Sets the same fault both ways (a partition with `Blackhole`, healing with `Pass`).
    pub fn set_both(&self, fault: Fault) {
        *self.shared.directions() = [DirectionState { fault, once: None }; 2];
        Shared::bump(&self.shared.changed);
    }

    /// Applies `fault` to the next chunk read in `direction` only, then the direction's own
    /// fault again: `once(ToClient, Reset)` loses one reply and resets its connection.
    ///
    /// # Panics
    /// For `Pass` or `Blackhole`, which have no one-chunk meaning.
    pub fn once(&self, direction: Direction, fault: Fault) {
        assert!(
            matches!(fault, Fault::Drop | Fault::Reset | Fault::Delay(_)),
            "once() takes Drop, Reset or Delay, not {fault:?}"
        );
        self.shared.directions()[direction.index()].once = Some(fault);
        Shared::bump(&self.shared.changed);
    }

    /// `true` while a [`once`](Self::once) fault of `direction` has not yet hit a chunk.
    pub fn once_pending(&self, direction: Direction) -> bool {
        self.shared.directions()[direction.index()].once.is_some()
    }

    /// Resets every open connection (RST both ways); new connections are accepted as usual.
    pub fn reset_all(&self) {
        Shared::bump(&self.shared.reset_all);
    }

    /// Freezes every connection open now, for good (nothing read or forwarded, no reset);
    /// connections accepted later pass as usual.
    pub fn freeze_open(&self) {
        let accepted = self.shared.accepted.load(Ordering::SeqCst);
        self.shared.frozen_below.store(accepted, Ordering::SeqCst);
        Shared::bump(&self.shared.changed);
    }

    /// The proxy's counters so far.
    pub fn stats(&self) -> ProxyStats {
        let load = |a: &AtomicU64| a.load(Ordering::SeqCst);
        let s = &self.shared;
        ProxyStats {
            accepted: load(&s.accepted),
            open: load(&s.open),
            resets: load(&s.resets),
            forwarded: [load(&s.forwarded[0]), load(&s.forwarded[1])],
            dropped: [load(&s.dropped[0]), load(&s.dropped[1])],
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Never a blocking shutdown: the proxy may be dropped inside a test's async runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
