//! Event-loop I/O (`redlatch::EventLoop`, `poll_on_loop`) as a binding drives it: a call
//! polled on the loop's thread sends its requests on a socket the loop watches, needs no
//! runtime worker once that socket is open, survives the socket being killed, and the socket
//! is unwatched when its client goes. The "loop" here is the test thread, which offers every
//! watched socket a read between polls (spurious `readable()` calls are allowed).

mod common;
use common::*;
use redlatch::{poll_on_loop, Client, EventLoop, LoopSocket, LoopWatcher};
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Watched {
    sockets: Mutex<Vec<LoopSocket>>,
    unwatched: Mutex<Vec<RawFd>>,
}

struct Watcher(Arc<Watched>);

impl LoopWatcher for Watcher {
    fn watch(&self, socket: LoopSocket) {
        self.0.sockets.lock().unwrap().push(socket);
    }
    fn watch_writable(&self, socket: LoopSocket) {
        self.0.sockets.lock().unwrap().push(socket);
    }
    fn unwatch_writable(&self, _fd: RawFd) {}
    fn unwatch(&self, fd: RawFd) {
        self.0.sockets.lock().unwrap().retain(|s| s.fd() != fd);
        self.0.unwatched.lock().unwrap().push(fd);
    }
    fn kick(&self) {}
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

/// Drives `fut` on this thread as an event loop would, within 10 s.
fn run<F: Future>(fut: F, rt: &tokio::runtime::Runtime, ev: &Arc<EventLoop>, watched: &Watched) -> F::Output {
    let mut fut = pin!(fut);
    let waker = Waker::from(Arc::new(Flag(AtomicBool::new(false))));
    let mut cx = Context::from_waker(&waker);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Poll::Ready(out) = poll_on_loop(fut.as_mut(), &mut cx, rt.handle(), ev) {
            return out;
        }
        assert!(Instant::now() < end, "the call did not finish within 10 s");
        let sockets = watched.sockets.lock().unwrap().clone();
        for socket in sockets {
            socket.readable();
            socket.writable();
        }
        ev.run_pending();
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Occupies the runtime's only worker until the returned sender is dropped.
fn block_the_worker(rt: &tokio::runtime::Runtime) -> mpsc::Sender<()> {
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (started_tx, started_rx) = mpsc::channel::<()>();
    rt.spawn(async move {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv();
    });
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    release_tx
}

#[test]
fn calls_polled_on_the_loop_use_its_socket_and_no_worker() {
    let s = server();
    if s.is_valkey() {
        eprintln!("skipped on Valkey: its lease locks keep the multiplexed path (DELIFEQ)");
        return;
    }
    let rt = runtime();
    let client = rt.block_on(Client::connect(&s.url())).expect("connect");
    let lock = client.lock("loop:lease").lease(Duration::from_secs(30));
    let watched = Arc::new(Watched::default());
    let ev = EventLoop::new(Box::new(Watcher(watched.clone())));

    // The loop's socket opens in the background on the first call polled on the loop.
    let end = Instant::now() + Duration::from_secs(10);
    while watched.sockets.lock().unwrap().is_empty() {
        assert!(Instant::now() < end, "no socket was watched");
        let hold = run(lock.acquire(), &rt, &ev, &watched).expect("acquire");
        run(hold.release(), &rt, &ev, &watched).expect("release");
    }
    assert_eq!(watched.sockets.lock().unwrap().len(), 1);

    // With the worker busy, the multiplexed connection cannot answer: these go on the loop's.
    let worker = block_the_worker(&rt);
    for _ in 0..20 {
        let hold = run(lock.acquire(), &rt, &ev, &watched).expect("acquire without a worker");
        assert!(run(hold.owned(), &rt, &ev, &watched).expect("owned"));
        run(hold.release(), &rt, &ev, &watched).expect("release without a worker");
    }
    drop(worker);

    // Killed: the calls in flight fail over (the core retries), and a new socket is opened.
    let mut admin = rt.block_on(raw(&s));
    for _ in 0..3 {
        let _: () = rt.block_on(cmd(
            &mut admin,
            &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
        ));
        for _ in 0..10 {
            let hold = run(lock.acquire(), &rt, &ev, &watched).expect("acquire after a kill");
            run(hold.release(), &rt, &ev, &watched).expect("release after a kill");
        }
    }
    let exists: i64 = rt.block_on(cmd(&mut admin, &["EXISTS", "loop:lease"]));
    assert_eq!(exists, 0);

    // The client gone, its socket is unwatched (closed) on the loop's thread.
    let before = watched.unwatched.lock().unwrap().len();
    let open = watched.sockets.lock().unwrap().len();
    assert!(open >= 1);
    drop(lock);
    drop(client);
    ev.run_pending();
    assert!(
        watched.sockets.lock().unwrap().is_empty(),
        "a socket of a dropped client is still watched"
    );
    assert!(watched.unwatched.lock().unwrap().len() > before);
}
