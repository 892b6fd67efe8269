//! The fault proxy on its own: each fault, per direction, in front of a plain echo server
//! (so the server side can be observed directly), then in front of a real redis-server.
//! Time bounds are generous; a delay is checked as a lower bound (the fault's definition).

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use redlatch_faults::{Direction, Fault, FaultProxy};
use redlatch_fleet::RedisServer;

/// An echo server on a free port; every chunk it receives is also sent to the channel.
fn echo_server() -> (u16, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 || stream.write_all(&buf[..n]).is_err() {
                        return;
                    }
                    let _ = seen.send(buf[..n].to_vec());
                }
            });
        }
    });
    (port, rx)
}

fn connect(proxy: &FaultProxy, read_timeout: Duration) -> TcpStream {
    let s = TcpStream::connect((Ipv4Addr::LOCALHOST, proxy.port())).unwrap();
    s.set_read_timeout(Some(read_timeout)).unwrap();
    s
}

/// Writes `msg` and reads exactly its length back.
fn round_trip(s: &mut TcpStream, msg: &[u8]) -> std::io::Result<Vec<u8>> {
    s.write_all(msg)?;
    let mut back = vec![0u8; msg.len()];
    s.read_exact(&mut back)?;
    Ok(back)
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + LONG;
    while !cond() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

const SHORT: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(10);

#[test]
fn passes_bytes_both_ways_and_counts_them() {
    let (port, seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut s = connect(&proxy, LONG);
    assert_eq!(round_trip(&mut s, b"hello").unwrap(), b"hello");
    assert_eq!(seen.recv_timeout(LONG).unwrap(), b"hello");
    // Counters move just after the bytes do.
    assert!(
        eventually(|| proxy.stats().forwarded == [5, 5]),
        "{:?}",
        proxy.stats()
    );
    let stats = proxy.stats();
    assert_eq!((stats.accepted, stats.open), (1, 1));
    assert_eq!(stats.dropped, [0, 0]);
    drop(s);
    assert!(
        eventually(|| proxy.stats().open == 0),
        "a closed client closes its connection"
    );
}

#[test]
fn delay_holds_each_chunk_back_and_keeps_the_order() {
    let (port, _seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut s = connect(&proxy, LONG);
    proxy.set(Direction::ToClient, Fault::Delay(Duration::from_millis(200)));
    let started = Instant::now();
    s.write_all(b"one").unwrap();
    s.write_all(b"two").unwrap();
    let mut back = [0u8; 6];
    s.read_exact(&mut back).unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(&back, b"onetwo");
    proxy.set(Direction::ToClient, Fault::Pass);
    assert_eq!(round_trip(&mut s, b"x").unwrap(), b"x");
}

#[test]
fn drop_swallows_replies_but_forwards_requests() {
    let (port, seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut s = connect(&proxy, SHORT);
    proxy.set(Direction::ToClient, Fault::Drop);
    let err = round_trip(&mut s, b"lost").unwrap_err();
    assert!(timed_out(&err), "{err}");
    assert_eq!(
        seen.recv_timeout(LONG).unwrap(),
        b"lost",
        "the request got through"
    );
    assert_eq!(proxy.stats().dropped, [0, 4]);
    proxy.set(Direction::ToClient, Fault::Pass);
    assert_eq!(
        round_trip(&mut s, b"next").unwrap(),
        b"next",
        "the connection lives on"
    );
}

#[test]
fn drop_of_requests_means_the_server_never_sees_them() {
    let (port, seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut s = connect(&proxy, SHORT);
    proxy.set(Direction::ToServer, Fault::Drop);
    assert!(timed_out(&round_trip(&mut s, b"gone").unwrap_err()));
    assert!(seen.recv_timeout(SHORT).is_err(), "nothing reached the server");
    assert!(
        eventually(|| proxy.stats().dropped == [4, 0]),
        "{:?}",
        proxy.stats()
    );
}

#[test]
fn blackhole_holds_bytes_and_delivers_them_once_healed() {
    let (port, seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    proxy.set_both(Fault::Blackhole);
    // New connections are accepted, and nothing is forwarded.
    let mut s = connect(&proxy, SHORT);
    assert!(timed_out(&round_trip(&mut s, b"held").unwrap_err()));
    assert!(seen.recv_timeout(SHORT).is_err());
    proxy.set_both(Fault::Pass);
    assert_eq!(
        seen.recv_timeout(LONG).unwrap(),
        b"held",
        "delivered late, like TCP"
    );
    s.set_read_timeout(Some(LONG)).unwrap();
    let mut back = [0u8; 4];
    s.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"held");
}

#[test]
fn reset_loses_the_chunk_and_resets_both_sides() {
    let (port, seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut s = connect(&proxy, LONG);
    assert_eq!(round_trip(&mut s, b"ok").unwrap(), b"ok");
    let _ = seen.recv_timeout(LONG);
    proxy.set(Direction::ToClient, Fault::Reset);
    let err = round_trip(&mut s, b"boom").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    assert_eq!(
        seen.recv_timeout(LONG).unwrap(),
        b"boom",
        "the request was applied"
    );
    assert_eq!(proxy.stats().resets, 1);
}

#[test]
fn once_hits_only_the_next_chunk() {
    let (port, _seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut s = connect(&proxy, LONG);
    proxy.once(Direction::ToClient, Fault::Reset);
    assert!(proxy.once_pending(Direction::ToClient));
    assert!(round_trip(&mut s, b"first").is_err());
    assert!(!proxy.once_pending(Direction::ToClient));
    let mut s = connect(&proxy, LONG);
    assert_eq!(round_trip(&mut s, b"second").unwrap(), b"second");
}

#[test]
fn reset_all_resets_open_connections_and_accepts_new_ones() {
    let (port, _seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut a = connect(&proxy, LONG);
    let mut b = connect(&proxy, LONG);
    assert_eq!(round_trip(&mut a, b"a").unwrap(), b"a");
    assert_eq!(round_trip(&mut b, b"b").unwrap(), b"b");
    proxy.reset_all();
    for s in [&mut a, &mut b] {
        let mut buf = [0u8; 1];
        let err = s.read(&mut buf).map(|n| n.to_string()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    }
    assert!(eventually(|| proxy.stats().resets == 2), "{:?}", proxy.stats());
    let mut c = connect(&proxy, LONG);
    assert_eq!(round_trip(&mut c, b"c").unwrap(), b"c");
}

#[test]
fn a_dead_upstream_resets_new_connections() {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let proxy = FaultProxy::start(port).unwrap(); // nothing listens there any more
    let mut s = connect(&proxy, LONG);
    let mut buf = [0u8; 1];
    let r = s.write_all(b"x").and_then(|_| s.read(&mut buf));
    assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
}

#[test]
fn works_in_front_of_redis_and_a_lost_reply_leaves_the_write_applied() {
    let server = RedisServer::start().unwrap();
    let proxy = FaultProxy::start(server.port()).unwrap();
    let exchange = |s: &mut TcpStream, request: &[u8], reply_len: usize| {
        s.write_all(request)?;
        let mut reply = vec![0u8; reply_len];
        s.read_exact(&mut reply).map(|_| reply)
    };
    let mut s = connect(&proxy, LONG);
    assert_eq!(exchange(&mut s, b"PING\r\n", 7).unwrap(), b"+PONG\r\n");
    proxy.once(Direction::ToClient, Fault::Reset);
    assert!(exchange(&mut s, b"SET k v\r\n", 5).is_err());
    assert_eq!(server.cli(&["GET", "k"]).unwrap(), "v");
    let mut s = connect(&proxy, LONG);
    assert_eq!(exchange(&mut s, b"GET k\r\n", 7).unwrap(), b"$1\r\nv\r\n");
}

#[test]
fn freeze_open_stalls_open_connections_for_good_and_passes_new_ones() {
    let (port, seen) = echo_server();
    let proxy = FaultProxy::start(port).unwrap();
    let mut old = connect(&proxy, SHORT);
    assert_eq!(round_trip(&mut old, b"a").unwrap(), b"a");
    let _ = seen.recv_timeout(LONG);
    proxy.freeze_open();
    assert!(timed_out(&round_trip(&mut old, b"b").unwrap_err()));
    assert!(
        seen.recv_timeout(SHORT).is_err(),
        "nothing left the frozen connection"
    );
    let mut new = connect(&proxy, LONG);
    assert_eq!(round_trip(&mut new, b"c").unwrap(), b"c");
    proxy.set_both(Fault::Pass);
    assert!(
        timed_out(&round_trip(&mut old, b"d").unwrap_err()),
        "still frozen"
    );
}
