//! `Client::force_unlock` against Redisson 4.7.0 waiters of every kind: a Redisson waiter
//! queued behind a Redisson holder (20 s lease) gets the lock well within the lease once
//! redlatch deletes it, woken by the message its kind listens for (a fair waiter on its own
//! channel, read/write waiters on `redisson_rwlock:{N}`). A user trial of stop 39 found fair
//! and read/write waiters waiting out the lease, or giving up, after the delete.

mod common;

use common::{answer, world, LONG_LEASE_MS, PROMPT};
use redlatch::Client;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn redisson_waiters_of_every_kind_are_woken() {
    let w = world();
    let java = &w.java;
    let ours = Client::connect(&w.server.url()).await.unwrap();
    // (holder kind, waiter kind): the read holder's waiter is a writer (readers would share).
    for (held, waits, name) in [
        ("fair", "fair", "fu-fair"),
        ("write", "write", "fu-write"),
        ("write", "read", "fu-write-read"),
        ("read", "write", "fu-read"),
        ("rlock", "rlock", "fu-rlock"),
    ] {
        let holder = java.lock(held, name, 1, 0, LONG_LEASE_MS);
        assert_eq!(answer(holder, PROMPT).await.unwrap(), "true", "{name}");
        let waiter = java.lock(waits, name, 2, 2 * LONG_LEASE_MS, LONG_LEASE_MS);
        // The waiter has subscribed (and, fair, queued) well before the delete.
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert!(ours.force_unlock(name).await.unwrap(), "{name}");
        let got = answer(waiter, PROMPT).await;
        assert_eq!(
            got.as_deref(),
            Ok("true"),
            "{name}: {waits} waiter after the delete"
        );
        java.unlock(waits, name, 2).unwrap();
    }
}
