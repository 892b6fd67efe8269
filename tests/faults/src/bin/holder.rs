//! `redlatch-fault-holder`: one lock holder in its own process, for fault tests that freeze
//! or crash holders (see `redlatch_faults::Holder`, which starts it).
//!
//! ```text
//! redlatch-fault-holder --id ID --urls URL[,URL...] --lock NAME --resource PORT
//!     [--lease-ms N] [--watchdog-ms N] [--network-timeout-ms N] [--node-timeout-ms N]
//!     [--wait-ms N] [--work-ms N] [--sections N] [--fenced]
//! ```
//!
//! Each section: acquire (with `redlatch::blocking`; several URLs = a quorum), READ the
//! resource with the fencing token, sleep `--work-ms`, WRITE value + 1 with the same token,
//! release. It does *not* check whether the hold is still valid before writing: it is the
//! naive holder a GC pause catches out, and the resource's fencing is what must stop it.
//! Every step is reported on stdout (`redlatch_faults::Event` lines). It stops after
//! `--sections` or when stdin closes, after finishing the section it is in.
#![deny(unsafe_code)]

use std::io::Read;
use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redlatch::blocking;
use redlatch_faults::{Answer, Event, ResourceClient};
use redlatch_fleet::monotonic_ns;

#[derive(Default)]
struct Args {
    id: String,
    urls: Vec<String>,
    lock: String,
    resource: u16,
    lease: Option<Duration>,
    watchdog: Option<Duration>,
    network_timeout: Option<Duration>,
    node_timeout: Option<Duration>,
    wait: Option<Duration>,
    work: Duration,
    sections: Option<u64>,
    fenced: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--fenced" {
            args.fenced = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value:?}"))
        };
        let ms = || number().map(Duration::from_millis);
        match flag.as_str() {
            "--id" => args.id = value.clone(),
            "--urls" => args.urls = value.split(',').map(str::to_string).collect(),
            "--lock" => args.lock = value.clone(),
            "--resource" => args.resource = number()? as u16,
            "--lease-ms" => args.lease = Some(ms()?),
            "--watchdog-ms" => args.watchdog = Some(ms()?),
            "--network-timeout-ms" => args.network_timeout = Some(ms()?),
            "--node-timeout-ms" => args.node_timeout = Some(ms()?),
            "--wait-ms" => args.wait = Some(ms()?),
            "--work-ms" => args.work = ms()?,
            "--sections" => args.sections = Some(number()?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    if args.urls.is_empty() || args.lock.is_empty() || args.resource == 0 {
        return Err("--urls, --lock and --resource are required".into());
    }
    Ok(args)
}

fn emit(event: &Event) {
    // stdout is line-buffered; a closed pipe (the test is gone) ends the process.
    println!("{}", event.to_line());
}

/// Connects, retrying for up to 30 s: a holder respawned while its Redis restarts must wait.
fn connect(args: &Args) -> Result<blocking::Client, redlatch::Error> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut builder = if args.urls.len() == 1 {
            redlatch::Client::builder(&args.urls[0])
        } else {
            redlatch::Client::quorum_builder(&args.urls)
        };
        if let Some(d) = args.watchdog {
            builder = builder.watchdog_timeout(d);
        }
        if let Some(d) = args.network_timeout {
            builder = builder.network_timeout(d);
        }
        if let Some(d) = args.node_timeout {
            builder = builder.node_timeout(d);
        }
        match blocking::Client::from_builder(builder) {
            Ok(client) => return Ok(client),
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    }
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("redlatch-fault-holder: {e}");
        exit(2)
    });
    let client = connect(&args).unwrap_or_else(|e| {
        eprintln!("redlatch-fault-holder {}: cannot connect: {e}", args.id);
        exit(1)
    });
    let mut resource = ResourceClient::connect(args.resource).unwrap_or_else(|e| {
        eprintln!(
            "redlatch-fault-holder {}: cannot reach the resource: {e}",
            args.id
        );
        exit(1)
    });
    // Closing our stdin asks us to stop after the current section.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            stop.store(true, Ordering::SeqCst);
        });
    }
    let mut lock = client.lock(args.lock.as_str());
    if let Some(lease) = args.lease {
        lock = lock.lease(lease);
    }
    if let Some(wait) = args.wait {
        lock = lock.wait(wait);
    }
    if args.fenced {
        lock = lock.fenced();
    }
    emit(&Event::Ready);
    let mut seq = 0;
    while !stop.load(Ordering::SeqCst) && args.sections.is_none_or(|n| seq < n) {
        let guard = match lock.acquire() {
            Ok(guard) => guard,
            Err(e) => {
                emit(&Event::AcquireFailed {
                    at: monotonic_ns(),
                    kind: e.kind().name().to_string(),
                });
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        seq += 1;
        let fence = guard.fencing_token().unwrap_or(0);
        emit(&Event::Acquired {
            at: monotonic_ns(),
            seq,
            fence,
        });
        guard.on_lost(move || {
            emit(&Event::Lost {
                at: monotonic_ns(),
                seq,
            })
        });
        let read = resource.read(fence).unwrap_or_else(|e| {
            eprintln!("redlatch-fault-holder {}: resource read failed: {e}", args.id);
            exit(1)
        });
        emit(&Event::Read {
            at: monotonic_ns(),
            seq,
            answer: read,
        });
        if let Answer::Ok(value) = read {
            if !args.work.is_zero() {
                std::thread::sleep(args.work);
            }
            let wrote = resource.write(fence, value + 1).unwrap_or_else(|e| {
                eprintln!("redlatch-fault-holder {}: resource write failed: {e}", args.id);
                exit(1)
            });
            emit(&Event::Wrote {
                at: monotonic_ns(),
                seq,
                answer: wrote,
            });
        }
        emit(&Event::Releasing {
            at: monotonic_ns(),
            seq,
        });
        let released = guard.release();
        emit(&Event::Released {
            at: monotonic_ns(),
            seq,
            error: released.err().map(|e| e.kind().name().to_string()),
        });
    }
    emit(&Event::Done);
}
