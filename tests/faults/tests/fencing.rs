//! Fencing tokens against the fenced resource, outside any fault: what a holder must be able
//! to rely on before faults are added.

mod common;
use common::*;

use std::time::Duration;

use redlatch::blocking;
use redlatch_faults::{Answer, FencedResource, Fencing, ResourceClient};

#[test]
fn lease_lock_tokens_rise_with_every_grant_across_clients() {
    let server = server();
    let resource = FencedResource::start(Fencing::On).unwrap();
    let lock = name("fencing-lease");
    let clients: Vec<blocking::Client> = (0..3)
        .map(|_| blocking::Client::connect(&server.url()).unwrap())
        .collect();
    let mut resources: Vec<ResourceClient> = (0..3)
        .map(|_| ResourceClient::connect(resource.port()).unwrap())
        .collect();
    let mut last = 0;
    for round in 0..30 {
        let i = round % 3;
        let guard = clients[i]
            .lock(lock.as_str())
            .lease(Duration::from_secs(5))
            .fenced()
            .acquire()
            .unwrap();
        let token = guard.fencing_token().unwrap();
        assert!(token > last, "token {token} after {last}");
        last = token;
        let Answer::Ok(v) = resources[i].read(token).unwrap() else {
            panic!("rejected")
        };
        assert_eq!(resources[i].write(token, v + 1).unwrap(), Answer::Ok(0));
        guard.release().unwrap();
    }
    let report = resource.report();
    assert_eq!(
        (report.value, report.lost_updates, report.rejected.len()),
        (30, 0, 0)
    );
}

/// Issue 10 item 7: a re-entry must keep the outer hold's token. It used to take a
/// new, higher token, so once it was released the outer hold's own token was below one the
/// resource had seen, and its next write was refused although it still held the lock.
#[test]
fn reentry_keeps_the_outer_token_so_the_outer_hold_can_still_write() {
    let server = server();
    let resource = FencedResource::start(Fencing::On).unwrap();
    let client = blocking::Client::connect(&server.url()).unwrap();
    let lock = client
        .rlock(name("fencing-reentry"))
        .lease(Duration::from_secs(5))
        .fenced();
    let mut store = ResourceClient::connect(resource.port()).unwrap();
    let outer = lock.acquire().unwrap();
    let outer_token = outer.fencing_token().unwrap();
    assert_eq!(store.write(outer_token, 1).unwrap(), Answer::Ok(0));
    let inner = lock.acquire().unwrap();
    let inner_token = inner.fencing_token().unwrap();
    assert_eq!(store.write(inner_token, 2).unwrap(), Answer::Ok(0));
    inner.release().unwrap();
    assert_eq!(
        store.write(outer_token, 3).unwrap(),
        Answer::Ok(0),
        "the outer hold (token {outer_token}) still holds the lock; the re-entry used {inner_token}"
    );
    outer.release().unwrap();
}
