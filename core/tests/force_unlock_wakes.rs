//! `Client::force_unlock` wakes the waiters of every lock kind, as Redisson's `forceUnlock`
//! of each kind does: a fair lock's queue head on its own channel, a read/write lock's
//! waiters on the read/write channel (a user trial of stop 39: both waited out the deleted
//! holder's lease, or their whole wait, since only the lease-lock channel was told).
//!
//! The waiting client polls once a minute and waits two minutes; it must have the lock within
//! 20 s of the delete (a generous bound: the message makes it milliseconds), which only the
//! message can do (its last try at the end of the wait would grant it too, much later).

mod common;

use common::{client, server, within};
use redlatch::{Client, Lock};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);
const HOLD: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(120);
const WOKEN_WITHIN: Duration = Duration::from_secs(20);

async fn slow_polling_client(server: &redlatch_fleet::RedisServer) -> Client {
    let builder = Client::builder(&server.url()).poll_interval(Duration::from_secs(60));
    within(BOUND, builder.connect()).await.unwrap()
}

/// Holds `held` (acquired by the caller), has `waiter` wait for it, force-unlocks the name,
/// and returns whether the waiter got the lock within its wait.
async fn woken_after_force_unlock(admin: &Client, name: &str, waiter: Lock) -> bool {
    let waiting = tokio::spawn(async move { waiter.wait(WAIT).acquire().await });
    // The waiter is queued / subscribed well before the delete.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(within(BOUND, admin.force_unlock(name)).await.unwrap(), "{name}");
    let Ok(joined) = tokio::time::timeout(WOKEN_WITHIN, waiting).await else {
        eprintln!("{name}: not woken within {WOKEN_WITHIN:?}");
        return false;
    };
    match joined.unwrap() {
        Ok(guard) => {
            within(BOUND, guard.release()).await.unwrap();
            true
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_locks_queue_head_is_told() {
    let server = server();
    let (holder, waiters) = (client(&server).await, slow_polling_client(&server).await);
    let _held = within(BOUND, holder.fair_lock("fu:fair").lease(HOLD).acquire())
        .await
        .unwrap();
    let waiter = waiters.fair_lock("fu:fair");
    assert!(woken_after_force_unlock(&holder, "fu:fair", waiter).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_waiters_are_told_in_either_mode() {
    let server = server();
    let (holder, waiters) = (client(&server).await, slow_polling_client(&server).await);
    let _write = within(BOUND, holder.rw_lock("fu:rw-w").write().lease(HOLD).acquire())
        .await
        .unwrap();
    let reader = waiters.rw_lock("fu:rw-w").read();
    assert!(woken_after_force_unlock(&holder, "fu:rw-w", reader).await);

    let _read = within(BOUND, holder.rw_lock("fu:rw-r").read().lease(HOLD).acquire())
        .await
        .unwrap();
    let writer = waiters.rw_lock("fu:rw-r").write();
    assert!(woken_after_force_unlock(&holder, "fu:rw-r", writer).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_and_reentrant_lock_waiters_are_told() {
    let server = server();
    let (holder, waiters) = (client(&server).await, slow_polling_client(&server).await);
    let _lease = within(BOUND, holder.lock("fu:lease").lease(HOLD).acquire())
        .await
        .unwrap();
    assert!(woken_after_force_unlock(&holder, "fu:lease", waiters.lock("fu:lease")).await);
    let _reentrant = within(BOUND, holder.rlock("fu:rlock").lease(HOLD).acquire())
        .await
        .unwrap();
    assert!(woken_after_force_unlock(&holder, "fu:rlock", waiters.rlock("fu:rlock")).await);
}
