//! One arena of the soak: a lock name, its Redis node(s) behind fault proxies, a resource and
//! a few holder processes taking the lock in a loop, plus the checks over what they did.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use redlatch_fleet::{monotonic_ns, RedisServer};

use crate::fenced::{FencedResource, Fencing};
use crate::holder::{Holder, HolderSpec};
use crate::proxy::FaultProxy;
use crate::sections::{overlaps, token_order_violations, Section};
use crate::Event;

/// The kinds of arena, each with its own faults and its own claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ArenaKind {
    /// One node, fenced watchdog-mode holders, faults within the lease assumption: no
    /// overlap, no token going back, no rejected or lost update is claimed.
    Fenced,
    /// One node, fenced holders frozen past their lease: overlaps are expected (the lease
    /// assumption is broken on purpose); every stale operation must be rejected, no update
    /// lost, tokens in order.
    Paused,
    /// Three nodes (Redlock), unfenced resource, minority faults and delayed restarts: no
    /// overlap and no lost update is claimed.
    Quorum,
}

impl ArenaKind {
    /// The name used in the figures.
    pub fn name(self) -> &'static str {
        match self {
            ArenaKind::Fenced => "fenced",
            ArenaKind::Paused => "paused",
            ArenaKind::Quorum => "quorum",
        }
    }

    /// Whether the arena's holders take fencing tokens (single node).
    pub fn is_fenced(self) -> bool {
        self != ArenaKind::Quorum
    }

    /// The watchdog timeout (lease) of the arena's holders.
    /// Where overlaps are claimed absent, it is well above the longest stall a loaded 2-core
    /// machine gives a process (a holder descheduled past its lease is a pause like any other).
    pub fn lease(self) -> Duration {
        match self {
            ArenaKind::Paused => Duration::from_millis(500),
            ArenaKind::Fenced | ArenaKind::Quorum => Duration::from_millis(3000),
        }
    }
}

/// What the checks found in one arena.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArenaReport {
    /// The arena's name (kind and number).
    pub name: String,
    /// Whether its holders took fencing tokens.
    pub fenced: bool,
    /// Critical sections run (acquired and ended, in any way).
    pub sections: u64,
    /// Sections that started while another still held the lock.
    pub overlaps: u64,
    /// Sections whose fencing token was not above every earlier one's.
    pub token_order: u64,
    /// Accepted writes that lost another's update.
    pub lost_updates: u64,
    /// Operations the resource rejected as stale or reused.
    pub rejected: u64,
    /// Acquires that failed (the holder tried again).
    pub acquire_errors: u64,
    /// Releases that failed.
    pub release_errors: u64,
    /// Failed acquires and releases by error kind, e.g. `"release NotOwned" -> 3`.
    pub errors_by_kind: std::collections::BTreeMap<String, u64>,
    /// The first few violations found, for the message.
    pub examples: Vec<String>,
}

/// A running arena.
pub struct Arena {
    /// The arena's kind.
    pub kind: ArenaKind,
    /// Its name in the figures.
    pub name: String,
    /// Its Redis nodes (one, or three for a quorum).
    pub servers: Vec<RedisServer>,
    /// One proxy per node; holders connect through them.
    pub proxies: Vec<FaultProxy>,
    /// The resource the holders update.
    pub resource: FencedResource,
    /// Holders running now.
    pub holders: Vec<Holder>,
    /// Holders killed so far (kept for their sections).
    dead: Vec<Holder>,
    spec: HolderSpec,
    spawned: usize,
}

impl Arena {
    /// Starts the servers, proxies, resource and `holders` holder processes.
    ///
    /// # Errors
    /// Anything that failed to start.
    pub fn start(kind: ArenaKind, number: usize, holders: usize, exe: PathBuf) -> io::Result<Arena> {
        let nodes = if kind == ArenaKind::Quorum { 3 } else { 1 };
        let servers = (0..nodes)
            .map(|_| RedisServer::start())
            .collect::<io::Result<Vec<_>>>()?;
        let proxies = servers
            .iter()
            .map(|s| FaultProxy::start(s.port()))
            .collect::<io::Result<Vec<_>>>()?;
        let fencing = if kind.is_fenced() {
            Fencing::On
        } else {
            Fencing::Off
        };
        let resource = FencedResource::start(fencing)?;
        let name = format!("{}-{number}", kind.name());
        let mut spec = HolderSpec::new(&name, &proxies[0].url(), &format!("soak:{name}"), resource.port());
        spec.exe = exe;
        spec.urls = proxies.iter().map(FaultProxy::url).collect();
        spec.watchdog = Some(kind.lease());
        spec.network_timeout = Some(Duration::from_millis(1000));
        spec.fenced = kind.is_fenced();
        if kind == ArenaKind::Quorum {
            spec.node_timeout = Some(Duration::from_millis(150));
        }
        if kind == ArenaKind::Paused {
            // Holders spend most of a section inside it, so a freeze lands there.
            spec.work = Duration::from_millis(20);
        }
        let mut arena = Arena {
            kind,
            name,
            servers,
            proxies,
            resource,
            holders: Vec::new(),
            dead: Vec::new(),
            spec,
            spawned: 0,
        };
        for _ in 0..holders {
            arena.spawn()?;
        }
        Ok(arena)
    }

    fn spawn(&mut self) -> io::Result<()> {
        self.spawned += 1;
        let mut spec = self.spec.clone();
        spec.id = format!("{}/h{}", self.name, self.spawned);
        self.holders.push(Holder::spawn(&spec)?);
        Ok(())
    }

    /// Kills holder `i` (`SIGKILL`) and starts a replacement.
    ///
    /// # Errors
    /// Killing or respawning failed.
    pub fn kill_and_replace(&mut self, i: usize) -> io::Result<()> {
        let mut holder = self.holders.remove(i);
        holder.kill()?;
        self.dead.push(holder);
        self.spawn()
    }

    /// The index of a holder inside a critical section now, if any.
    pub fn holder_in_section(&self) -> Option<usize> {
        self.holders.iter().position(|h| {
            h.with_events(|events| {
                let last = events
                    .iter()
                    .rev()
                    .find(|e| matches!(e, Event::Acquired { .. } | Event::Releasing { .. }));
                matches!(last, Some(Event::Acquired { .. }))
            })
        })
    }

    /// Sections ended so far, by live and dead holders.
    pub fn sections_done(&self) -> u64 {
        let count = |h: &Holder| {
            h.with_events(|events| {
                events
                    .iter()
                    .filter(|e| matches!(e, Event::Releasing { .. }))
                    .count() as u64
            })
        };
        self.holders.iter().chain(&self.dead).map(count).sum()
    }

    /// Stops the holders after their current sections and runs every check.
    ///
    /// # Errors
    /// A holder that would not finish.
    pub fn finish(mut self) -> io::Result<ArenaReport> {
        for holder in &mut self.holders {
            holder.finish(Duration::from_secs(30))?;
        }
        let now = monotonic_ns();
        let mut sections: Vec<Section> = Vec::new();
        let mut report = ArenaReport {
            name: self.name.clone(),
            fenced: self.kind.is_fenced(),
            ..ArenaReport::default()
        };
        for holder in self.holders.iter().chain(&self.dead) {
            holder.with_events(|events| {
                for e in events {
                    let key = match e {
                        Event::AcquireFailed { kind, .. } => format!("acquire {kind}"),
                        Event::Released {
                            error: Some(kind), ..
                        } => format!("release {kind}"),
                        _ => continue,
                    };
                    *report.errors_by_kind.entry(key).or_default() += 1;
                }
            });
            report.acquire_errors += holder.with_events(|events| {
                events
                    .iter()
                    .filter(|e| matches!(e, Event::AcquireFailed { .. }))
                    .count() as u64
            });
            let mut mine = holder.sections();
            let end = holder.ended_at().unwrap_or(now);
            for s in &mut mine {
                if s.released_ns.is_none() {
                    s.released_ns = Some(end.max(s.acquired_ns));
                }
            }
            report.release_errors +=
                mine.iter().filter(|s| matches!(s.release, Some(Some(_)))).count() as u64;
            sections.extend(mine);
        }
        report.sections = sections.len() as u64;
        let found_overlaps = overlaps(&sections, now);
        let found_order = token_order_violations(&sections);
        report.overlaps = found_overlaps.len() as u64;
        report.token_order = found_order.len() as u64;
        let resource = self.resource.report();
        report.lost_updates = resource.lost_updates;
        report.rejected = resource.rejected.len() as u64;
        report.examples = found_overlaps.into_iter().chain(found_order).take(3).collect();
        Ok(report)
    }
}
