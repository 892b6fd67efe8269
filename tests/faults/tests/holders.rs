//! Process faults on lock holders (docs/reliability.md, faults.md rows 1-3): a holder frozen
//! past its lease (a GC pause), one frozen for less than its lease, one crashed with the lock
//! held. Holders are `redlatch-fault-holder` processes; the second holder is this test,
//! through `redlatch::blocking`.

mod common;
use common::*;

use std::time::{Duration, Instant};

use redlatch::blocking;
use redlatch_faults::{
    overlaps, token_order_violations, Answer, Event, FencedResource, Fencing, Holder, Op, ResourceClient,
};
use redlatch_fleet::monotonic_ns;

fn is_read(e: &Event) -> bool {
    matches!(
        e,
        Event::Read {
            answer: Answer::Ok(_),
            ..
        }
    )
}

/// This test's own fenced hold: acquire, READ and WRITE on the resource, then keep the guard.
fn take_over(client: &blocking::Client, lock: &str, resource: &mut ResourceClient) -> (blocking::Guard, u64) {
    let guard = client
        .lock(lock)
        .fenced()
        .wait(Duration::from_secs(10))
        .acquire()
        .expect("the second holder gets the lock once the first one's lease ran out");
    let fence = guard.fencing_token().unwrap();
    let Answer::Ok(value) = resource.read(fence).unwrap() else {
        panic!("the newer token must be accepted")
    };
    assert_eq!(resource.write(fence, value + 1).unwrap(), Answer::Ok(0));
    (guard, fence)
}

#[test]
fn holder_paused_past_its_lease_has_every_stale_write_rejected() {
    let server = server();
    let resource = FencedResource::start(Fencing::On).unwrap();
    let lock = name("paused-past-lease");
    // Watchdog mode: the freeze stops the renewals with everything else in the process.
    let mut spec = holder("A", &server.url(), &lock, resource.port());
    spec.watchdog = Some(Duration::from_millis(600));
    spec.work = Duration::from_millis(300);
    spec.sections = Some(1);
    let mut a = Holder::spawn(&spec).unwrap();
    a.wait_for(HANG_GUARD, is_read)
        .expect("A read the resource inside its section");
    a.pause().unwrap();

    let client = blocking::Client::connect(&server.url()).unwrap();
    let mut mine = ResourceClient::connect(resource.port()).unwrap();
    let (guard, fence) = take_over(&client, &lock, &mut mine);

    a.resume().unwrap();
    let wrote = a
        .wait_for(HANG_GUARD, |e| matches!(e, Event::Wrote { .. }))
        .expect("A wrote after resuming");
    assert!(
        matches!(wrote, Event::Wrote { seq: 1, answer: Answer::Stale(h), .. } if h == fence),
        "the resumed holder's write is rejected: {wrote:?}"
    );
    let released = a
        .wait_for(HANG_GUARD, |e| matches!(e, Event::Released { .. }))
        .unwrap();
    let Event::Released {
        error: Some(kind), ..
    } = released
    else {
        panic!("the resumed holder's release must fail: {released:?}")
    };
    assert!(kind == "NotOwned" || kind == "LockLost", "{kind}");
    assert!(
        guard.owned().unwrap(),
        "the old holder's release left the new hold alone"
    );
    guard.release().unwrap();
    a.finish(HANG_GUARD).unwrap();

    let report = resource.report();
    let a_fence = a.sections()[0].fence;
    assert!(a_fence < fence);
    assert_eq!(report.lost_updates, 0);
    assert_eq!(
        (report.value, report.writes),
        (1, 1),
        "only the new holder's write counted"
    );
    assert_eq!(report.rejected.len(), 1, "{:?}", report.rejected);
    assert_eq!(
        (report.rejected[0].op, report.rejected[0].token),
        (Op::Write, a_fence)
    );
    // The lock alone did not exclude them (that is why the resource is fenced), and the
    // tokens still rose with the grants.
    let mut sections = a.sections();
    sections.push(redlatch_faults::Section {
        holder: "test".into(),
        seq: 1,
        fence,
        acquired_ns: sections[0].acquired_ns + 1,
        released_ns: Some(monotonic_ns()),
        read: None,
        wrote: None,
        release: None,
        lost_ns: None,
    });
    assert_eq!(overlaps(&sections, monotonic_ns()).len(), 1);
    assert!(token_order_violations(&sections).is_empty());
}

#[test]
fn holder_paused_within_its_lease_keeps_the_lock() {
    let server = server();
    let resource = FencedResource::start(Fencing::On).unwrap();
    let lock = name("paused-within-lease");
    // Renewed every 500 ms; a 300 ms freeze leaves at least 700 ms of lease.
    let mut spec = holder("A", &server.url(), &lock, resource.port());
    spec.watchdog = Some(Duration::from_millis(1500));
    spec.work = Duration::from_millis(1200);
    spec.sections = Some(1);
    let mut a = Holder::spawn(&spec).unwrap();
    a.wait_for(HANG_GUARD, is_read).unwrap();
    a.pause().unwrap();
    let client = blocking::Client::connect(&server.url()).unwrap();
    assert!(
        client.lock(lock.as_str()).try_acquire().unwrap().is_none(),
        "busy while frozen"
    );
    std::thread::sleep(Duration::from_millis(300));
    a.resume().unwrap();
    let done = a
        .wait_for(HANG_GUARD, |e| matches!(e, Event::Released { .. }))
        .unwrap();
    assert!(matches!(done, Event::Released { error: None, .. }), "{done:?}");
    let s = &a.sections()[0];
    assert_eq!(s.wrote, Some(Answer::Ok(0)));
    assert_eq!(s.lost_ns, None, "a pause shorter than the lease is not a loss");
    let report = resource.report();
    assert!(
        report.rejected.is_empty() && report.lost_updates == 0,
        "{report:?}"
    );
    a.finish(HANG_GUARD).unwrap();
}

#[test]
fn killed_holder_frees_the_lock_when_its_lease_ends_and_not_before() {
    let server = server();
    let resource = FencedResource::start(Fencing::On).unwrap();
    let lock = name("killed-holder");
    let mut spec = holder("A", &server.url(), &lock, resource.port());
    spec.watchdog = Some(Duration::from_millis(800));
    spec.work = Duration::from_secs(30);
    let mut a = Holder::spawn(&spec).unwrap();
    a.wait_for(HANG_GUARD, is_read).unwrap();
    // Let a renewal or two happen, so the key is the watchdog's, not the first grant's.
    std::thread::sleep(Duration::from_millis(400));
    a.kill().unwrap();
    let measured = Instant::now();
    let pttl: i64 = cmd(&server, &["PTTL", &lock]);
    assert!(pttl > 0, "the crashed holder's key is still there ({pttl})");

    let client = blocking::Client::connect(&server.url()).unwrap();
    let guard = client
        .lock(lock.as_str())
        .fenced()
        .wait(HANG_GUARD)
        .acquire()
        .expect("the lock comes free once the crashed holder's lease ran out");
    let waited = measured.elapsed();
    // Safety: no second holder before the key expired (Redis' PTTL, ms granularity).
    assert!(
        waited + Duration::from_millis(2) >= Duration::from_millis(pttl as u64),
        "granted after {waited:?}, key had {pttl} ms left"
    );
    // Liveness: the watchdog of a dead process renews nothing (hang guard, generous).
    assert!(
        waited < Duration::from_millis(pttl as u64) + Duration::from_secs(5),
        "{waited:?}"
    );
    let mut mine = ResourceClient::connect(resource.port()).unwrap();
    let fence = guard.fencing_token().unwrap();
    assert!(fence > a.sections()[0].fence);
    assert_eq!(
        mine.read(fence).unwrap(),
        Answer::Ok(0),
        "the crashed holder never wrote"
    );
    guard.release().unwrap();
}
