//! The Lua scripts redlatch runs, with their SHA-1 digests for `EVALSHA`.
//!
//! Each script is a file under `lua/` (readable and reviewable as Lua), embedded with
//! `include_str!`. Keys always travel in `KEYS[]` and values in `ARGV[]`; no Lua source is ever
//! built from user data, so the script cache holds exactly these scripts
//! (shared/reference/faults.md S4).

use std::sync::OnceLock;

/// One Lua script.
#[derive(Debug)]
pub struct Script {
    name: &'static str,
    source: &'static str,
    sha1: OnceLock<String>,
}

impl Script {
    pub(crate) const fn new(name: &'static str, source: &'static str) -> Self {
        Script {
            name,
            source,
            sha1: OnceLock::new(),
        }
    }

    /// A short name for logs, e.g. `"lease_acquire"`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The Lua source.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The lower-case hex SHA-1 of the source, as `SCRIPT LOAD` returns it.
    pub fn sha1(&self) -> &str {
        self.sha1
            .get_or_init(|| sha1_smol::Sha1::from(self.source).digest().to_string())
    }
}

macro_rules! script {
    ($(#[$doc:meta])* $ident:ident, $file:literal) => {
        $(#[$doc])*
        pub static $ident: Script = Script::new($file, include_str!(concat!("lua/", $file, ".lua")));
    };
    // Scripts that tell a lock from application data start with the shared `conflict.lua`.
    ($(#[$doc:meta])* $ident:ident, $file:literal, with_conflict_checks) => {
        $(#[$doc])*
        pub static $ident: Script = Script::new(
            $file,
            concat!(include_str!("lua/conflict.lua"), include_str!(concat!("lua/", $file, ".lua"))),
        );
    };
    // Acquires that count holds in a hash also share `grant.lua` (a grant's TTL, fencing
    // token and latch, undone when refused).
    ($(#[$doc:meta])* $ident:ident, $file:literal, with_conflict_checks_and_grant) => {
        $(#[$doc])*
        pub static $ident: Script = Script::new(
            $file,
            concat!(
                include_str!("lua/conflict.lua"),
                include_str!("lua/grant.lua"),
                include_str!(concat!("lua/", $file, ".lua"))
            ),
        );
    };
}

script!(
    /// Lease lock acquire: `SET NX PX`, idempotent for a retried token; optional fencing `INCR`.
    LEASE_ACQUIRE, "lease_acquire", with_conflict_checks
);
script!(
    /// Lease lock release: compare-and-delete, publish `0` on the unlock channel.
    LEASE_RELEASE, "lease_release"
);
script!(
    /// Lease lock extend and renewal: token-checked `PEXPIRE`.
    LEASE_EXTEND, "lease_extend"
);
script!(
    /// Reentrant lock acquire (Redisson RLock).
    RLOCK_ACQUIRE, "rlock_acquire", with_conflict_checks_and_grant
);
script!(
    /// Reentrant lock release (Redisson RLock).
    RLOCK_RELEASE, "rlock_release"
);
script!(
    /// Undo of a reentrant acquire with an unknown outcome (latch-proven only).
    RLOCK_ABORT, "rlock_abort"
);
script!(
    /// Reentrant lock extend and renewal (Redisson renewExpiration).
    RLOCK_EXTEND, "rlock_extend"
);
script!(
    /// Watchdog renewal of many holds in one call.
    RENEW_BATCH, "renew_batch"
);
/// Admin delete of a lock whatever its owner (never of application data); it wakes a fair
/// lock's queue head as the fair release does (`family/lua/fair_head.lua`).
pub static FORCE_UNLOCK: Script = Script::new(
    "force_unlock",
    concat!(
        include_str!("lua/conflict.lua"),
        include_str!("family/lua/fair_head.lua"),
        include_str!("lua/force_unlock.lua")
    ),
);
script!(
    /// Read-only lock state.
    INSPECT, "inspect", with_conflict_checks
);
script!(
    /// The server's `run_id` (`INFO server`), telling a quorum's nodes apart
    /// (`protocol::independence`).
    SERVER_ID, "server_id"
);

/// Every lock script, for preloading and tests ([`SERVER_ID`], which takes no key, aside).
pub fn all() -> [&'static Script; 10] {
    [
        &LEASE_ACQUIRE,
        &LEASE_RELEASE,
        &LEASE_EXTEND,
        &RLOCK_ACQUIRE,
        &RLOCK_RELEASE,
        &RLOCK_ABORT,
        &RLOCK_EXTEND,
        &RENEW_BATCH,
        &FORCE_UNLOCK,
        &INSPECT,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_sha1_hex_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for s in all() {
            assert_eq!(s.sha1().len(), 40, "{}", s.name());
            assert!(seen.insert(s.sha1().to_owned()));
            assert!(s.source().contains("KEYS[1]") || s.source().contains("KEYS"));
            // A refused read must never pass for an answer ("someone else holds it"): pcall
            // only guards writes to a lock's companion keys, whose refusal is undone (acquires)
            // or changes no outcome (a release's latch), and renew_batch's reads (WRONGTYPE).
            for (i, _) in s.source().match_indices("redis.pcall(") {
                let call = &s.source()[i + "redis.pcall(".len()..];
                assert!(
                    s.name() == "renew_batch"
                        || ["'SET'", "'INCR'", "'PEXPIRE'"]
                            .iter()
                            .any(|c| call.starts_with(c)),
                    "{}: pcall of {}",
                    s.name(),
                    &call[..call.len().min(12)]
                );
            }
        }
        assert!(LEASE_ACQUIRE.source().starts_with("-- Shared by the scripts"));
        // SHA-1 of the empty string, to check the digest routine itself.
        assert_eq!(
            sha1_smol::Sha1::from("").digest().to_string(),
            "da39a3ee5e6b4b0d3255bfef95601890afd80709"
        );
    }
}
