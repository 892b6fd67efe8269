//! A tiny TCP relay between a client and a real Redis, for faults a test must control
//! exactly: replies delayed (a slow node), or traffic silently dropped (a blackhole) and
//! later restored with the connections cut, so that nothing sent meanwhile ever arrives.
//! (The fuller fault proxy lives in tests/; this one only needs tokio.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Default)]
struct State {
    blackhole: AtomicBool,
    reply_delay_ms: AtomicU64,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// One relay to `127.0.0.1:<upstream>`, listening on a port of its own.
pub struct Relay {
    port: u16,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl Relay {
    pub async fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let accept = {
            let state = state.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        continue;
                    };
                    relay(client, server, &state);
                }
            })
        };
        Relay { port, state, accept }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Replies reach the client `delay` after Redis sent them (in order).
    pub fn delay_replies(&self, delay: Duration) {
        self.state
            .reply_delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// From now on nothing is forwarded in either direction: bytes are read and dropped.
    pub fn blackhole(&self) {
        self.state.blackhole.store(true, Ordering::Relaxed);
    }

    /// Cuts every connection made so far (what they carried during the blackhole is lost)
    /// and forwards new ones again.
    pub fn restore(&self) {
        for task in self.state.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
        self.state.blackhole.store(false, Ordering::Relaxed);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
        for task in self.state.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

fn relay(client: TcpStream, server: TcpStream, state: &Arc<State>) {
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    let (due_tx, mut due_rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let up = {
        let state = state.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = client_rx.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if state.blackhole.load(Ordering::Relaxed) {
                    continue;
                }
                if server_tx.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        })
    };
    let down = {
        let state = state.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = server_rx.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if state.blackhole.load(Ordering::Relaxed) {
                    continue;
                }
                let delay = Duration::from_millis(state.reply_delay_ms.load(Ordering::Relaxed));
                let _ = due_tx.send((tokio::time::Instant::now() + delay, buf[..n].to_vec()));
            }
        })
    };
    let deliver = tokio::spawn(async move {
        while let Some((due, bytes)) = due_rx.recv().await {
            tokio::time::sleep_until(due).await;
            if client_tx.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    state.tasks.lock().unwrap().extend([up, down, deliver]);
}
