//! Section 5: the fair lock and the read lock (issue 12), side by side with `rlock` in one
//! run: uncontended acquire + release of each (interleaved, as section 2), and the fair lock's
//! contended hand-off (a release until the queue head's `acquire()` returns) with the grant
//! order checked against the queue.

use crate::stats::{
    export_row, export_target, measure, print_header, print_row, verdict, Plan, Stats, Targets,
};
use crate::uncontended::Op;
use crate::Res;
use redis::aio::MultiplexedConnection;
use redlatch::{Client, Guard};
use redlatch_fleet::RedisServer;
use std::time::{Duration, Instant};

/// Waiters queued behind the holder in each hand-off round.
const QUEUED: usize = 4;

pub async fn run(plan: Plan, single: &RedisServer, targets: &mut Targets) -> Res<()> {
    let client = Client::connect(&single.url()).await?;
    let mut ops: Vec<(&'static str, Op)> = vec![
        ("rlock(name) (watchdog)", Op::Lock(client.rlock("bench:k:rlock"))),
        (
            "fair_lock(name) (watchdog)",
            Op::Lock(client.fair_lock("bench:k:fair")),
        ),
        (
            "rw_lock(name).read() (watchdog)",
            Op::Lock(client.rw_lock("bench:k:rw").read()),
        ),
    ];
    let (_ops, stats) = tokio::spawn(async move {
        let stats = measure(&mut ops, plan).await;
        (ops, stats)
    })
    .await?;
    let stats = stats?;
    println!("\n== 5. Fair and read locks (one spawned task, sequential; interleaved with rlock)");
    print_header("variant", "  p50/rlock");
    for (name, s) in [
        "rlock(name) (watchdog)",
        "fair_lock(name) (watchdog)",
        "rw_lock(name).read() (watchdog)",
    ]
    .iter()
    .zip(&stats)
    {
        print_row(name, s);
        println!(" {:>10.2}x", s.pct(50.0) / stats[0].pct(50.0));
    }
    for (i, what) in [(1, "fair lock"), (2, "read lock")] {
        let ratio = stats[i].pct(50.0) / stats[0].pct(50.0);
        let pass = ratio <= 1.15;
        println!(
            "  target {what} p50 <= 1.15x rlock p50: {ratio:.2}x  {}",
            verdict(pass)
        );
        targets.add(
            pass,
            format!("{what} acquire+release p50 <= 1.15x rlock p50: {ratio:.2}x"),
        );
    }
    export_row("rust rlock", &stats[0])?;
    export_row("rust fair lock", &stats[1])?;
    export_row("rust read lock", &stats[2])?;
    export_target(
        "rust fair lock p50 <= 1.15x rust rlock p50",
        "rust fair lock",
        "rust rlock",
        1.15,
    )?;
    export_target(
        "rust read lock p50 <= 1.15x rust rlock p50",
        "rust read lock",
        "rust rlock",
        1.15,
    )?;

    let rounds = plan.handoffs / QUEUED;
    let (h, exact) = fair_handoff(single, rounds).await?;
    println!(
        "  fair hand-off (release -> queue head's acquire() returns; {QUEUED} queued on 2 clients): {} samples, p50 {:.1} us, p99 {:.1} us; grant order = queue order in {exact} of {rounds} rounds",
        h.samples.len(),
        h.pct(50.0),
        h.pct(99.0)
    );
    let pass = h.pct(50.0) <= 500.0 && exact == rounds;
    println!(
        "  target fair hand-off p50 <= 0.5 ms with FIFO order exact: {:.1} us, {exact}/{rounds} exact  {}",
        h.pct(50.0),
        verdict(pass)
    );
    targets.add(
        pass,
        format!(
            "fair hand-off p50 <= 0.5 ms, FIFO exact: {:.1} us, {exact}/{rounds} rounds exact",
            h.pct(50.0)
        ),
    );
    export_row("rust fair hand-off", &h)?;
    Ok(())
}

async fn queue(conn: &mut MultiplexedConnection, name: &str) -> Res<Vec<String>> {
    Ok(redis::cmd("LRANGE")
        .arg(format!("redisson_lock_queue:{{{name}}}"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?)
}

/// `rounds` rounds: a holder, `QUEUED` waiters queued one by one on two clients, then each
/// grant's latency from the previous holder's `release()`, and whether the grants followed
/// the queue. A fresh name per round.
async fn fair_handoff(single: &RedisServer, rounds: usize) -> Res<(Stats, usize)> {
    let clients = [
        Client::connect(&single.url()).await?,
        Client::connect(&single.url()).await?,
    ];
    let mut conn = redis::Client::open(single.url())?
        .get_multiplexed_async_connection()
        .await?;
    let mut stats = Stats::default();
    let mut exact = 0;
    let started = Instant::now();
    for round in 0..rounds {
        let name = format!("bench:fair:handoff:{round}");
        let holder = clients[0].fair_lock(name.as_str()).acquire().await?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Instant, Guard)>();
        for i in 0..QUEUED {
            let lock = clients[i % 2]
                .fair_lock(name.as_str())
                .wait(Duration::from_secs(10));
            let owner = lock.owner_id().unwrap_or_default();
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Ok(g) = lock.acquire().await {
                    let _ = tx.send((owner, Instant::now(), g));
                }
            });
            let deadline = Instant::now() + Duration::from_secs(5);
            while queue(&mut conn, &name).await?.len() <= i {
                if Instant::now() > deadline {
                    return Err("a fair waiter never queued".into());
                }
                tokio::task::yield_now().await;
            }
        }
        // Give the last waiter time to go to sleep on its channel.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let queued = queue(&mut conn, &name).await?;
        let mut granted = Vec::new();
        let mut t0 = Instant::now();
        holder.release().await?;
        for _ in 0..QUEUED {
            let (owner, t1, g) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await?
                .ok_or("a fair waiter failed")?;
            stats
                .samples
                .push(t1.saturating_duration_since(t0).as_nanos() as u64);
            granted.push(owner);
            t0 = Instant::now();
            g.release().await?;
        }
        exact += usize::from(granted == queued);
    }
    stats.busy = started.elapsed();
    stats.finish();
    Ok((stats, exact))
}
