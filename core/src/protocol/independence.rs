//! The rule that a quorum's nodes are independent servers, checked by server identity: the
//! builder refuses a `host:port` given twice ([`quorum::independent`](super::quorum::independent)),
//! but two URLs or labels can name one server in other ways (`localhost` and `127.0.0.1`, a
//! DNS alias, a forwarded port). Such a server would cast two votes: a majority could be that
//! one server, and an extend or `owned()` confirmed by it twice (a user trial: a second client
//! took the lock while the first was told it still held it). So each node of a quorum reports
//! the `run_id` of `INFO server` (random per server start, Redis and Valkey) when it connects
//! (native transports, the Node addon's sockets) or before its first call (the wasm entry's
//! host transports, through [`server_id`]), and a node that reaches a server another node
//! already reached is refused with `InvalidArgument`: it never votes. A server whose ACL
//! refuses `INFO` is not checked.

use super::request::Request;
use super::scripts;

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::Mutex;

/// The server each node of one quorum reached, by node label: shared by the quorum's
/// transports (a binding's own transports too: the Node addon's sockets), each of which calls
/// [`claim`](Self::claim) with [`RedisTransport::server_run_id`](crate::RedisTransport::server_run_id)'s
/// answer when it connects (or [`server_id`]'s, through a script).
#[derive(Debug, Default)]
pub struct QuorumServers {
    run_ids: Mutex<HashMap<String, String>>,
    /// Nodes whose last claim was refused, with the refusal's message (until a claim of
    /// theirs succeeds: a restarted server has a new `run_id`).
    refused: Mutex<HashMap<String, String>>,
}

impl QuorumServers {
    /// Records that node `label` reached the server with `run_id`.
    ///
    /// # Errors
    /// `InvalidArgument` when another node reached that server.
    pub fn claim(&self, label: &str, run_id: &str) -> Result<()> {
        let mut run_ids = self.run_ids.lock().unwrap_or_else(|p| p.into_inner());
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((other, _)) = run_ids.iter().find(|(l, id)| *l != label && *id == run_id) {
            let message = format!(
                "a quorum's nodes must be independent servers: {label} and {other} are the same server (INFO run_id)"
            );
            refused.insert(label.to_owned(), message.clone());
            return Err(Error::invalid(message));
        }
        refused.remove(label);
        run_ids.insert(label.to_owned(), run_id.to_owned());
        Ok(())
    }

    /// The refusal of node `label`'s last claim, while it stands: a quorum call refuses at
    /// once with it (`InvalidArgument`) instead of running without that node's vote.
    pub fn refusal(&self, label: &str) -> Option<Error> {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.get(label).map(|m| Error::invalid(m.clone()))
    }
}

/// The request that answers the server's `run_id` (nil when `INFO` has none), for transports
/// that only run scripts (the wasm entry's host transports).
pub fn server_id() -> Request {
    Request {
        script: &scripts::SERVER_ID,
        keys: Vec::new(),
        args: Vec::new(),
        plain: None,
        by_source: false,
    }
}

/// The `run_id` line of an `INFO server` reply.
#[cfg(any(feature = "native", test))]
pub(crate) fn run_id_of(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|line| line.strip_prefix("run_id:"))
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn a_server_reached_by_two_nodes_is_refused_for_the_second() {
        let servers = QuorumServers::default();
        servers.claim("127.0.0.1:7000", "aaa").unwrap();
        servers.claim("127.0.0.1:7001", "bbb").unwrap();
        // The same node reconnecting (or its server restarted with a new id) is fine.
        servers.claim("127.0.0.1:7000", "aaa").unwrap();
        servers.claim("127.0.0.1:7001", "ccc").unwrap();
        let err = servers.claim("localhost:7000", "aaa").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err
            .message()
            .contains("localhost:7000 and 127.0.0.1:7000 are the same server"));
    }

    #[test]
    fn reads_the_run_id_line() {
        let info = "# Server\r\nredis_version:7.0.15\r\nrun_id:0123abcd\r\ntcp_port:6379\r\n";
        assert_eq!(run_id_of(info), Some("0123abcd"));
        assert_eq!(run_id_of("# Server\r\n"), None);
    }
}
