//! `bench --lock-turns URL`: the Rust `lock` row measured in turns with another binding's
//! benchmark, so that a ratio such as "Python lock p50 <= 1.15x Rust lock p50" compares two
//! code paths under one machine state, not two phases of `make bench` minutes apart (the
//! load of a shared 2-core machine swings between phases: in one run the Rust phase saw a
//! `PING` of 20 us and the Python phase one of 106 us).
//!
//! Protocol, one line each way: the caller (python/bench/bench.py, bindings/c/bench/bench.c)
//! writes a slice length in ms; this process runs acquire + release of a 10 s lease lock for
//! that long, one pair at a time in a spawned task (as section 2's `rust lock` row does), and
//! answers with the pairs' latencies in ns, separated by spaces (the caller discards its
//! warm-up turns' answers). End of input ends the process.

use crate::{Res, LEASE};
use redlatch::Client;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

/// Serves turns on stdin / stdout until stdin closes.
pub fn serve(url: &str) -> Res<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let lock = runtime.block_on(async {
        let client = Client::connect(url).await?;
        Ok::<_, redlatch::Error>(
            client
                .lock(format!("bench:turns:rust:{}", std::process::id()))
                .lease(LEASE),
        )
    })?;
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let ms: u64 = line?.trim().parse().map_err(|_| "a turn is a length in ms")?;
        let lock = lock.clone();
        let samples = runtime.block_on(runtime.spawn(async move {
            let length = Duration::from_millis(ms.max(1));
            let mut samples = Vec::new();
            let start = Instant::now();
            loop {
                let t = Instant::now();
                lock.acquire().await?.release().await?;
                samples.push(t.elapsed().as_nanos() as u64);
                if start.elapsed() >= length {
                    break;
                }
            }
            Ok::<_, redlatch::Error>(samples)
        }))??;
        let text: Vec<String> = samples.iter().map(u64::to_string).collect();
        let mut out = stdout.lock();
        writeln!(out, "{}", text.join(" "))?;
        out.flush()?;
    }
    Ok(())
}
