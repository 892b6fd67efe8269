//! Deployment warnings: conditions that do not stop a client but weaken what a lock
//! guarantees or how it performs (today: a `maxmemory-policy` that may evict lock keys, and a
//! user denied the unlock channels).
//!
//! Each warning is a `tracing` event at WARN level and, when the application gave one, a call
//! of its handler, which is how the bindings reach their language's channel (`warnings.warn`
//! in Python, `process.emitWarning` in Node, a callback or stderr in C). A client warns once
//! per node and condition, not on every reconnect.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// One warning about a node of the deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What it is about, stable for matching: `"eviction"` (a `maxmemory-policy` that may
    /// evict lock keys), `"pubsub"` (the user may not subscribe: waiters poll), `"renewal"`
    /// (a renewal not confirmed by the `sync_replicas` replicas) or `"release"` (a quorum
    /// release that did not reach this node; a majority released the lock).
    pub kind: &'static str,
    /// The node's address (`host:port`, never credentials).
    pub node: String,
    /// The full text, naming the node, the setting and what to do.
    pub message: String,
}

/// Called with every warning (from a runtime thread; it must not block).
pub type WarningHandler = Arc<dyn Fn(&Warning) + Send + Sync>;

/// A client's warnings: the application's handler and what was already said.
#[derive(Default)]
pub(crate) struct Warnings {
    handler: Option<WarningHandler>,
    said: Mutex<HashSet<(&'static str, String)>>,
}

impl Warnings {
    pub(crate) fn new(handler: Option<WarningHandler>) -> Self {
        Warnings {
            handler,
            said: Mutex::default(),
        }
    }

    /// Reports `warning` unless this client already reported its kind for its node.
    pub(crate) fn emit(&self, warning: Warning) {
        let first = self
            .said
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((warning.kind, warning.node.clone()));
        if !first {
            tracing::debug!(kind = warning.kind, node = %warning.node, "{}", warning.message);
            return;
        }
        tracing::warn!(kind = warning.kind, node = %warning.node, "{}", warning.message);
        if let Some(handler) = &self.handler {
            handler(&warning);
        }
    }
}

/// The eviction warning for `node` whose `maxmemory-policy` is `policy`, if it is not
/// `noeviction`.
pub(crate) fn eviction(node: &str, policy: &str) -> Option<Warning> {
    (policy != "noeviction").then(|| Warning {
        kind: "eviction",
        node: node.to_owned(),
        message: format!(
            "{node}: maxmemory-policy is {policy}, not noeviction: under memory pressure Redis may evict lock keys, and another client can then acquire a lock that is still held (set maxmemory-policy noeviction on servers that hold locks)"
        ),
    })
}

impl Warning {
    /// The warning (kind `"pubsub"`) for `node`, which refused a subscription to a lock's
    /// release channel with `error`, when `error` is that refusal (`NoPermission`: a user
    /// denied `SUBSCRIBE`); `None` for any other error. Waits still work then, by polling. For
    /// transports of a binding's own (the Node addon's sockets), which report it themselves.
    pub fn channel_denied(node: &str, error: &crate::Error) -> Option<Warning> {
        (error.kind() == crate::ErrorKind::NoPermission).then(|| Warning {
            kind: "pubsub",
            node: node.to_owned(),
            message: format!(
                "{node} refused a subscription to a lock's release channel ({}): waiters poll instead of being woken by the release, so hand-offs are slower and waiting costs more requests (grant SUBSCRIBE and the channels: see the ACL recipe in docs/deployments.md)",
                error.message()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_once_per_node_and_kind() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let w = Warnings::new(Some(Arc::new(move |w: &Warning| {
            s.lock().unwrap().push(w.clone())
        })));
        w.emit(eviction("h:1", "allkeys-lru").unwrap());
        w.emit(eviction("h:1", "allkeys-lru").unwrap());
        w.emit(eviction("h:2", "volatile-lru").unwrap());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen[0].message.contains("allkeys-lru"));
        assert!(eviction("h:1", "noeviction").is_none());
    }
}
