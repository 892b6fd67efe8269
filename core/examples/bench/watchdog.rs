//! Section 4: watchdog scale. Holds 10 000 locks in watchdog mode on one client and measures
//! what keeping them alive costs over a holding window: this process's CPU (% of one core), RSS,
//! redis-server's CPU and how many keys each renewal `EVALSHA` carries, then checks with
//! `redis-cli` that every key is still alive. A watchdog that is cheap per lock but expensive at
//! scale would only show here.

use crate::procfs::{clock_ticks, cpu_seconds, evalsha_calls, rss_mb, threads};
use crate::stats::{verdict, Plan, Targets};
use crate::Res;
use redlatch::{Client, Guard};
use redlatch_fleet::RedisServer;
use std::time::{Duration, Instant};

/// Counts the keys `ARGV[1] .. i` (i < ARGV[2]) with a positive PTTL and their smallest PTTL.
const PTTL_SCRIPT: &str = "local n, mn = 0, -1 \
    for i = 0, tonumber(ARGV[2]) - 1 do \
      local t = redis.call('PTTL', ARGV[1] .. i) \
      if t > 0 then n = n + 1 if mn < 0 or t < mn then mn = t end end \
    end return {n, mn}";

/// Locks held at once in each run.
const WATCHDOG_LOCKS: usize = 10_000;

/// Runs section 4 (one run in --quick, three in a full run) and prints its results and targets.
pub async fn run(plan: Plan, single: &RedisServer, targets: &mut Targets) -> Res<()> {
    println!("\n== 4. Watchdog scale ({WATCHDOG_LOCKS} locks in watchdog mode on one client)");
    let ticks = clock_ticks();
    println!("  (1 task: acquisitions spread over about a second, so renewals come due spread out too;");
    println!("   16 tasks: acquired in a burst, renewals come due close together)");
    let three = Duration::from_secs(3);
    let mut runs = vec![(three, 1, plan.short_wd_hold)];
    if let Some(hold) = plan.default_wd_hold {
        runs.push((three, 16, plan.short_wd_hold));
        runs.push((Duration::from_secs(30), 1, hold));
    }
    for (timeout, tasks, hold) in runs {
        let w = watchdog_scale(single, timeout, tasks, hold, ticks).await?;
        let pass = w.cpu_pct < 10.0 && w.rss < 50.0;
        println!(
            "  target < 10 % of one core and < 50 MB RSS ({} s timeout, {tasks} task(s)): {:.2} %, {:.1} MB  {}",
            timeout.as_secs(),
            w.cpu_pct,
            w.rss,
            verdict(pass)
        );
        targets.add(
            pass,
            format!(
                "10k watchdog locks ({} s timeout, {tasks} task(s)): {:.2} % CPU, {:.1} MB RSS",
                timeout.as_secs(),
                w.cpu_pct,
                w.rss
            ),
        );
    }
    if plan.default_wd_hold.is_none() {
        println!("  (--quick: the 16-task and the 30 s default-timeout runs are skipped)");
    }
    Ok(())
}

struct WatchdogResult {
    cpu_pct: f64,
    rss: f64,
}

async fn watchdog_scale(
    server: &RedisServer,
    timeout: Duration,
    tasks: usize,
    hold: Duration,
    ticks: f64,
) -> Res<WatchdogResult> {
    let client = Client::builder(&server.url())
        .watchdog_timeout(timeout)
        .connect()
        .await?;
    let prefix = format!("bench:wd{}s{tasks}t:", timeout.as_secs());
    let rss_before = rss_mb();

    // Acquire 10 000 distinct locks, `tasks` at a time.
    let acquire_cpu0 = cpu_seconds("self");
    let t = Instant::now();
    let mut handles = Vec::new();
    for k in 0..tasks {
        let client = client.clone();
        let prefix = prefix.clone();
        handles.push(tokio::spawn(async move {
            let mut guards = Vec::new();
            for i in (k..WATCHDOG_LOCKS).step_by(tasks) {
                guards.push(client.lock(format!("{prefix}{i}")).acquire().await?);
            }
            Ok::<Vec<Guard>, redlatch::Error>(guards)
        }));
    }
    let mut guards = Vec::with_capacity(WATCHDOG_LOCKS);
    for h in handles {
        guards.extend(h.await??);
    }
    let acquire_took = t.elapsed();
    let acquire_cpu = cpu_seconds("self") - acquire_cpu0;
    let tracked = client.tracked_holds();

    // The holding window.
    let redis_pid = server.pid().to_string();
    tokio::task::block_in_place(|| server.cli(&["CONFIG", "RESETSTAT"]))?;
    let calls0 = evalsha_calls(server);
    let (cpu0, rcpu0, w0) = (cpu_seconds("self"), cpu_seconds(&redis_pid), Instant::now());
    tokio::time::sleep(hold).await;
    let (cpu1, rcpu1, window) = (cpu_seconds("self"), cpu_seconds(&redis_pid), w0.elapsed());
    let calls = evalsha_calls(server).saturating_sub(calls0);
    let rss = rss_mb();

    // Are the keys still alive (renewed)?
    let n = WATCHDOG_LOCKS.to_string();
    let out = tokio::task::block_in_place(|| server.cli(&["EVAL", PTTL_SCRIPT, "0", &prefix, &n]))?;
    let mut vals = out.lines().map(|l| l.trim().parse::<i64>().unwrap_or(-1));
    let (alive, min_pttl) = (vals.next().unwrap_or(-1), vals.next().unwrap_or(-1));
    let lost = guards.iter().filter(|g| g.is_lost()).count();

    // Release everything (not measured in the window).
    let t = Instant::now();
    let mut handles = Vec::new();
    let per = WATCHDOG_LOCKS.div_ceil(16);
    while !guards.is_empty() {
        let batch: Vec<Guard> = guards.drain(..per.min(guards.len())).collect();
        handles.push(tokio::spawn(async move {
            for g in batch {
                g.release().await?;
            }
            Ok::<(), redlatch::Error>(())
        }));
    }
    for h in handles {
        h.await??;
    }
    let release_took = t.elapsed();

    let cpu_pct = 100.0 * (cpu1 - cpu0) / window.as_secs_f64();
    let redis_pct = 100.0 * (rcpu1 - rcpu0) / window.as_secs_f64();
    let period = timing_period(timeout);
    // Each hold comes due about every `period`: that many renewals fit in the window.
    let renewals = WATCHDOG_LOCKS as f64 * (window.as_secs_f64() / period.as_secs_f64()).floor().max(1.0);
    // Without renewal every key would be gone (3 s) or at most `timeout - window` left.
    let renewed_floor = timeout.saturating_sub(window).as_millis() as i64;
    let renewed = alive == WATCHDOG_LOCKS as i64 && min_pttl > renewed_floor.max(0);
    println!(
        "\n  -- watchdog_timeout {} s (renewal every {:.1} s), {} locks acquired by {tasks} task(s), window {:.1} s",
        timeout.as_secs(),
        period.as_secs_f64(),
        WATCHDOG_LOCKS,
        window.as_secs_f64()
    );
    println!(
        "  acquire all: {:.2} s ({:.0}/s, {:.0} us CPU per acquire); tracked holds: {tracked}; release all: {:.2} s",
        acquire_took.as_secs_f64(),
        WATCHDOG_LOCKS as f64 / acquire_took.as_secs_f64(),
        acquire_cpu * 1e6 / WATCHDOG_LOCKS as f64,
        release_took.as_secs_f64()
    );
    println!(
        "  this process CPU over the window: {cpu_pct:.2} % of one core ({:.2} s; clock tick {:.0} ms)",
        cpu1 - cpu0,
        1000.0 / ticks
    );
    println!("  redis-server CPU over the window: {redis_pct:.2} % of one core");
    println!(
        "  renewal EVALSHA calls in the window: {calls} for ~{renewals:.0} renewals = ~{:.0} keys per call (batch limit 100; ideal {:.0} calls)",
        renewals / calls.max(1) as f64,
        renewals / 100.0
    );
    println!("  RSS: {rss_before:.1} MB before acquiring, {rss:.1} MB at the end of the window (+{:.1} MB); threads {}", rss - rss_before, threads());
    println!(
        "  redis-cli check: {alive}/{} keys with PTTL > 0, min PTTL {min_pttl} ms (> {renewed_floor} ms means renewed); guards lost: {lost}  {}",
        WATCHDOG_LOCKS,
        if renewed { "RENEWED" } else { "NOT RENEWED" }
    );
    if !renewed {
        return Err("watchdog renewal did not keep the keys alive".into());
    }
    Ok(WatchdogResult { cpu_pct, rss })
}

fn timing_period(timeout: Duration) -> Duration {
    redlatch::protocol::timing::renewal_period(timeout)
}
