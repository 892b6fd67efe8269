//! The proxy's moving parts: the accept loop, one task per connection, and the pump that
//! carries one direction of one connection through the fault in force.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::{Direction, Fault, Shared};

/// Why a connection ended abnormally: it must be reset on both sides.
struct ResetBoth;

/// Accepts connections until the runtime shuts down.
pub(super) async fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let number = shared.accepted.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(serve(client, number, upstream, shared.clone()));
    }
}

/// Counts a connection as open for as long as it lives.
struct OpenGuard(Arc<Shared>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn serve(client: TcpStream, number: u64, upstream: SocketAddr, shared: Arc<Shared>) {
    shared.open.fetch_add(1, Ordering::SeqCst);
    let _open = OpenGuard(shared.clone());
    let server = match TcpStream::connect(upstream).await {
        Ok(server) => server,
        Err(_) => {
            // The server is down: the client sees its connection reset, as a refused one.
            let _ = client.set_zero_linger();
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let mut resets = shared.reset_all.subscribe();
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let outcome = {
        let up = pump(
            &shared,
            number,
            Direction::ToServer,
            &mut client_read,
            &mut server_write,
        );
        let down = pump(
            &shared,
            number,
            Direction::ToClient,
            &mut server_read,
            &mut client_write,
        );
        tokio::select! {
            result = async { tokio::try_join!(up, down) } => result.map(|_| ()),
            _ = resets.changed() => Err(ResetBoth),
        }
    };
    if outcome.is_err() {
        shared.resets.fetch_add(1, Ordering::SeqCst);
        // SO_LINGER 0 makes the close send RST instead of FIN. A dropped write half would
        // first shut down (FIN), so the halves are put back together and closed whole.
        for (read, write) in [(client_read, client_write), (server_read, server_write)] {
            if let Ok(stream) = read.reunite(write) {
                let _ = stream.set_zero_linger();
            }
        }
    }
}

/// Carries bytes from `from` to `to` through the fault of `direction` until `from` ends
/// (then `to` is shut down for writing, keeping TCP half-close) or a reset is called for.
async fn pump(
    shared: &Shared,
    number: u64,
    direction: Direction,
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
) -> Result<(), ResetBoth> {
    let index = direction.index();
    let mut changes = shared.changed.subscribe();
    // Chunks read and not yet written, each with the time it is due.
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut ended = false;
    loop {
        if ended && queue.is_empty() {
            let _ = to.shutdown().await;
            return Ok(());
        }
        let frozen = number < shared.frozen_below.load(Ordering::SeqCst);
        let held = frozen || shared.current(direction) == Fault::Blackhole;
        let due = if held {
            None
        } else {
            queue.front().map(|(at, _)| *at)
        };
        tokio::select! {
            read = from.read(&mut buf), if !held && !ended => match read {
                Ok(0) => ended = true,
                Ok(n) => {
                    let now = Instant::now();
                    match shared.take(direction) {
                        // A direction blackholed between the check and the read keeps the
                        // chunk queued: it is written once the direction passes again.
                        Fault::Pass | Fault::Blackhole => queue.push_back((now, buf[..n].to_vec())),
                        Fault::Delay(d) => queue.push_back((now + d, buf[..n].to_vec())),
                        Fault::Drop => {
                            shared.dropped[index].fetch_add(n as u64, Ordering::SeqCst);
                        }
                        Fault::Reset => {
                            shared.dropped[index].fetch_add(n as u64, Ordering::SeqCst);
                            return Err(ResetBoth);
                        }
                    }
                }
                // The peer reset its side: pass the reset on.
                Err(_) => return Err(ResetBoth),
            },
            _ = sleep_until(due), if due.is_some() => {
                if let Some((_, chunk)) = queue.pop_front() {
                    if to.write_all(&chunk).await.is_err() {
                        return Err(ResetBoth);
                    }
                    shared.forwarded[index].fetch_add(chunk.len() as u64, Ordering::SeqCst);
                }
            }
            _ = changes.changed() => {}
        }
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
