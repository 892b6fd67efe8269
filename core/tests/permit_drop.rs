//! What dropping a `Permit` does: a permit renewed by the watchdog is released in the
//! background (nothing would renew it), and the next acquire through the same client waits for
//! that release; a permit with a fixed lease stays taken until its lease ends or its id is
//! released, because its id is how a permit is handed over (Redisson's
//! RPermitExpirableSemaphore returns only the id).

mod common;
use common::*;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_permits_background_release_lands_before_the_next_acquire() {
    // Before stop 37 a try_acquire right after a permit was dropped (released in the
    // background) found the only permit still taken (13 of 20 in a user trial).
    let s = server();
    let c = client(&s).await;
    let ps = c.permit_semaphore("ps:dropped");
    assert!(within(BOUND, ps.try_set_permits(1)).await.unwrap());
    for _ in 0..20 {
        drop(within(BOUND, ps.acquire(None)).await.unwrap());
        let permit = within(BOUND, ps.try_acquire(None))
            .await
            .unwrap()
            .expect("the permit is back once the dropped one's release landed");
        within(BOUND, permit.release()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_permit_with_a_lease_stays_taken_until_released_by_id() {
    // A user trial of stop 38: `id = ps.acquire(lease=60).id`, the Permit collected, and the
    // permit was back within 300 ms: a second holder got in while the first held the id.
    let s = server();
    let c = client(&s).await;
    let ps = c.permit_semaphore("ps:by-id");
    assert!(within(BOUND, ps.try_set_permits(1)).await.unwrap());
    let permit = within(BOUND, ps.acquire(Some(Duration::from_secs(60))))
        .await
        .unwrap();
    let id = permit.id().to_owned();
    drop(permit);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(within(BOUND, ps.available()).await.unwrap(), 0);
    let other = client(&s).await.permit_semaphore("ps:by-id");
    let none = within(BOUND, other.try_acquire(Some(Duration::from_secs(5))))
        .await
        .unwrap();
    assert!(none.is_none(), "a second holder got the only permit");
    // The id still releases it, from another client.
    within(BOUND, other.release(&id)).await.unwrap();
    assert_eq!(within(BOUND, ps.available()).await.unwrap(), 1);
}
