//! The faults the soak injects, which arena gets which, and how each is done. One fault at a
//! time per arena, so their effects never add up past the lease a claim relies on.

use std::io;
use std::thread::sleep;
use std::time::Duration;

use crate::proxy::{Direction, Fault};
use crate::soak::arena::{Arena, ArenaKind};

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// `SIGKILL` a holder (a crash with the lock held or not); a replacement starts.
    HolderKill,
    /// `SIGSTOP` a holder for 100-250 ms (well inside its lease), then `SIGCONT`.
    HolderPauseShort,
    /// `SIGSTOP` a holder inside its section for 1.2-2.4 leases, then `SIGCONT`.
    HolderPauseLong,
    /// `CLIENT KILL TYPE normal` and `TYPE pubsub` on a node.
    ClientKill,
    /// `SCRIPT FLUSH` on a node.
    ScriptFlush,
    /// `DEBUG SLEEP 0.2` on a node.
    DebugSleep,
    /// `CLIENT PAUSE 200 WRITE` on a node.
    ClientPauseWrite,
    /// `SIGSTOP` a node for 150 ms (single node) or past the lease (one quorum node), then
    /// `SIGCONT`.
    NodePause,
    /// Quorum: `SIGKILL` one node, keep it down longer than the lease plus the drift
    /// allowance, restart it empty (the delayed-restart rule).
    NodeRestartDelayed,
    /// Replies of a node delayed by 30-80 ms for 300-600 ms.
    ProxyDelay,
    /// Every connection to a node reset.
    ProxyReset,
    /// The next reply from a node lost with its connection.
    ReplyLost,
    /// The next request to a node lost with its connection.
    RequestLost,
    /// Quorum: one node partitioned (both directions held) for 0.25-1.5 leases.
    Partition,
}

impl FaultKind {
    /// The name used in the figures.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::HolderKill => "holder kill -9",
            FaultKind::HolderPauseShort => "holder SIGSTOP < lease",
            FaultKind::HolderPauseLong => "holder SIGSTOP > lease",
            FaultKind::ClientKill => "CLIENT KILL",
            FaultKind::ScriptFlush => "SCRIPT FLUSH",
            FaultKind::DebugSleep => "DEBUG SLEEP",
            FaultKind::ClientPauseWrite => "CLIENT PAUSE WRITE",
            FaultKind::NodePause => "Redis SIGSTOP",
            FaultKind::NodeRestartDelayed => "Redis kill -9 + delayed restart",
            FaultKind::ProxyDelay => "proxy delay",
            FaultKind::ProxyReset => "proxy reset",
            FaultKind::ReplyLost => "reply lost",
            FaultKind::RequestLost => "request lost",
            FaultKind::Partition => "node partitioned",
        }
    }

    /// The faults an arena of `kind` gets.
    pub fn for_arena(kind: ArenaKind) -> &'static [FaultKind] {
        use FaultKind::*;
        match kind {
            ArenaKind::Fenced => &[
                HolderKill,
                HolderPauseShort,
                ClientKill,
                ScriptFlush,
                DebugSleep,
                ClientPauseWrite,
                NodePause,
                ProxyDelay,
                ProxyReset,
                ReplyLost,
                RequestLost,
            ],
            ArenaKind::Paused => &[HolderPauseLong, HolderPauseLong, HolderKill],
            ArenaKind::Quorum => &[
                HolderKill,
                HolderPauseShort,
                ClientKill,
                ScriptFlush,
                NodePause,
                NodeRestartDelayed,
                ProxyDelay,
                ProxyReset,
                ReplyLost,
                RequestLost,
                Partition,
            ],
        }
    }
}

fn ms(rng: &mut fastrand::Rng, low: u64, high: u64) -> Duration {
    Duration::from_millis(rng.u64(low..=high))
}

/// Injects `fault` into `arena` and waits until it is over (the paused process resumed, the
/// node back). Returns `false` when the fault had no target (no holder in a section).
///
/// # Errors
/// A signal, restart or `redis-cli` call failed.
pub fn inject(arena: &mut Arena, fault: FaultKind, rng: &mut fastrand::Rng) -> io::Result<bool> {
    let node = rng.usize(..arena.servers.len());
    let server = &arena.servers[node];
    let proxy = &arena.proxies[node];
    match fault {
        FaultKind::HolderKill => {
            let i = rng.usize(..arena.holders.len());
            arena.kill_and_replace(i)?;
        }
        FaultKind::HolderPauseShort => {
            let i = rng.usize(..arena.holders.len());
            arena.holders[i].pause()?;
            sleep(ms(rng, 100, 250));
            arena.holders[i].resume()?;
        }
        FaultKind::HolderPauseLong => {
            let Some(i) = arena.holder_in_section() else {
                return Ok(false);
            };
            let lease = arena.kind.lease().as_millis() as u64;
            arena.holders[i].pause()?;
            sleep(ms(rng, lease * 6 / 5, lease * 12 / 5));
            arena.holders[i].resume()?;
        }
        FaultKind::ClientKill => {
            server.cli(&["CLIENT", "KILL", "TYPE", "normal"])?;
            server.cli(&["CLIENT", "KILL", "TYPE", "pubsub"])?;
        }
        FaultKind::ScriptFlush => {
            server.cli(&["SCRIPT", "FLUSH"])?;
        }
        FaultKind::DebugSleep => {
            server.cli(&["DEBUG", "SLEEP", "0.2"])?;
        }
        FaultKind::ClientPauseWrite => {
            server.cli(&["CLIENT", "PAUSE", "200", "WRITE"])?;
            sleep(Duration::from_millis(200));
        }
        FaultKind::NodePause => {
            // One quorum node frozen past the lease (faults.md row 7); a single node only
            // briefly, well inside it.
            let stall = if arena.kind == ArenaKind::Quorum {
                arena.kind.lease() + ms(rng, 200, 1000)
            } else {
                Duration::from_millis(150)
            };
            server.pause()?;
            sleep(stall);
            server.resume()?;
        }
        FaultKind::NodeRestartDelayed => {
            server.kill()?;
            // Longer than the longest lease plus its drift allowance (1% + 2 ms).
            sleep(arena.kind.lease() + Duration::from_millis(300));
            server.restart()?;
        }
        FaultKind::ProxyDelay => {
            proxy.set(Direction::ToClient, Fault::Delay(ms(rng, 30, 80)));
            sleep(ms(rng, 300, 600));
            proxy.set(Direction::ToClient, Fault::Pass);
        }
        FaultKind::ProxyReset => proxy.reset_all(),
        FaultKind::ReplyLost | FaultKind::RequestLost => {
            let direction = if fault == FaultKind::ReplyLost {
                Direction::ToClient
            } else {
                Direction::ToServer
            };
            proxy.once(direction, Fault::Reset);
            // Until it hits (holders are busy), or give up on it.
            for _ in 0..100 {
                if !proxy.once_pending(direction) {
                    break;
                }
                sleep(Duration::from_millis(5));
            }
            proxy.set(direction, Fault::Pass);
        }
        FaultKind::Partition => {
            proxy.set_both(Fault::Blackhole);
            let lease = arena.kind.lease().as_millis() as u64;
            sleep(ms(rng, lease / 4, lease * 3 / 2));
            proxy.set_both(Fault::Pass);
        }
    }
    Ok(true)
}
