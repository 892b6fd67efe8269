//! Sections 1, 2 and 2b: the raw Redis floor and uncontended acquire + release.
//!
//! The floor (a redis-rs `SET NX PX` + `EVALSHA` compare-and-delete pair, a `PING`, and the pair
//! fanned out to five nodes) is what any lock needs at least; the lock rows (lease, reentrant in
//! watchdog mode, quorum-3 and quorum-5) are set against it, and two diagnostic rows send the
//! lease lock's scripts straight through `RedisTransport`, the release without and with its
//! idempotency latch, to split the overhead into "script and transport", "latch" (a key Redis
//! writes and expires per release: server time, no client CPU) and "driver". All rows run interleaved in short slices so that noise from the rest
//! of the machine hits them alike; section 2b repeats the key rows on the `block_on` thread.

use crate::procfs::cpu_seconds;
use crate::stats::{export_row, measure, print_header, print_row, verdict, Plan, Stats, Targets};
use crate::{Res, LEASE};
use redis::aio::MultiplexedConnection;
use redlatch::protocol::reply::AcquireReply;
use redlatch::protocol::request::Holder;
use redlatch::{Client, Lock, RedisTransport, Transport};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Compare-and-delete, the release half of the raw floor.
pub const CAD_SCRIPT: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// The two-key compare-and-delete of the raw two-key pair (section 6): both keys or none.
pub const CAD2_SCRIPT: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('GET', KEYS[2]) == ARGV[1] \
     then return redis.call('DEL', KEYS[1], KEYS[2]) end return 0";

/// The latch TTL of a lease lock's release with the default network timeout: twice that, at
/// least 1 s (as `Engine::latch_ttl_ms`).
fn lock_latch_ttl_ms() -> u64 {
    (redlatch::protocol::timing::DEFAULT_NETWORK_TIMEOUT * 2)
        .max(Duration::from_secs(1))
        .as_millis() as u64
}

/// `SET key token NX PX 10000`: a raw pair's acquire.
pub fn set_nx_px(key: &str, token: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key).arg(token).arg("NX").arg("PX").arg(10_000);
    cmd
}

/// One thing measured in the uncontended loop.
pub enum Op {
    Ping(MultiplexedConnection),
    RawPair(MultiplexedConnection, redis::Script, String),
    /// The raw pair sent to several nodes at once (each step waits for every node).
    RawFanout(Vec<MultiplexedConnection>, redis::Script, String),
    /// The raw pair on two keys of one slot (section 6's floor): both `SET NX PX` in one
    /// pipeline, then one two-key compare-and-delete ([`CAD2_SCRIPT`]).
    RawTwoKeys(MultiplexedConnection, redis::Script, [String; 2]),
    /// The lease lock's acquire and release scripts sent straight through the transport; the
    /// release without its idempotency latch (latch TTL 0, as an acquire's undo sends it).
    Transport(Arc<RedisTransport>, String),
    /// As `Transport`, the release as the lock sends it: a fresh request id naming its latch,
    /// kept for the lock's latch TTL. Its gap to `Transport` is the latch's cost in Redis (a
    /// key written and later expired per release); its gap to the lock row is the driver's.
    TransportLatched(Arc<RedisTransport>, String),
    Lock(Lock),
    /// `acquire(1)` + `release(1)` of a semaphore (section 5).
    Semaphore(redlatch::Semaphore),
    /// Acquire + release of a multi-lock (section 5).
    Multi(redlatch::MultiLock),
}

impl Op {
    async fn once(&mut self, i: u64) -> Res<()> {
        match self {
            Op::Ping(conn) => {
                let _: String = redis::cmd("PING").query_async(conn).await?;
            }
            Op::RawPair(conn, cad, key) => {
                // A token of a lock token's size, different every time.
                let token = format!("{i:032x}");
                let set: Option<String> = set_nx_px(key, &token).query_async(conn).await?;
                if set.is_none() {
                    return Err("raw SET NX found the key taken".into());
                }
                let deleted: i64 = cad.key(&*key).arg(&token).invoke_async(conn).await?;
                if deleted != 1 {
                    return Err("raw compare-and-delete did not delete".into());
                }
            }
            Op::RawFanout(conns, cad, key) => {
                let token = format!("{i:032x}");
                let (key, token, cad) = (&*key, &token, &*cad);
                let sets = futures::future::join_all(conns.iter_mut().map(|conn| async move {
                    set_nx_px(key, token).query_async::<Option<String>>(conn).await
                }))
                .await;
                if sets.into_iter().any(|r| !matches!(r, Ok(Some(_)))) {
                    return Err("raw fan-out SET NX failed on a node".into());
                }
                let dels = futures::future::join_all(
                    conns
                        .iter_mut()
                        .map(|conn| async move { cad.key(key).arg(token).invoke_async::<i64>(conn).await }),
                )
                .await;
                if dels.into_iter().any(|r| !matches!(r, Ok(1))) {
                    return Err("raw fan-out compare-and-delete failed on a node".into());
                }
            }
            Op::RawTwoKeys(conn, cad, [a, b]) => {
                let token = format!("{i:032x}");
                let (sa, sb): (Option<String>, Option<String>) = redis::pipe()
                    .add_command(set_nx_px(a, &token))
                    .add_command(set_nx_px(b, &token))
                    .query_async(conn)
                    .await?;
                if sa.is_none() || sb.is_none() {
                    return Err("raw two-key SET NX found a key taken".into());
                }
                let deleted: i64 = cad.key(&*a).key(&*b).arg(&token).invoke_async(conn).await?;
                if deleted != 2 {
                    return Err("raw two-key compare-and-delete did not delete both".into());
                }
            }
            Op::Transport(transport, name) => {
                let holder = Holder::Lease {
                    token: format!("{i:032x}"),
                };
                let reply = transport.eval(&holder.acquire(name, 10_000, None, "", 0)).await?;
                if !matches!(holder.decode_acquire(&reply)?, AcquireReply::Acquired { .. }) {
                    return Err("transport-only acquire was refused".into());
                }
                let reply = transport.eval(&holder.release(name, 10_000, "", 0, 0)).await?;
                if !holder.decode_release(&reply)?.was_owned() {
                    return Err("transport-only release did not release".into());
                }
            }
            Op::TransportLatched(transport, name) => {
                let holder = Holder::Lease {
                    token: format!("{i:032x}"),
                };
                let reply = transport.eval(&holder.acquire(name, 10_000, None, "", 0)).await?;
                if !matches!(holder.decode_acquire(&reply)?, AcquireReply::Acquired { .. }) {
                    return Err("transport-only acquire was refused".into());
                }
                // Unique per bench run (`i` only grows; each run starts its own servers).
                let request_id = format!("{i:032x}");
                let release = holder.release(name, 10_000, &request_id, lock_latch_ttl_ms(), 0);
                let reply = transport.eval(&release).await?;
                if !holder.decode_release(&reply)?.was_owned() {
                    return Err("transport-only release did not release".into());
                }
            }
            Op::Lock(lock) => {
                let guard = lock.acquire().await?;
                guard.release().await?;
            }
            Op::Semaphore(sem) => {
                sem.acquire(1).await?;
                sem.release(1).await?;
            }
            Op::Multi(multi) => {
                let guard = multi.acquire().await?;
                guard.release().await?;
            }
        }
        Ok(())
    }

    /// Runs for about `length`; appends one sample per operation when `stats` is given.
    pub async fn run_for(
        &mut self,
        length: Duration,
        seq: &mut u64,
        mut stats: Option<&mut Stats>,
    ) -> Res<()> {
        let cpu0 = cpu_seconds("self");
        let start = Instant::now();
        loop {
            let t = Instant::now();
            self.once(*seq).await?;
            let took = t.elapsed();
            *seq += 1;
            if let Some(s) = stats.as_deref_mut() {
                s.samples.push(took.as_nanos() as u64);
            }
            if start.elapsed() >= length {
                break;
            }
        }
        if let Some(s) = stats {
            s.busy += start.elapsed();
            s.cpu += cpu_seconds("self") - cpu0;
        }
        Ok(())
    }
}

/// The figures of section 1 and 2 that the later sections and the summary refer to.
pub struct Uncontended {
    pub ping: Stats,
    pub raw: Stats,
    pub lock: Stats,
}

/// Runs sections 1, 2 and 2b and prints their tables and targets.
pub async fn run(plan: Plan, single: &str, quorum: &[String], targets: &mut Targets) -> Res<Uncontended> {
    let raw_client = redis::Client::open(single)?;
    let client = Client::connect(single).await?;
    let q3 = Client::quorum(&quorum[..3]).await?;
    let q5 = Client::quorum(quorum).await?;
    let mut fanout = Vec::new();
    for u in quorum {
        fanout.push(
            redis::Client::open(u.as_str())?
                .get_multiplexed_async_connection()
                .await?,
        );
    }
    let transport = Arc::new(RedisTransport::new(single, Duration::from_secs(3))?);
    transport.ping().await?;
    const PING: usize = 0;
    const RAW: usize = 1;
    const RAW5: usize = 2;
    const TRANSPORT: usize = 3;
    const LOCK: usize = 5;
    const Q5: usize = 8;
    let mut ops: Vec<(&'static str, Op)> = vec![
        (
            "PING round trip",
            Op::Ping(raw_client.get_multiplexed_async_connection().await?),
        ),
        (
            "raw SET NX PX + EVALSHA CAD",
            Op::RawPair(
                raw_client.get_multiplexed_async_connection().await?,
                redis::Script::new(CAD_SCRIPT),
                "bench:raw".into(),
            ),
        ),
        (
            "raw pair, 5-node fan-out",
            Op::RawFanout(fanout, redis::Script::new(CAD_SCRIPT), "bench:raw5".into()),
        ),
        (
            "(diag) lease scripts via transport",
            Op::Transport(transport.clone(), "bench:transport".into()),
        ),
        (
            "(diag) same, release with its latch",
            Op::TransportLatched(transport.clone(), "bench:latched".into()),
        ),
        (
            "lock(name).lease(10s)",
            Op::Lock(client.lock("bench:lock").lease(LEASE)),
        ),
        ("rlock(name) (watchdog)", Op::Lock(client.rlock("bench:rlock"))),
        (
            "quorum-3 lock.lease(10s)",
            Op::Lock(q3.lock("bench:q3").lease(LEASE)),
        ),
        (
            "quorum-5 lock.lease(10s)",
            Op::Lock(q5.lock("bench:q5").lease(LEASE)),
        ),
    ];
    // Primary: the loops run in a spawned task, on a runtime worker.
    let (mut ops, stats) = tokio::spawn(async move {
        let stats = measure(&mut ops, plan).await;
        (ops, stats)
    })
    .await?;
    let stats = stats?;

    let raw = &stats[RAW];
    let single_p50 = stats[LOCK].pct(50.0);
    println!("\n== 1. Raw floor (redis-rs multiplexed connections; one spawned task, sequential)");
    println!("  (cpu us = this process's CPU time per operation, all threads; redis-server not included)");
    print_header("operation", "");
    for (i, (name, _)) in ops.iter().enumerate().take(TRANSPORT) {
        print_row(name, &stats[i]);
        println!();
    }
    println!(
        "\n== 2. Uncontended acquire + release (one spawned task, sequential; interleaved with the floor)"
    );
    print_header("variant", "  x raw ops  p50/single  p50/raw5");
    for (i, (name, _)) in ops.iter().enumerate().skip(TRANSPORT) {
        let s = &stats[i];
        print_row(name, s);
        let single = if i >= LOCK {
            format!("{:.2}x", s.pct(50.0) / single_p50)
        } else {
            "-".into()
        };
        println!(
            " {:>9.2}x {single:>11} {:>8.2}x",
            s.ops() / raw.ops(),
            s.pct(50.0) / stats[RAW5].pct(50.0)
        );
    }
    let lock_ratio = stats[LOCK].ops() / raw.ops();
    let pass = lock_ratio >= 0.9;
    // The raw pair's release writes no idempotency latch; the lock's does (Redis' work, about
    // 5 us a release here: helper-19's measurement, issue 15), so its floor is the latched row.
    let latched = stats[LOCK - 1].ops() / raw.ops();
    let of_latched = stats[LOCK].ops() / stats[LOCK - 1].ops();
    println!(
        "  target lock ops/s >= 0.9x raw floor: {lock_ratio:.2}x  {} (the lock's scripts with the release latch, through the transport alone: {latched:.2}x raw; the lock is {of_latched:.2}x of that)",
        verdict(pass)
    );
    targets.add(
        pass,
        format!("lock acquire+release >= 0.9x raw floor ops/s: {lock_ratio:.2}x (spawned task; latched-transport floor {latched:.2}x)"),
    );
    let q5_ratio = stats[Q5].pct(50.0) / single_p50;
    let pass = q5_ratio <= 1.5;
    println!(
        "  target quorum-5 p50 <= 1.5x single-node p50: {q5_ratio:.2}x  {} (the raw 5-node fan-out alone is {:.2}x the raw pair)",
        verdict(pass),
        stats[RAW5].pct(50.0) / raw.pct(50.0)
    );
    targets.add(
        pass,
        format!("quorum-5 p50 <= 1.5x single-node p50: {q5_ratio:.2}x"),
    );

    // Secondary: the same raw / transport / lock loops on the block_on thread.
    let mut main_ops: Vec<(&'static str, Op)> =
        vec![ops.remove(LOCK), ops.remove(TRANSPORT), ops.remove(RAW)];
    main_ops.reverse();
    let main_stats = measure(&mut main_ops, plan).await?;
    println!("\n== 2b. The same loops on the runtime's block_on thread (like #[tokio::main]'s own body)");
    print_header("variant", "  x raw ops");
    for ((name, _), s) in main_ops.iter().zip(&main_stats) {
        print_row(name, s);
        println!(" {:>9.2}x", s.ops() / main_stats[0].ops());
    }
    let main_ratio = main_stats[2].ops() / main_stats[0].ops();
    let pass = main_ratio >= 0.9;
    println!(
        "  target lock ops/s >= 0.9x raw floor (block_on thread): {main_ratio:.2}x  {}",
        verdict(pass)
    );
    targets.add(
        pass,
        format!("lock acquire+release >= 0.9x raw floor ops/s: {main_ratio:.2}x (block_on thread)"),
    );

    export_row("rust ping", &stats[PING])?;
    export_row("rust raw pair", &stats[RAW])?;
    export_row("rust lock", &stats[LOCK])?;
    export_row("rust lock (block_on thread)", &main_stats[2])?;
    let mut stats = stats.into_iter();
    let ping = stats.nth(PING).unwrap_or_default();
    let raw = stats.next().unwrap_or_default();
    let lock = stats.nth(LOCK - RAW - 1).unwrap_or_default();
    Ok(Uncontended { ping, raw, lock })
}
