//! docs/reliability.md: transparent to `CLIENT KILL` of the command connections. A user trial
//! of stop 38 (12 threads sharing a C client, `CLIENT KILL TYPE normal` every 450 ms) saw
//! releases fail with "unexpected end of file": one kill closes every idle calling-thread
//! connection of the client, and the retries took them one after the other.

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[test]
fn a_kill_of_every_idle_calling_thread_connection_is_transparent() {
    let s = server();
    if s.is_valkey() {
        // A client of a server with DELIFEQ keeps every call on the multiplexed connection
        // (`RedisTransport::eval_local`): no calling-thread connections to kill.
        eprintln!("skipped on Valkey: no calling-thread connections");
        return;
    }
    let client = redlatch::blocking::Client::connect(&s.url()).unwrap();
    // Four calls in flight at once, each on a calling-thread connection of its own (the server
    // sleeps, so none is idle when the next starts): afterwards four idle connections.
    let admin = std::thread::spawn({
        let url = s.admin_url();
        move || {
            let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
            let _: () = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("0.3")
                .query(&mut conn)
                .unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(50));
    let start = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let (client, start) = (client.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let lock = client.lock(format!("kill:{i}")).lease(Duration::from_secs(10));
                lock.try_acquire().unwrap().unwrap().release().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    admin.join().unwrap();
    let killed = s
        .cli(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])
        .unwrap();
    assert!(killed.parse::<u32>().unwrap() >= 4, "killed {killed}");
    for i in 0..4 {
        let lock = client
            .lock(format!("kill:after:{i}"))
            .lease(Duration::from_secs(10));
        let guard = lock.try_acquire().expect("transparent to CLIENT KILL").unwrap();
        guard.release().expect("transparent to CLIENT KILL");
    }
}
