//! The least-privilege ACL user redlatch needs, exactly as docs/deployments.md documents it.
//!
//! Why it lives in the harness: `make test` runs the core suite and the Python suite logged in
//! as this user (`REDLATCH_FLEET_ACL=1`), so the documented recipe is the tested one; a test
//! (`tests/acl.rs` in the core) checks the document quotes these strings.

/// The user's name.
pub const USER: &str = "redlatch";
/// The password the harness gives it (tests only).
pub const PASSWORD: &str = "redlatch-test-password";

/// Commands: the scripts (`EVALSHA`, with `EVAL` when the script cache was flushed), the
/// commands those scripts call, the plain fast paths (`SET ... NX PX`), pub/sub wake-ups
/// (sharded on Cluster), `WAIT` for `sync_replicas`, and the read-only checks made at connect
/// (each tolerated when denied): `CONFIG GET maxmemory-policy`, `COMMAND INFO`,
/// `PUBSUB SHARDNUMSUB`, `ROLE`, `CLUSTER SLOTS`.
pub const COMMANDS: &str = "-@all +ping +hello +select +evalsha +eval +set +get +pttl +pexpire +del +exists \
+incr +hincrby +hexists +hget +publish +spublish +subscribe +unsubscribe +ssubscribe +sunsubscribe +wait \
+role +config|get +command|info +pubsub|shardnumsub +cluster|slots +asking";

/// Valkey 9 only: its compare-and-delete, used for lease locks instead of a script.
pub const VALKEY_COMMANDS: &str = "+delifeq";

/// Key patterns besides the application's own lock names: the fencing counters, the
/// idempotency latches and (until the release scripts take the channel as an argument) the
/// unlock channels, which the scripts receive as keys.
pub const COMPANION_KEYS: &str =
    "~redisson_lock_token:* ~redisson_unlock_latch:* ~redlatch_acquire_latch:* ~redisson_lock__channel:*";

/// Channel patterns: the unlock channels waiters subscribe to.
pub const CHANNELS: &str = "&redisson_lock__channel:*";

/// The `ACL SETUSER` arguments for a user whose lock names match `lock_keys` (a Redis glob
/// such as `lock:*`), without the password.
pub fn setuser_args(lock_keys: &str, valkey: bool) -> Vec<String> {
    let mut args: Vec<String> = ["ACL", "SETUSER", USER, "reset", "on"].map(String::from).to_vec();
    args.push(format!(">{PASSWORD}"));
    args.extend(COMMANDS.split(' ').map(String::from));
    if valkey {
        args.extend(VALKEY_COMMANDS.split(' ').map(String::from));
    }
    args.push(format!("~{lock_keys}"));
    // `~*` covers them (and Valkey refuses patterns after it).
    if lock_keys != "*" {
        args.extend(COMPANION_KEYS.split(' ').map(String::from));
    }
    args.push(CHANNELS.to_owned());
    args
}
