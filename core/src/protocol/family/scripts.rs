//! The Lua scripts of the rest of the lock family (files under `lua/`), with their SHA-1
//! digests through [`Script`]. Our own Lua, written to reproduce the effects of Redisson 4.7's
//! scripts (keys, fields, values, TTLs, messages); see docs/family-protocol.md.

use crate::protocol::scripts::Script;

macro_rules! family_script {
    ($(#[$doc:meta])* $ident:ident, $file:literal) => {
        $(#[$doc])*
        pub static $ident: Script = Script::new($file, include_str!(concat!("lua/", $file, ".lua")));
    };
    // Scripts that tell a lock from application data start with the core's `conflict.lua`
    // (the acquires also with its `grant.lua`);
    // the semaphore and latch scripts, whose key is a count, with `count.lua`.
    // the fair release with `fair_head.lua`, which finds the queue head to wake.
    ($(#[$doc:meta])* $ident:ident, $file:literal, $($prelude:literal),+) => {
        $(#[$doc])*
        pub static $ident: Script = Script::new(
            $file,
            concat!($(include_str!($prelude),)+ include_str!(concat!("lua/", $file, ".lua"))),
        );
    };
}

family_script!(
    /// Fair lock acquire: purge dead heads, grant to the queue head, else join the queue.
    FAIR_ACQUIRE, "fair_acquire", "../lua/conflict.lua", "../lua/grant.lua"
);
family_script!(
    /// Fair lock release: decrement or delete, tell the queue head on its own channel.
    FAIR_RELEASE, "fair_release", "lua/fair_head.lua"
);
family_script!(
    /// Fair lock give-up: undo a latch-proven grant, else leave the queue.
    FAIR_ABORT, "fair_abort"
);
family_script!(
    /// Read lock acquire (shared; per-hold timeout keys).
    RW_READ_ACQUIRE, "rw_read_acquire", "../lua/conflict.lua", "../lua/grant.lua"
);
family_script!(
    /// Read lock release (or, guarded by the acquire latch, undo).
    RW_READ_RELEASE, "rw_read_release"
);
family_script!(
    /// Read lock extend / renewal of every read hold of one owner.
    RW_READ_EXTEND, "rw_read_extend"
);
family_script!(
    /// Write lock acquire (exclusive; refuses a read-to-write upgrade).
    RW_WRITE_ACQUIRE, "rw_write_acquire", "../lua/conflict.lua", "../lua/grant.lua"
);
family_script!(
    /// Write lock release (or, guarded by the acquire latch, undo).
    RW_WRITE_RELEASE, "rw_write_release"
);
family_script!(
    /// Semaphore acquire of n permits.
    SEMAPHORE_ACQUIRE, "semaphore_acquire", "lua/count.lua"
);
family_script!(
    /// Semaphore release of n permits, publishing the new count.
    SEMAPHORE_RELEASE, "semaphore_release", "lua/count.lua"
);
family_script!(
    /// Set the permits of a semaphore that does not exist yet (both semaphore kinds).
    SEMAPHORE_SET, "semaphore_set", "lua/count.lua"
);
family_script!(
    /// Permits available.
    SEMAPHORE_AVAILABLE, "semaphore_available", "lua/count.lua"
);
family_script!(
    /// Semaphore: give back what an acquire request took (latch-proven), for cancellation.
    SEMAPHORE_UNDO, "semaphore_undo", "lua/count.lua"
);
family_script!(
    /// Permit-expirable semaphore acquire: new permit ids with an expiry.
    PERMIT_ACQUIRE, "permit_acquire", "lua/count.lua"
);
family_script!(
    /// Permit-expirable semaphore release by permit id.
    PERMIT_RELEASE, "permit_release", "lua/count.lua"
);
family_script!(
    /// Permit-expirable semaphore: a new expiry for a held permit.
    PERMIT_EXTEND, "permit_extend"
);
family_script!(
    /// Permit-expirable semaphore: available and held permits.
    PERMIT_AVAILABLE, "permit_available", "lua/count.lua"
);
family_script!(
    /// Count-down latch: set the count if absent.
    LATCH_SET, "latch_set", "lua/count.lua"
);
family_script!(
    /// Count-down latch: count down, open at zero.
    LATCH_COUNT_DOWN, "latch_count_down", "lua/count.lua"
);
family_script!(
    /// Count-down latch: the count.
    LATCH_COUNT, "latch_count", "lua/count.lua"
);
family_script!(
    /// Multi-lock all-or-nothing acquire of lease and reentrant members in one script.
    MULTI_ACQUIRE, "multi_acquire", "../lua/conflict.lua", "../lua/grant.lua"
);
family_script!(
    /// Multi-lock release of the members taken by `multi_acquire`.
    MULTI_RELEASE, "multi_release"
);
family_script!(
    /// Multi-lock undo of a `multi_acquire` request that applied (latch-proven).
    MULTI_ABORT, "multi_abort"
);

/// Every family script, for preloading and tests.
pub fn all() -> [&'static Script; 23] {
    [
        &FAIR_ACQUIRE,
        &FAIR_RELEASE,
        &FAIR_ABORT,
        &RW_READ_ACQUIRE,
        &RW_READ_RELEASE,
        &RW_READ_EXTEND,
        &RW_WRITE_ACQUIRE,
        &RW_WRITE_RELEASE,
        &SEMAPHORE_ACQUIRE,
        &SEMAPHORE_RELEASE,
        &SEMAPHORE_SET,
        &SEMAPHORE_AVAILABLE,
        &SEMAPHORE_UNDO,
        &PERMIT_ACQUIRE,
        &PERMIT_RELEASE,
        &PERMIT_EXTEND,
        &PERMIT_AVAILABLE,
        &LATCH_SET,
        &LATCH_COUNT_DOWN,
        &LATCH_COUNT,
        &MULTI_ACQUIRE,
        &MULTI_RELEASE,
        &MULTI_ABORT,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_scripts_are_distinct_and_never_mask_errors() {
        let mut seen: std::collections::HashSet<String> = crate::protocol::scripts::all()
            .iter()
            .map(|s| s.sha1().to_owned())
            .collect();
        for s in all() {
            assert!(
                seen.insert(s.sha1().to_owned()),
                "{} duplicates a script",
                s.name()
            );
            // A pcall would turn WRONGTYPE / NOPERM / OOM into "someone else holds it". The
            // exceptions are the core scripts' rule (protocol/scripts.rs): a release's latch
            // written after the release, whose refusal changes no outcome, and an acquire's
            // writes after its grant, whose refusal undoes the grant and is returned.
            for (i, _) in s.source().match_indices("redis.pcall(") {
                let call = &s.source()[i + "redis.pcall(".len()..];
                let latch = s.name() == "multi_release" && call.starts_with("'SET', KEYS[n + i]");
                let undone = s.name().ends_with("_acquire") && s.source().contains("return undo(");
                assert!(latch || undone, "{} uses redis.pcall", s.name());
            }
            // Channels travel in ARGV (they are not keys); no script builds a Lua chunk.
            assert!(!s.source().contains("loadstring"), "{}", s.name());
            assert!(
                s.source().starts_with("-- "),
                "{} has no header comment",
                s.name()
            );
        }
    }
}
