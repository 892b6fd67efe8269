//! Which script, keys and arguments each lock operation sends, per lock kind.
//!
//! This is the single place that knows the argument order of every script in `lua/`: the
//! [`Request`] type and the requests on a lock name here, the lock kinds ([`Holder`]) in
//! `holder.rs` and each kind's acquire, release, undo and extend requests in `operations.rs`.

mod holder;
mod operations;

pub use holder::{Holder, Turn};

use super::family::keys as family_keys;
use super::family::scripts as family_scripts;
use super::keys;
use super::scripts::{self, Script};

/// Publish command used by release scripts: plain `PUBLISH` on a single node or a quorum of
/// independent nodes; a Cluster transport swaps in `SPUBLISH` where the cluster has sharded
/// pub/sub ([`Request::with_publish_command`]).
pub const PUBLISH: &str = "publish";

/// See [`Request::attempt_mark`].
#[cfg(feature = "native")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AttemptMark {
    key: String,
    id: String,
}

/// One script invocation.
#[derive(Debug, Clone)]
pub struct Request {
    /// The script to run.
    pub script: &'static Script,
    /// `KEYS[]`.
    pub keys: Vec<String>,
    /// `ARGV[]`.
    pub args: Vec<String>,
    /// Equivalent plain commands (no Lua) a transport may send instead of the script, saving
    /// the script's cost on the hot path: one command, answered by its own reply, or several,
    /// sent as one pipeline (not a transaction) and answered by the array of their replies.
    /// Either reply decodes to the same outcome as the script's (the request's decoder takes
    /// both); a transport that sends only scripts ignores it.
    pub plain: Option<Vec<Vec<String>>>,
    /// Send the script's source (`EVAL`) at once instead of its digest (`EVALSHA`, then
    /// `EVAL` on `NOSCRIPT`): for rare requests that must take effect in one round trip even
    /// on a node whose script cache is empty, such as the undo of a failed acquire on a slow
    /// node, where the `NOSCRIPT` answer could come after the call's timeout and the `EVAL`
    /// would never be sent.
    pub by_source: bool,
}

impl Request {
    /// The same request without its plain form: the script must run (retries, where the
    /// script's extra checks matter).
    pub fn script_only(mut self) -> Request {
        self.plain = None;
        self
    }

    /// Whether this is the undo of an acquire attempt ([`Holder::abort`], the semaphores'
    /// undos: sent by source, and a latch-less lease release, a permit's release by id, or a
    /// request naming the attempt's acquire latch: the undos of reentrant, fair, read and
    /// write acquires, of a semaphore's and of a multi-lock's (`multi_abort`); no other
    /// by-source request names one, a release retry names its own release latch). It must
    /// reach Redis after the attempt it undoes, so transports send it on the attempt's
    /// connection (see `native/connection.rs`). (Until stop 33 only the lease and reentrant
    /// undos were recognized: a fair or read/write undo could overtake its attempt and find
    /// nothing to undo; until stop 35 the semaphores' undos were not either; until stop 42 the
    /// multi-lock's.)
    pub fn is_undo(&self) -> bool {
        let lease_undo = std::ptr::eq(self.script, &scripts::LEASE_RELEASE)
            && self.args.get(3).is_some_and(|ttl| ttl == "0");
        let permit_undo = std::ptr::eq(self.script, &family_scripts::PERMIT_RELEASE);
        self.by_source
            && (lease_undo || permit_undo || self.keys.iter().skip(1).any(|k| keys::is_acquire_latch(k)))
    }

    /// The argument that names an attempt where no acquire latch does: a lease lock's token
    /// (the first argument of its acquire and of its release) and a permit's id (the first id
    /// of a permit acquire, the id of a permit release).
    #[cfg(feature = "native")]
    fn attempt_id_arg(&self) -> Option<&String> {
        let is = |script: &Script| std::ptr::eq(self.script, script);
        if is(&scripts::LEASE_ACQUIRE) || is(&scripts::LEASE_RELEASE) || is(&family_scripts::PERMIT_RELEASE) {
            self.args.first()
        } else if is(&family_scripts::PERMIT_ACQUIRE) {
            self.args.get(super::family::permits::FIRST_ID_ARG)
        } else {
            None
        }
    }

    /// What ties an acquire attempt to its undo, the same for both: the lock's (or
    /// semaphore's) key and the attempt's own id, which is a lease lock's token or a permit's
    /// id ([`Self::attempt_id_arg`]) or, for the other kinds, the acquire latch named by the
    /// attempt's request id (a key of both). `None` for requests that carry neither.
    #[cfg(feature = "native")]
    pub(crate) fn attempt_mark(&self) -> Option<AttemptMark> {
        let key = self.keys.first()?;
        let id = match self.attempt_id_arg() {
            Some(id) => id,
            None => self.keys.iter().skip(1).find(|k| keys::is_acquire_latch(k))?,
        };
        Some(AttemptMark {
            key: key.clone(),
            id: id.clone(),
        })
    }

    /// Whether this is the undo ([`Request::is_undo`]) of the attempt marked `attempt`
    /// ([`Request::attempt_mark`]): the same lock and the same attempt. The lock's key alone
    /// is not enough: another attempt on that lock, abandoned on another connection, would
    /// send this undo there, ahead of its own attempt (found by the asyncio cancellation
    /// test: an attempt on the multiplexed connection, a cancelled one before it on the event
    /// loop's, and the undo overtook its grant).
    #[cfg(feature = "native")]
    pub(crate) fn undoes(&self, attempt: Option<&AttemptMark>) -> bool {
        attempt.is_some() && self.is_undo() && self.attempt_mark().as_ref() == attempt
    }

    /// A lease lock's release (not an undo): like an undo, it must not overtake a try of its
    /// own grant, still running (a quorum node that did not answer the acquire in time) or
    /// abandoned on a connection where it stays queued; it goes behind it on that connection
    /// (`connection_grants.rs`, `Reconnecting::suspects_for`).
    #[cfg(feature = "native")]
    pub(crate) fn follows_its_grant(&self) -> bool {
        std::ptr::eq(self.script, &scripts::LEASE_RELEASE) && !self.is_undo()
    }

    /// Whether this request goes behind the tries of the attempt marked `attempt`.
    #[cfg(feature = "native")]
    pub(crate) fn goes_behind(&self, attempt: Option<&AttemptMark>) -> bool {
        self.undoes(attempt)
            || (attempt.is_some() && self.follows_its_grant() && self.attempt_mark().as_ref() == attempt)
    }

    /// The fair and write acquires' optional last argument: the fencing counter's TTL in ms
    /// when `fence` is `Some(ttl)` with `ttl > 0` (the counter persists otherwise, as in
    /// Redisson). Only for `fair_acquire` and `rw_write_acquire` requests.
    pub fn with_fence_ttl(mut self, fence: Option<u64>) -> Request {
        if let Some(ttl) = fence.filter(|ttl| *ttl > 0) {
            self.args.push(ttl.to_string());
        }
        self
    }

    /// The same request publishing with `command` instead of [`PUBLISH`]: `spublish` for
    /// sharded pub/sub on Redis Cluster 7+ (a per-client choice of the transport). Only the
    /// publish argument can equal [`PUBLISH`]: tokens are hex, owner ids `uuid:n`, the rest
    /// numbers or `L`/`R` specs.
    pub fn with_publish_command(mut self, command: &str) -> Request {
        for arg in self.args.iter_mut().filter(|a| *a == PUBLISH) {
            command.clone_into(arg);
        }
        self
    }
}

/// `SET name token NX PX lease_ms`: the plain form of an unfenced lease acquire (the
/// redis-py / node-redlock command; the lease in ms).
pub fn set_nx_px(name: &str, token: &str, lease_ms: u64) -> Vec<String> {
    vec![
        "SET".to_owned(),
        name.to_owned(),
        token.to_owned(),
        "NX".to_owned(),
        "PX".to_owned(),
        lease_ms.to_string(),
    ]
}

/// Batch renewal of `holds` (`(name, holder)` pairs) to `lease_ms`.
pub fn renew_batch<'a>(lease_ms: u64, holds: impl IntoIterator<Item = (&'a str, &'a Holder)>) -> Request {
    let mut keys = Vec::new();
    let mut args = vec![lease_ms.to_string()];
    for (name, holder) in holds {
        keys.push(name.to_owned());
        args.push(holder.spec());
    }
    Request {
        script: &scripts::RENEW_BATCH,
        keys,
        args,
        plain: None,
        by_source: false,
    }
}

/// Force-unlock request for `name`, a lock of any kind (`force_unlock.lua`); `now_ms` is the
/// caller's wall clock (ms since the Unix epoch), to pass over fair waiters whose deadline
/// passed.
pub fn force_unlock(name: &str, now_ms: u64) -> Request {
    Request {
        script: &scripts::FORCE_UNLOCK,
        keys: vec![
            name.to_owned(),
            family_keys::fair_queue(name),
            family_keys::fair_timeouts(name),
        ],
        args: vec![
            PUBLISH.to_owned(),
            keys::lock_channel(name),
            family_keys::rw_channel(name),
            now_ms.to_string(),
        ],
        plain: None,
        by_source: false,
    }
}

/// Inspect request for `name`, a reentrant lock or not, asking about `holder` when given. For
/// read and write holders the lock counts as existing only in that mode (Redisson's `isLocked`
/// of its read and write locks).
pub fn inspect(name: &str, reentrant: bool, holder: Option<&Holder>) -> Request {
    let spec = match holder {
        Some(h) => h.spec(),
        None if reentrant => "R".to_owned(),
        None => "L".to_owned(),
    };
    let mut args = vec![spec];
    match holder {
        Some(Holder::Read { .. }) => args.push("read".to_owned()),
        Some(Holder::Write { .. }) => args.push("write".to_owned()),
        _ => {}
    }
    Request {
        script: &scripts::INSPECT,
        keys: vec![name.to_owned()],
        args,
        plain: None,
        by_source: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_publish_command_is_replaceable() {
        let lease = Holder::Lease { token: "t".into() };
        let r = lease.release("n", 1, "", 0, 0).with_publish_command("spublish");
        assert_eq!(r.args, ["t", "spublish", "redisson_lock__channel:{n}", "0"]);
        let rl = Holder::Reentrant { owner: "o:1".into() };
        assert_eq!(
            rl.release("n", 1, "r", 2, 0)
                .with_publish_command("spublish")
                .args[2],
            "spublish"
        );
        assert_eq!(
            rl.abort("n", "r", 0).with_publish_command("spublish").args[1],
            "spublish"
        );
        assert_eq!(
            force_unlock("n", 7).with_publish_command("spublish").args,
            [
                "spublish",
                "redisson_lock__channel:{n}",
                "redisson_rwlock:{n}",
                "7"
            ]
        );
        assert_eq!(
            lease.extend("n", 5).with_publish_command("spublish").args,
            ["t", "5"]
        );
    }

    #[test]
    fn batch_and_admin_requests() {
        let a = Holder::Lease { token: "t".into() };
        let b = Holder::Reentrant { owner: "o:2".into() };
        let r = renew_batch(30000, [("x", &a), ("y", &b)]);
        assert_eq!(r.keys, ["x", "y"]);
        assert_eq!(r.args, ["30000", "Lt", "Ro:2"]);
        assert_eq!(
            force_unlock("x", 7).keys,
            ["x", "redisson_lock_queue:{x}", "redisson_lock_timeout:{x}"]
        );
        assert_eq!(force_unlock("x", 7).args[1], "redisson_lock__channel:{x}");
        assert_eq!(inspect("x", false, None).args, ["L"]);
        assert_eq!(inspect("x", true, None).args, ["R"]);
        assert_eq!(inspect("x", true, Some(&b)).args, ["Ro:2"]);
    }
}
