//! Script cache flushes and killed connections during a run cause no user-visible errors.

mod common;
use common::*;
use redlatch::{Client, ErrorKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_mid_run_is_invisible() {
    let s = server();
    let client = client(&s).await;
    let stop = Arc::new(AtomicBool::new(false));
    let flusher = {
        let stop = stop.clone();
        let mut conn = raw(&s).await;
        tokio::spawn(async move {
            let mut flushes = 0;
            while !stop.load(Ordering::Relaxed) {
                let _: () = cmd(&mut conn, &["SCRIPT", "FLUSH"]).await;
                flushes += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            flushes
        })
    };
    for i in 0..600 {
        let lock = if i % 2 == 0 {
            client.lock("sf")
        } else {
            client.rlock("sf")
        };
        let g = lock
            .lease(Duration::from_secs(5))
            .acquire()
            .await
            .expect("acquire during SCRIPT FLUSH");
        g.extend(Duration::from_secs(5))
            .await
            .expect("extend during SCRIPT FLUSH");
        g.release().await.expect("release during SCRIPT FLUSH");
    }
    stop.store(true, Ordering::Relaxed);
    assert!(flusher.await.unwrap() > 10, "the flush loop really ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connections_reconnect_and_work_continues() {
    let s = server();
    let client = client(&s).await;
    let counter = server();
    let stop = Arc::new(AtomicBool::new(false));
    let killer = {
        let stop = stop.clone();
        let mut conn = raw(&s).await;
        tokio::spawn(async move {
            let mut kills = 0i64;
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(40)).await;
                // Kill every normal client except this one (SKIPME yes is the default).
                kills += cmd::<i64>(&mut conn, &["CLIENT", "KILL", "TYPE", "normal"]).await;
                kills += cmd::<i64>(&mut conn, &["CLIENT", "KILL", "TYPE", "pubsub"]).await;
            }
            kills
        })
    };
    let total = hammer(
        |_| client.lock("ck").lease(Duration::from_secs(5)),
        &counter,
        4,
        150,
    )
    .await;
    assert_eq!(total, 600);
    // Reentrant releases retried after a killed connection replay their latch, never
    // decrementing twice.
    let total = hammer(
        |_| client.rlock("ck-r").lease(Duration::from_secs(5)),
        &counter,
        4,
        150,
    )
    .await;
    assert_eq!(total, 1200);
    stop.store(true, Ordering::Relaxed);
    assert!(killer.await.unwrap() > 0, "connections were really killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restart_is_survived_by_waiters() {
    let s = server();
    let client = client(&s).await;
    let lock = client.lock("restart").lease(Duration::from_millis(500));
    let _held = lock.acquire().await.unwrap();
    let waiter = {
        let lock = lock.clone().wait(Duration::from_secs(20));
        tokio::spawn(async move { lock.acquire().await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.restart().unwrap(); // no persistence: the lock is gone after the restart
    let g = within(Duration::from_secs(25), waiter)
        .await
        .unwrap()
        .expect("waiter acquires after restart");
    g.release().await.unwrap();
}

/// A peer that is not Redis (here: it answers HTTP) is a connection problem, not a Redis
/// error reply, and the message says so.
#[tokio::test]
async fn a_server_that_is_not_redis_is_a_connection_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0
                        || socket
                            .write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                            .await
                            .is_err()
                    {
                        break;
                    }
                }
            });
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let err = within(
        Duration::from_secs(10),
        Client::builder(&url)
            .network_timeout(Duration::from_millis(500))
            .connect(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("not the Redis protocol"), "{err}");
    // redis-rs' parse error spans a line per unexpected byte (a user trial saw it in C).
    assert!(!err.message().contains('\n'), "one line: {err:?}");
}

/// A server that does not answer (paused) while the connection is made: the error says what
/// that may mean, not only redis-rs' "timed out" (a user trial of stop 42).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_not_made_in_time_says_the_server_did_not_answer() {
    let s = server();
    s.pause().unwrap();
    let connected = within(
        Duration::from_secs(10),
        Client::builder(&s.url())
            .network_timeout(Duration::from_millis(500))
            .connect(),
    )
    .await;
    s.resume().unwrap();
    let err = connected.expect_err("no connection to a paused server");
    assert_eq!(err.kind(), ErrorKind::Connection, "{err}");
    assert!(err.message().contains("no connection within 500 ms"), "{err}");
    assert!(err.message().contains("paused or overloaded"), "{err}");
}

#[test]
fn a_client_whose_runtime_was_shut_down_fails_calls_at_once_instead_of_panicking() {
    // The shape of a `static` client shared by #[tokio::test]s, each with its own runtime:
    // before stop 37 every call on the second runtime panicked inside tokio (a user trial).
    let s = server();
    let first = tokio::runtime::Runtime::new().unwrap();
    let client = first.block_on(Client::connect(&s.url())).unwrap();
    let held = first
        .block_on(client.lock("gone:held").lease(Duration::from_secs(30)).acquire())
        .unwrap();
    drop(first);
    let second = tokio::runtime::Runtime::new().unwrap();
    second.block_on(async {
        let lock = client
            .lock("gone:x")
            .lease(Duration::from_secs(5))
            .wait(Duration::from_secs(60));
        let errors = [
            within(Duration::from_secs(10), lock.acquire())
                .await
                .map(|_| ())
                .unwrap_err(),
            within(Duration::from_secs(10), lock.locked())
                .await
                .map(|_| ())
                .unwrap_err(),
            within(Duration::from_secs(10), client.rlock("gone:r").acquire())
                .await
                .map(|_| ())
                .unwrap_err(),
            within(Duration::from_secs(10), held.release()).await.unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
            assert!(e.is_permanent() && e.message().contains("runtime"), "{e}");
        }
    });
    // A hold's loss awaited there (a Rust user trial of stop 45: a panic inside tokio): nothing
    // renews a watchdog hold any more, so it is lost at its deadline.
    let first = tokio::runtime::Runtime::new().unwrap();
    let renewing = first
        .block_on(
            Client::builder(&s.url())
                .watchdog_timeout(Duration::from_millis(500))
                .connect(),
        )
        .unwrap();
    let watched = first.block_on(renewing.rlock("gone:watched").acquire()).unwrap();
    drop(first);
    second.block_on(async {
        let reason = within(Duration::from_secs(10), watched.loss()).await;
        assert_eq!(reason, Some(redlatch::Reason::Expired));
        assert!(watched.is_lost() && !watched.is_held());
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enormous_hand_off_grace_is_refused_at_connect() {
    // It is added to the clock at each hand-off: u64::MAX seconds overflowed there (unchecked
    // before stop 37, found by a user trial).
    let s = server();
    let builder = Client::builder(&s.url()).handoff_grace(Duration::from_secs(u64::MAX));
    let e = within(Duration::from_secs(10), builder.connect())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("hand-off grace"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_the_server_lacks_is_refused_at_once_without_retries() {
    // A user trial of stop 39: `redis://host:port/16` (the server has 0-15) was a plain
    // `Redis` error after a lazily connected client's acquire had retried its whole wait.
    let s = server();
    for db in ["16", "-1"] {
        let url = format!("{}/{db}", s.url().trim_end_matches('/'));
        let e = within(Duration::from_secs(10), Client::builder(&url).connect())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{db}: {e}");
        assert!(e.message().contains("no database of the URL's number"), "{e}");
        let lazy = Client::builder(&url).build_lazy().unwrap();
        let started = std::time::Instant::now();
        let e = lazy
            .lock("db-range")
            .wait(Duration::from_secs(30))
            .acquire()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{db}: {e}");
        // Generous: a retried error would take the whole 30 s wait.
        assert!(started.elapsed() < Duration::from_secs(15), "{db}: retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_rides_out_a_connection_closed_as_it_is_made() {
    // A Rust user trial of stop 49: during a `CLIENT KILL` loop 31 of 600 connects failed,
    // saying "is this a TLS port", although calls on connected clients all succeeded. Here a
    // front closes the first connection as it is made and relays the next ones to Redis.
    let s = server();
    let front = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://127.0.0.1:{}", front.local_addr().unwrap().port());
    let upstream = s.port();
    let relay = tokio::spawn(async move {
        let (first, _) = front.accept().await.unwrap();
        drop(first);
        while let Ok((mut client, _)) = front.accept().await {
            let mut server = tokio::net::TcpStream::connect(("127.0.0.1", upstream))
                .await
                .unwrap();
            tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    let client = within(Duration::from_secs(10), Client::connect(&url))
        .await
        .unwrap();
    let held = client.lock("connect:closed").acquire().await.unwrap();
    held.release().await.unwrap();
    relay.abort();
}
