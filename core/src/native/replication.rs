//! `sync_replicas`: after a grant (of any lock, a multi-lock, a semaphore's permits or a
//! permit), an extend or a watchdog renewal, `WAIT n timeout` on the
//! connection that wrote it, and too few acknowledgements make the write count as not done
//! (Redisson's `checkLockSyncedSlaves`).
//!
//! Why: Redis replicates asynchronously. A lock written to a master that fails before
//! replicating it is gone on the promoted replica, and another client acquires it while the
//! holder still believes it holds it (the failover double-ownership). With this option an
//! acquire is only reported once `n` replicas have it (otherwise it is rolled back and the
//! caller gets `NotAcquired`), and a renewal only moves the hold's validity once `n` replicas
//! have the new TTL, so a holder whose renewals stop reaching replicas is told it lost the
//! lock no later than the replicas' copy of the key can expire.
//!
//! `WAIT` waits for every earlier write of the connection (a multiplexed connection shares
//! one), so it never confirms less than asked; it may wait for more.

use crate::error::{Error, ErrorKind};
use crate::protocol::family::scripts as family;
use crate::protocol::family::{multi, permits, semaphore};
use crate::protocol::reply::{self, AcquireReply, OwnershipReply, Reply};
use crate::protocol::request::Request;
use crate::protocol::scripts;
use std::time::Duration;

/// How many replicas must acknowledge, and how long to wait for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncReplicas {
    /// Replicas that must acknowledge each grant and renewal (`WAIT numreplicas`), >= 1.
    pub replicas: u32,
    /// How long `WAIT` may block (default 1 s, Redisson's `slavesSyncTimeout`).
    pub timeout: Duration,
}

/// What `request`'s successful `reply` wrote that replicas must confirm, if anything: a grant,
/// an extend, or at least one renewal. Busy acquires, refusals and releases need no `WAIT`
/// (a lost release only leaves a key that expires with its lease).
pub(crate) fn write_to_confirm(request: &Request, reply: &Reply) -> Option<&'static str> {
    let script = request.script;
    let is = |s: &scripts::Script| std::ptr::eq(script, s);
    // The fair and read/write grants answer `{1, fence, holds}` too; their "wait" and
    // "refused" answers do not decode as a grant.
    let acquires = [
        &scripts::LEASE_ACQUIRE,
        &scripts::RLOCK_ACQUIRE,
        &family::FAIR_ACQUIRE,
        &family::RW_READ_ACQUIRE,
        &family::RW_WRITE_ACQUIRE,
    ];
    if acquires.into_iter().any(is) {
        return matches!(reply::decode_acquire(reply), Ok(AcquireReply::Acquired { .. }))
            .then_some("acquire");
    }
    // The rest of the family's grants (before stop 36 they were never confirmed: a user
    // trial found a multi-lock and a semaphore granted with no replica at all).
    let granted = if is(&family::MULTI_ACQUIRE) {
        matches!(multi::decode_acquire(reply), Ok(multi::AcquireReply::Acquired))
    } else if is(&family::SEMAPHORE_ACQUIRE) {
        matches!(
            semaphore::decode_acquire(reply),
            Ok(semaphore::AcquireReply::Acquired { .. })
        )
    } else if is(&family::PERMIT_ACQUIRE) {
        matches!(
            permits::decode_acquire(reply),
            Ok(permits::AcquireReply::Acquired { .. })
        )
    } else {
        false
    };
    if granted {
        return Some("acquire");
    }
    if is(&family::PERMIT_EXTEND) {
        return permits::decode_extend(reply).unwrap_or(false).then_some("extend");
    }
    if is(&scripts::LEASE_EXTEND) || is(&scripts::RLOCK_EXTEND) || is(&family::RW_READ_EXTEND) {
        return matches!(reply::decode_extend(reply), Ok(OwnershipReply::Done)).then_some("extend");
    }
    if is(&scripts::RENEW_BATCH) {
        let renewed = reply::decode_renew_batch(reply, request.keys.len())
            .is_ok_and(|f| f.contains(&OwnershipReply::Done));
        return renewed.then_some("renewal");
    }
    None
}

/// The error for a write that only `acks` of the wanted replicas confirmed: `NotAcquired`
/// for an acquire (the driver rolls the grant back), `Connection` for an extend or renewal
/// (the hold keeps its earlier validity; the watchdog retries).
pub(crate) fn too_few(what: &str, request: &Request, acks: i64, sync: SyncReplicas, node: &str) -> Error {
    let name = request.keys.first().map(String::as_str).unwrap_or("?");
    let detail = format!(
        "{node}: only {acks} of {} replica(s) confirmed the {what} of {name:?} within {} ms (sync_replicas)",
        sync.replicas,
        sync.timeout.as_millis()
    );
    if what == "acquire" {
        Error::new(ErrorKind::NotAcquired, format!("{detail}; not acquired"))
    } else {
        Error::connection(format!("{detail}; the lease is not known to survive a failover"))
    }
}

/// The `WAIT` command for `sync`.
pub(crate) fn wait_command(sync: SyncReplicas) -> redis::Cmd {
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(sync.replicas).arg(sync.timeout.as_millis() as u64);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::request::{self, Holder};

    #[test]
    fn only_grants_and_renewals_wait() {
        let h = Holder::Lease { token: "t".into() };
        let acquire = h.acquire("n", 100, None, "", 0);
        let granted = Reply::Array(vec![Reply::Int(1), Reply::Int(0)]);
        let busy = Reply::Array(vec![Reply::Int(0), Reply::Int(50)]);
        assert_eq!(write_to_confirm(&acquire, &granted), Some("acquire"));
        assert_eq!(
            write_to_confirm(&acquire, &Reply::Bytes(b"OK".to_vec())),
            Some("acquire")
        );
        assert_eq!(write_to_confirm(&acquire, &busy), None);
        assert_eq!(
            write_to_confirm(&h.extend("n", 100), &Reply::Int(1)),
            Some("extend")
        );
        assert_eq!(write_to_confirm(&h.extend("n", 100), &Reply::Int(0)), None);
        assert_eq!(
            write_to_confirm(&h.release("n", 1, "", 0, 0), &Reply::Int(1)),
            None
        );
        let batch = request::renew_batch(100, [("a", &h), ("b", &h)]);
        assert_eq!(
            write_to_confirm(&batch, &Reply::Array(vec![Reply::Int(0), Reply::Int(1)])),
            Some("renewal")
        );
        assert_eq!(
            write_to_confirm(&batch, &Reply::Array(vec![Reply::Int(0), Reply::Int(0)])),
            None
        );
    }

    #[test]
    fn too_few_acks_is_not_acquired_for_an_acquire() {
        let h = Holder::Lease { token: "t".into() };
        let sync = SyncReplicas {
            replicas: 1,
            timeout: Duration::from_millis(200),
        };
        let e = too_few("acquire", &h.acquire("n", 1, None, "", 0), 0, sync, "h:1");
        assert_eq!(e.kind(), ErrorKind::NotAcquired);
        assert!(e.message().contains("only 0 of 1 replica(s)"), "{e}");
        assert_eq!(
            too_few("renewal", &h.extend("n", 1), 0, sync, "h:1").kind(),
            ErrorKind::Connection
        );
    }
}
