//! A TCP proxy on a run-time port that can hold back what the upstream server sends, to make
//! a replica fall behind its master on purpose (the replication-lag half of a failover test).
//!
//! Why hold rather than drop: held bytes are delivered in order once released, so the stream
//! stays valid; while held, the replica neither applies nor acknowledges the master's writes,
//! which is exactly the window in which a failover loses them. The client-to-upstream
//! direction always flows, so the connection's end is seen at once.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Each read's bound, so a hold takes effect within it.
const READ_TIMEOUT: Duration = Duration::from_millis(20);

/// A proxy from a local port to `127.0.0.1:<upstream>`. Dropping it stops accepting; open
/// connections end when either side closes.
#[derive(Debug)]
pub struct HoldingProxy {
    port: u16,
    hold: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl HoldingProxy {
    /// Listens on a free 127.0.0.1 port and forwards each connection to `upstream`.
    ///
    /// # Errors
    /// The listening socket cannot be made.
    pub fn start(upstream: u16) -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let hold = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (hold.clone(), stop.clone());
        thread::spawn(move || accept_loop(listener, upstream, h, s));
        Ok(HoldingProxy { port, hold, stop })
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// While `true`, bytes from the upstream server are held back (not read). Turning it on
    /// returns once no read that started before is still in progress.
    pub fn hold(&self, on: bool) {
        self.hold.store(on, Ordering::SeqCst);
        if on {
            thread::sleep(READ_TIMEOUT * 3);
        }
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.hold.store(false, Ordering::SeqCst);
    }
}

fn accept_loop(listener: TcpListener, upstream: u16, hold: Arc<AtomicBool>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                let Ok(server) = TcpStream::connect((Ipv4Addr::LOCALHOST, upstream)) else {
                    continue;
                };
                let _ = client.set_nonblocking(false);
                pipe(&client, &server, None, stop.clone());
                pipe(&server, &client, Some(hold.clone()), stop.clone());
            }
            Err(_) => thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Copies `from` to `to` on a thread; with `hold`, pauses reading while it is set.
fn pipe(from: &TcpStream, to: &TcpStream, hold: Option<Arc<AtomicBool>>, stop: Arc<AtomicBool>) {
    let (Ok(mut from), Ok(mut to)) = (from.try_clone(), to.try_clone()) else {
        return;
    };
    thread::spawn(move || {
        let _ = from.set_read_timeout(Some(READ_TIMEOUT));
        let mut buf = [0u8; 16 * 1024];
        loop {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if hold.as_ref().is_some_and(|h| h.load(Ordering::SeqCst)) {
                thread::sleep(Duration::from_millis(5));
                continue;
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    });
}
