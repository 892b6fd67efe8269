//! The least-privilege ACL user redlatch needs, exactly as docs/deployments.md documents it.
//!
//! Why it lives in the harness: `make test` runs the core suite and the Python suite logged in
//! as this user (`REDLATCH_FLEET_ACL=1`), so the documented recipe is the tested one;
//! `tests/fleet/tests/acl_recipe.rs` checks the document quotes [`setuser_line`] exactly.
//!
//! Two parts: what the clients use today (lease and reentrant locks: [`COMMANDS`],
//! [`COMPANION_KEYS`], [`CHANNELS`]) and what the rest of the lock family's scripts (fair,
//! read/write, semaphores, latch; `core/src/protocol/family`) add ([`FAMILY_COMMANDS`],
//! [`FAMILY_KEYS`], [`FAMILY_CHANNELS`]). The harness grants both, so the family's script
//! tests run under the user too.

/// The user's name.
pub const USER: &str = "redlatch";
/// The password the harness gives it (tests only).
pub const PASSWORD: &str = "redlatch-test-password";

/// Commands: the scripts (`EVALSHA`, with `EVAL` when the script cache was flushed), the
/// commands those scripts call, the plain fast paths (`SET ... NX PX`), pub/sub wake-ups
/// (sharded on Cluster), `WAIT` for `sync_replicas`, and the read-only checks made at connect
/// (each tolerated when denied): `CONFIG GET maxmemory-policy`, `COMMAND INFO`,
/// `PUBSUB SHARDNUMSUB`, `ROLE`, `CLUSTER SLOTS`, `INFO server` (a quorum node's server
/// identity).
pub const COMMANDS: &str =
    "-@all +ping +hello +select +evalsha +eval +set +get +pttl +pexpire +del +exists +type \
+incr +hincrby +hexists +hget +publish +spublish +subscribe +unsubscribe +ssubscribe +sunsubscribe +wait \
+role +config|get +command|info +pubsub|shardnumsub +cluster|slots +asking +info";

/// Valkey 9 only: what lease locks use instead of a script (its compare-and-delete, inside
/// one `MULTI`/`EXEC` per request, the release's latch written by `COPY`; see
/// `core/src/native/ifeq.rs`).
pub const VALKEY_COMMANDS: &str = "+delifeq +multi +exec +copy";

/// What the family's scripts call besides [`COMMANDS`].
pub const FAMILY_COMMANDS: &str =
    "+incrby +decr +decrby +hset +hdel +hlen +hkeys +rpush +lpop +lindex +llen \
+lrange +lpos +lrem +zadd +zrem +zscore +zcard +zrange +zincrby +zremrangebyscore";

/// Key patterns besides the application's own lock names: the fencing counters, the
/// idempotency latches and (until the release scripts take the channel as an argument) the
/// unlock channels, which the scripts receive as keys.
pub const COMPANION_KEYS: &str =
    "~redisson_lock_token:* ~redisson_unlock_latch:* ~redlatch_acquire_latch:* ~redisson_lock__channel:*";

/// The family's companion keys that have a fixed prefix (the fair lock's queue and
/// deadlines). The others are the lock name in braces plus a suffix (`{N}:...`: read-hold
/// timeouts, permit sets): `~{` + the lock-name pattern, added by [`setuser_args`].
pub const FAMILY_KEYS: &str = "~redisson_lock_queue:* ~redisson_lock_timeout:*";

/// Channel patterns: the unlock channels waiters subscribe to (a fair lock's per-waiter
/// channels start the same way).
pub const CHANNELS: &str = "&redisson_lock__channel:*";

/// The family's channels: read/write, semaphore and latch wake-ups.
pub const FAMILY_CHANNELS: &str = "&redisson_rwlock:* &redisson_sc:* &redisson_countdownlatch__channel__*";

/// The `ACL SETUSER` arguments for a user whose lock names match `lock_keys` (a Redis glob
/// such as `lock:*`), with the harness's [`PASSWORD`].
pub fn setuser_args(lock_keys: &str, valkey: bool) -> Vec<String> {
    let mut args: Vec<String> = ["ACL", "SETUSER", USER, "reset", "on"].map(String::from).to_vec();
    args.push(format!(">{PASSWORD}"));
    args.extend(COMMANDS.split(' ').map(String::from));
    args.extend(FAMILY_COMMANDS.split(' ').map(String::from));
    if valkey {
        args.extend(VALKEY_COMMANDS.split(' ').map(String::from));
    }
    args.push(format!("~{lock_keys}"));
    // `~*` covers them (and Valkey refuses patterns after it).
    if lock_keys != "*" {
        args.extend(COMPANION_KEYS.split(' ').map(String::from));
        args.extend(FAMILY_KEYS.split(' ').map(String::from));
        args.push(format!("~{{{lock_keys}"));
    }
    args.push(CHANNELS.to_owned());
    args.extend(FAMILY_CHANNELS.split(' ').map(String::from));
    args
}

/// The same user as a `redis-server` start-up option (`--user redlatch reset on ...`), so a
/// restarted server has it before it accepts a connection, as a deployment's ACL file or
/// config brings its users back.
pub fn user_directive(lock_keys: &str, valkey: bool) -> Vec<String> {
    let mut args = setuser_args(lock_keys, valkey);
    args[1] = "--user".to_owned();
    args.remove(0);
    args
}

/// The command as docs/deployments.md prints it, for lock names matching `lock_keys` and a
/// password shown as `password`: `ACL SETUSER redlatch reset on >password -@all ...`.
pub fn setuser_line(lock_keys: &str, password: &str, valkey: bool) -> String {
    setuser_args(lock_keys, valkey)
        .into_iter()
        .map(|a| {
            if a == format!(">{PASSWORD}") {
                format!(">{password}")
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The default user's URL for `url` when it logs in as [`USER`] (test code that inspects
/// keys or records every message is not the client and needs more than the recipe grants);
/// any other URL unchanged.
pub fn admin_url_for(url: &str) -> String {
    url.replace(&format!("{USER}:{PASSWORD}@"), "")
}
