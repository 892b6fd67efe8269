//! [`FencedResource`]: the storage a lock protects, as Kleppmann's fencing argument needs it
//! ("How to do distributed locking", 2016): a tiny TCP server holding one counter that accepts
//! an operation only with a fencing token no lower than any it has seen, and records every
//! operation it rejects.
//!
//! Protocol (one line per request and per reply, on one connection per client):
//! - `READ <token>` -> `OK <value>` | `STALE <highest>`
//! - `WRITE <token> <value>` -> `OK` | `STALE <highest>`
//!
//! Rules, with fencing on:
//! - a token lower than the highest seen is stale;
//! - the highest token itself is accepted only on the connection that first used it (the same
//!   hold's next operation); on another connection it is a *reused* token (two holds with one
//!   token, as after a restart without persistence resets the counter), rejected too;
//! - reads are fenced as well as writes: a hold that read before a newer hold's first
//!   operation cannot then write a value computed from what it read.
//!
//! A lost update is an accepted `WRITE` whose value is not the current value + 1 (the worker
//! read, incremented and wrote; someone else's write came in between). With fencing on there
//! are none by construction as long as tokens are unique; with fencing off ([`Fencing::Off`],
//! for quorum locks, which have no tokens) it is the checker that catches two holders.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Whether the resource checks fencing tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fencing {
    /// Reject stale and reused tokens (see the module docs).
    On,
    /// Accept every operation (tokens are ignored); lost updates are still counted.
    Off,
}

/// Which operation a record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `READ`
    Read,
    /// `WRITE`
    Write,
}

/// One rejected operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The operation rejected.
    pub op: Op,
    /// Its token.
    pub token: u64,
    /// The highest token seen when it came.
    pub highest: u64,
    /// `true` when the token equalled the highest but came from another connection.
    pub reused: bool,
}

/// What the resource saw so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceReport {
    /// The counter.
    pub value: u64,
    /// The highest token accepted.
    pub highest: u64,
    /// Reads accepted.
    pub reads: u64,
    /// Writes accepted.
    pub writes: u64,
    /// Accepted writes whose value was not the current value + 1.
    pub lost_updates: u64,
    /// Every rejected operation, in arrival order.
    pub rejected: Vec<Rejection>,
}

#[derive(Default)]
struct State {
    report: ResourceReport,
    /// The connection that first used `report.highest`.
    highest_conn: u64,
}

/// The fenced resource server on 127.0.0.1 (a port chosen by the kernel); one thread per
/// connection. Dropping it stops accepting; open connections end when their peers close.
pub struct FencedResource {
    port: u16,
    fencing: Fencing,
    state: Arc<Mutex<State>>,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for FencedResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedResource")
            .field("port", &self.port)
            .field("fencing", &self.fencing)
            .finish()
    }
}

impl FencedResource {
    /// Starts the server.
    ///
    /// # Errors
    /// The listening socket could not be bound.
    pub fn start(fencing: Fencing) -> io::Result<FencedResource> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State::default()));
        let stopping = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let (state, stopping) = (state.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("fenced-resource".into())
                .spawn(move || accept_loop(listener, fencing, state, stopping))?
        };
        Ok(FencedResource {
            port,
            fencing,
            state,
            stopping,
            acceptor: Some(acceptor),
        })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A snapshot of what the resource saw.
    pub fn report(&self) -> ResourceReport {
        lock(&self.state).report.clone()
    }
}

impl Drop for FencedResource {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn accept_loop(listener: TcpListener, fencing: Fencing, state: Arc<Mutex<State>>, stopping: Arc<AtomicBool>) {
    static CONNECTIONS: AtomicU64 = AtomicU64::new(1);
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let conn = CONNECTIONS.fetch_add(1, Ordering::SeqCst);
        let state = state.clone();
        let _ = std::thread::Builder::new()
            .name("fenced-conn".into())
            .spawn(move || serve(stream, conn, fencing, &state));
    }
}

fn serve(stream: TcpStream, conn: u64, fencing: Fencing, state: &Mutex<State>) {
    let Ok(mut out) = stream.try_clone() else { return };
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        // A request counts only when its line is complete: a holder killed in mid-write
        // leaves a fragment, which must not be applied.
        match reader.read_line(&mut line) {
            Ok(n) if n > 0 && line.ends_with('\n') => {}
            _ => return,
        }
        let reply = handle(line.trim_end(), conn, fencing, &mut lock(state));
        if out.write_all(format!("{reply}\n").as_bytes()).is_err() {
            return;
        }
    }
}

fn handle(line: &str, conn: u64, fencing: Fencing, state: &mut State) -> String {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let (op, token, value) = match (fields.first().copied(), number(1), number(2)) {
        (Some("READ"), Some(token), _) => (Op::Read, token, None),
        (Some("WRITE"), Some(token), Some(value)) => (Op::Write, token, Some(value)),
        _ => return format!("ERR bad request {line:?}"),
    };
    let report = &mut state.report;
    if fencing == Fencing::On {
        let reused = token == report.highest && conn != state.highest_conn && report.highest != 0;
        if token < report.highest || reused {
            report.rejected.push(Rejection {
                op,
                token,
                highest: report.highest,
                reused,
            });
            return format!("STALE {}", report.highest);
        }
        if token > report.highest {
            report.highest = token;
            state.highest_conn = conn;
        }
    }
    match value {
        None => {
            report.reads += 1;
            format!("OK {}", report.value)
        }
        Some(value) => {
            if value != report.value + 1 {
                report.lost_updates += 1;
            }
            report.value = value;
            report.writes += 1;
            "OK".to_string()
        }
    }
}

/// What the resource answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Accepted; for a read, the counter's value.
    Ok(u64),
    /// Rejected: the token is stale or reused; the highest token the resource has seen.
    Stale(u64),
}

/// A client of a [`FencedResource`] (blocking; one connection, one request at a time).
#[derive(Debug)]
pub struct ResourceClient {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl ResourceClient {
    /// Connects to the resource on 127.0.0.1:`port`; every request is bounded by 10 s.
    ///
    /// # Errors
    /// The connection failed.
    pub fn connect(port: u16) -> io::Result<ResourceClient> {
        let stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(ResourceClient {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    fn request(&mut self, line: &str) -> io::Result<Answer> {
        self.writer.write_all(format!("{line}\n").as_bytes())?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "resource closed"));
        }
        let mut fields = reply.split_whitespace();
        let kind = fields.next();
        let number = fields.next().and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        match kind {
            Some("OK") => Ok(Answer::Ok(number)),
            Some("STALE") => Ok(Answer::Stale(number)),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("resource replied {reply:?}"),
            )),
        }
    }

    /// Reads the counter with `token`.
    ///
    /// # Errors
    /// The connection failed or the reply was not understood.
    pub fn read(&mut self, token: u64) -> io::Result<Answer> {
        self.request(&format!("READ {token}"))
    }

    /// Writes `value` with `token`.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn write(&mut self, token: u64, value: u64) -> io::Result<Answer> {
        self.request(&format!("WRITE {token} {value}"))
    }

    /// Closes the connection.
    pub fn close(self) {
        let _ = self.writer.shutdown(Shutdown::Both);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rising_tokens_and_rejects_stale_and_reused_ones() {
        let resource = FencedResource::start(Fencing::On).unwrap();
        let mut old = ResourceClient::connect(resource.port()).unwrap();
        let mut new = ResourceClient::connect(resource.port()).unwrap();
        assert_eq!(old.read(5).unwrap(), Answer::Ok(0));
        assert_eq!(new.read(6).unwrap(), Answer::Ok(0));
        // The older hold read before the newer one: its write would lose the newer's update.
        assert_eq!(old.write(5, 1).unwrap(), Answer::Stale(6));
        assert_eq!(new.write(6, 1).unwrap(), Answer::Ok(0));
        assert_eq!(new.write(6, 2).unwrap(), Answer::Ok(0), "the same hold again");
        // Token 6 again on another connection: a reused token.
        assert_eq!(old.read(6).unwrap(), Answer::Stale(6));
        let report = resource.report();
        assert_eq!(
            (report.value, report.writes, report.reads, report.highest),
            (2, 2, 2, 6)
        );
        assert_eq!(report.lost_updates, 0);
        assert_eq!(
            report.rejected,
            vec![
                Rejection {
                    op: Op::Write,
                    token: 5,
                    highest: 6,
                    reused: false
                },
                Rejection {
                    op: Op::Read,
                    token: 6,
                    highest: 6,
                    reused: true
                },
            ]
        );
    }

    #[test]
    fn unfenced_resource_accepts_everything_and_counts_lost_updates() {
        let resource = FencedResource::start(Fencing::Off).unwrap();
        let mut a = ResourceClient::connect(resource.port()).unwrap();
        let mut b = ResourceClient::connect(resource.port()).unwrap();
        assert_eq!(a.read(0).unwrap(), Answer::Ok(0));
        assert_eq!(b.read(0).unwrap(), Answer::Ok(0));
        assert_eq!(a.write(0, 1).unwrap(), Answer::Ok(0));
        assert_eq!(b.write(0, 1).unwrap(), Answer::Ok(0));
        let report = resource.report();
        assert_eq!((report.value, report.writes, report.lost_updates), (1, 2, 1));
        assert!(report.rejected.is_empty());
    }

    #[test]
    fn a_request_cut_short_by_a_crash_is_not_applied() {
        let resource = FencedResource::start(Fencing::On).unwrap();
        let mut raw = TcpStream::connect((Ipv4Addr::LOCALHOST, resource.port())).unwrap();
        raw.write_all(b"WRITE 1 1").unwrap(); // no newline: the writer died
        drop(raw);
        let mut c = ResourceClient::connect(resource.port()).unwrap();
        assert_eq!(c.read(2).unwrap(), Answer::Ok(0));
        assert_eq!(resource.report().writes, 0);
    }

    #[test]
    fn bad_requests_get_an_error_line() {
        let resource = FencedResource::start(Fencing::On).unwrap();
        let mut c = ResourceClient::connect(resource.port()).unwrap();
        assert!(c.request("WRITE x").is_err());
        assert_eq!(c.read(1).unwrap(), Answer::Ok(0), "the connection still works");
    }
}
