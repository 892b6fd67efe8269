//! Section 6: the rest of the lock family, uncontended, against the lock each one is compared
//! with: a semaphore's `acquire(1)` + `release(1)` against an `rlock` acquire + release, both
//! without renewal (target: p50 within 1.15x), and a two-name multi-lock whose names share a hash slot (one
//! script) against one lease lock (target: p50 within 1.3x), next to its floor: the raw
//! redis-rs pair on one key and on two keys of one slot (what the second key costs Redis and
//! the wire with no lock library at all). Rows run interleaved, as in section 2, so machine
//! noise hits them alike.

use crate::stats::{export_row, export_target, measure, print_header, print_row, verdict, Plan, Targets};
use crate::uncontended::{Op, CAD2_SCRIPT, CAD_SCRIPT};
use crate::{Res, LEASE};
use redlatch::Client;

/// Runs section 5 and adds its targets.
pub async fn run(plan: Plan, single: &str, targets: &mut Targets) -> Res<()> {
    let client = Client::connect(single).await?;
    let raw = redis::Client::open(single)?;
    let sem = client.semaphore("bench:sem");
    sem.try_set_permits(1).await?;
    let multi = client.multi_lock_names(["{bench}:a", "{bench}:b"])?.lease(LEASE);
    const RLOCK: usize = 0;
    const SEM: usize = 1;
    const LOCK: usize = 2;
    const MULTI: usize = 3;
    const RAW1: usize = 4;
    const RAW2: usize = 5;
    let mut ops: Vec<(&'static str, Op)> = vec![
        // With a lease, as the semaphore's permit: in watchdog mode each acquire and release
        // also wakes the watchdog's task on the other worker, which keeps that worker out of
        // its idle state, and the next reply is then read sooner. That made this row 71-88 us
        // in some runs, 128-130 us in others (a lease-mode rlock: 123-125 us; 2026-12-05),
        // faster than the raw pair, so the comparison measured the CPU's idle states.
        (
            "rlock(name).lease(10s)",
            Op::Lock(client.rlock("bench:f-rlock").lease(LEASE)),
        ),
        ("semaphore acquire(1) + release(1)", Op::Semaphore(sem)),
        (
            "lock(name).lease(10s)",
            Op::Lock(client.lock("bench:f-lock").lease(LEASE)),
        ),
        ("multi_lock 2 names, one slot", Op::Multi(multi)),
        (
            "(floor) raw pair, 1 key",
            Op::RawPair(
                raw.get_multiplexed_async_connection().await?,
                redis::Script::new(CAD_SCRIPT),
                "bench:f-raw".into(),
            ),
        ),
        (
            "(floor) raw pair, 2 keys one slot",
            Op::RawTwoKeys(
                raw.get_multiplexed_async_connection().await?,
                redis::Script::new(CAD2_SCRIPT),
                ["{bench}:raw-a".into(), "{bench}:raw-b".into()],
            ),
        ),
    ];
    let stats = tokio::spawn(async move { measure(&mut ops, plan).await.map(|s| (ops, s)) }).await??;
    let (ops, stats) = stats;
    println!("\n== 6. Semaphore and multi-lock, uncontended (one spawned task, sequential, interleaved)");
    print_header("variant", "");
    for ((name, _), s) in ops.iter().zip(&stats) {
        print_row(name, s);
        println!();
    }
    let sem_ratio = stats[SEM].pct(50.0) / stats[RLOCK].pct(50.0);
    let pass = sem_ratio <= 1.15;
    println!(
        "  target semaphore p50 <= 1.15x rlock p50: {sem_ratio:.2}x  {}",
        verdict(pass)
    );
    targets.add(
        pass,
        format!("semaphore acquire+release p50 <= 1.15x rlock p50: {sem_ratio:.2}x"),
    );
    let multi_ratio = stats[MULTI].pct(50.0) / stats[LOCK].pct(50.0);
    let pass = multi_ratio <= 1.3;
    // What two keys cost Redis and the wire by themselves, with no lock library at all.
    let floor_ratio = stats[RAW2].pct(50.0) / stats[RAW1].pct(50.0);
    println!(
        "  target two-name multi-lock (one slot) p50 <= 1.3x lock p50: {multi_ratio:.2}x  {}  (raw floor: 2 keys / 1 key {floor_ratio:.2}x)",
        verdict(pass)
    );
    targets.add(
        pass,
        format!("two-name multi-lock (one slot) p50 <= 1.3x lock p50: {multi_ratio:.2}x"),
    );
    export_row("rust rlock (family run)", &stats[RLOCK])?;
    export_row("rust semaphore", &stats[SEM])?;
    export_row("rust lock (family run)", &stats[LOCK])?;
    export_row("rust multi-lock 2 names", &stats[MULTI])?;
    export_target(
        "rust semaphore p50 <= 1.15x rust rlock p50",
        "rust semaphore",
        "rust rlock (family run)",
        1.15,
    )?;
    export_target(
        "rust two-name multi-lock p50 <= 1.3x rust lock p50",
        "rust multi-lock 2 names",
        "rust lock (family run)",
        1.3,
    )?;
    Ok(())
}
