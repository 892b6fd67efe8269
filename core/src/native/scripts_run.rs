//! [`ScriptsRun`]: which scripts one connection has run, so that the first call of each on
//! it goes out by source (`EVAL`) and later ones by digest (`EVALSHA`).
//!
//! Why (stop 35's N2): a new connection may reach a server whose script cache is empty (a
//! fresh server, a restart). An `EVALSHA` sent there is answered `NOSCRIPT` and must be sent
//! again as `EVAL`; when the node is paused or slow past the call's timeout, that answer comes
//! after the call gave up, nothing sends the `EVAL`, and the request never applies. For a
//! scope-end release whose background retries end with its latch, that left a semaphore's
//! permit taken for good. An `EVAL` queued on the connection applies whenever the node runs
//! it. A cache emptied under a live connection (`SCRIPT FLUSH`) still takes the `NOSCRIPT`
//! round trip: the connection cannot know.

use crate::protocol::scripts::Script;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The scripts a connection has run (or sent by source), compared by address: every
/// [`Script`] is a `static`. A few dozen at most, so a list.
#[derive(Default, Debug)]
pub struct ScriptsRun {
    seen: Mutex<Vec<usize>>,
    /// A script was answered without an error here (see [`ScriptsRun::may_go_plain`]).
    allowed: AtomicBool,
    /// The user may not run `EVALSHA` here: scripts go by source (see
    /// [`evalsha_refused`]).
    evalsha_denied: AtomicBool,
}

/// Whether `e` refuses the `EVALSHA` command itself ([`crate::Error::refuses_evalsha`]).
pub(crate) fn evalsha_refused(e: &redis::RedisError) -> bool {
    e.code() == Some("NOPERM") && super::redis_calls::map_error(e, &[]).refuses_evalsha()
}

fn address(script: &'static Script) -> usize {
    std::ptr::from_ref(script) as usize
}

impl ScriptsRun {
    /// None run yet (a new connection).
    pub fn new() -> ScriptsRun {
        ScriptsRun::default()
    }

    /// Whether `script` has not gone out on this connection yet.
    pub(crate) fn is_new(&self, script: &'static Script) -> bool {
        let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        !seen.contains(&address(script))
    }

    /// Records that the node has `script` in its cache (an `EVAL` of it was answered).
    pub(crate) fn ran(&self, script: &'static Script) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.contains(&address(script)) {
            seen.push(address(script));
        }
    }

    /// Records a script's reply that was no error: this user may run scripts.
    pub(crate) fn answered_ok(&self) {
        if !self.allowed.load(Ordering::Relaxed) {
            self.allowed.store(true, Ordering::Relaxed);
        }
    }

    /// Records that this user may not run `EVALSHA` here.
    pub(crate) fn deny_evalsha(&self) {
        self.evalsha_denied.store(true, Ordering::Relaxed);
    }

    /// Whether scripts must go by source here.
    pub(crate) fn evalsha_denied(&self) -> bool {
        self.evalsha_denied.load(Ordering::Relaxed)
    }

    /// Whether a request's plain form (`Request::plain`) may stand in for its script: once a
    /// script ran here without an error. Until then requests go as scripts, so a user denied
    /// `EVAL` is refused at its first lease acquire (`NoPermission`), as at every other call,
    /// instead of taking a lock with a plain `SET NX PX` that it can then neither renew nor
    /// release (a user trial of stop 43: such a hold was reported lost as "expired").
    pub(crate) fn may_go_plain(&self) -> bool {
        self.allowed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::scripts::{LEASE_ACQUIRE, LEASE_RELEASE};

    #[test]
    fn each_script_is_new_until_it_ran_on_this_connection() {
        let (one, other) = (ScriptsRun::new(), ScriptsRun::new());
        assert!(one.is_new(&LEASE_ACQUIRE));
        one.ran(&LEASE_ACQUIRE);
        one.ran(&LEASE_ACQUIRE);
        assert!(!one.is_new(&LEASE_ACQUIRE));
        assert!(one.is_new(&LEASE_RELEASE), "another script");
        assert!(other.is_new(&LEASE_ACQUIRE), "another connection");
    }
}
