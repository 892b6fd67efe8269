//! The topology poll of a [`ClusterTransport`]: once a second (Redisson's `scanInterval`
//! default) it asks one node for `CLUSTER SLOTS`, and when the masters serving the slots
//! changed it makes the transport connect again ([`ClusterTransport::forget`]).
//!
//! Why: redis-rs' cluster connection re-reads the slots after a redirect or a refused
//! connection, but a master that stops answering without closing its connections (a paused
//! process, a network partition) keeps its slots in that map until a call sent there waits
//! out the network timeout. The cluster promotes its replica meanwhile; polled, the client
//! sees the promotion within about a second and no call waits on the silent node (a holder's
//! renewal that waited so could lose a lock whose watchdog timeout is short; stop 48 left it).
//!
//! Which node: the one that answered last, else the next of the last answer's nodes in turn,
//! each given at most a second, so a silent node costs one try per tick, not every tick. A
//! node that has not heard of a failover yet may answer with the masters the client moved
//! away from; that answer is not taken for a change (it would connect again twice).

use super::cluster::ClusterTransport;
use super::cluster_connect::Connected;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::Value;
use std::sync::Weak;
use std::time::Duration;

/// How often the slots are read (Redisson's `scanInterval` default, 1000 ms).
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// One answer to `CLUSTER SLOTS`: the slot ranges with their masters, and every node named.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SlotMap {
    /// (first slot, last slot, master "host:port"), sorted by slot.
    masters: Vec<(i64, i64, String)>,
    /// Every node the answer names (masters and replicas), in its order, without repeats.
    nodes: Vec<(String, u16)>,
}

impl SlotMap {
    /// Reads a `CLUSTER SLOTS` reply: `[[first, last, [host, port, ...], [replica...]...]...]`.
    pub(crate) fn parse(reply: &Value) -> Option<SlotMap> {
        let Value::Array(ranges) = reply else { return None };
        let mut map = SlotMap::default();
        for range in ranges {
            let Value::Array(parts) = range else { return None };
            let (Some(Value::Int(first)), Some(Value::Int(last))) = (parts.first(), parts.get(1)) else {
                return None;
            };
            let mut nodes = parts.iter().skip(2).map(node_address);
            let master = nodes.next()??;
            map.masters
                .push((*first, *last, format!("{}:{}", master.0, master.1)));
            for node in std::iter::once(Some(master)).chain(nodes).flatten() {
                if !map.nodes.contains(&node) {
                    map.nodes.push(node);
                }
            }
        }
        map.masters.sort();
        Some(map)
    }
}

/// A node's host and port in a `CLUSTER SLOTS` range (`[host, port, id, ...]`).
fn node_address(node: &Value) -> Option<(String, u16)> {
    let Value::Array(fields) = node else { return None };
    let host = match fields.first()? {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => return None,
    };
    let Value::Int(port) = fields.get(1)? else {
        return None;
    };
    Some((host, u16::try_from(*port).ok()?))
}

/// What the poll knows between ticks.
#[derive(Default)]
struct Seen {
    /// The masters the current connection was checked against.
    current: Option<SlotMap>,
    /// The masters of the map before the last change (a lagging node's answer).
    replaced: Option<SlotMap>,
    /// Where the next ask starts in `current.nodes` (the node that answered last).
    next: usize,
}

impl Seen {
    /// Takes `answer` in; `true` when its masters are new (neither the current ones nor
    /// those the client moved away from).
    fn changed_by(&mut self, answer: SlotMap) -> bool {
        let Some(current) = &self.current else {
            self.current = Some(answer);
            return false;
        };
        if current.masters == answer.masters {
            // The nodes may have changed (a replica added): asked in turn from now on.
            self.current = Some(answer);
            return false;
        }
        if self
            .replaced
            .as_ref()
            .is_some_and(|r| r.masters == answer.masters)
        {
            return false;
        }
        self.replaced = self.current.replace(answer);
        true
    }
}

/// Polls the slots of `transport` until it is dropped (the client closed or gone).
pub(crate) async fn poll(transport: Weak<ClusterTransport>) {
    let mut seen = Seen::default();
    loop {
        let Some((cell, (conn, _), timeout)) = transport.upgrade().and_then(|t| {
            let cell = t.cell();
            let made: Connected = cell.made()?;
            Some((cell, made, t.network_timeout().min(POLL_INTERVAL)))
        }) else {
            if transport.strong_count() == 0 {
                return;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
            continue;
        };
        if let Some(answer) = ask(conn, &mut seen, timeout).await {
            if seen.changed_by(answer) {
                match transport.upgrade() {
                    Some(t) => t.topology_changed(&cell),
                    None => return,
                }
            }
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `CLUSTER SLOTS` from the node that answered last, else from the next nodes in turn (each
/// given `timeout`); a random node before any answer. `None` when none answered.
async fn ask(conn: ClusterConnection, seen: &mut Seen, timeout: Duration) -> Option<SlotMap> {
    let nodes = seen.current.as_ref().map(|m| m.nodes.clone()).unwrap_or_default();
    let tries = nodes.len().max(1);
    for i in 0..tries {
        let at = (seen.next + i) % tries;
        let route = match nodes.get(at) {
            Some((host, port)) => SingleNodeRoutingInfo::ByAddress {
                host: host.clone(),
                port: *port,
            },
            None => SingleNodeRoutingInfo::Random,
        };
        let mut conn = conn.clone();
        let mut slots = redis::cmd("CLUSTER");
        slots.arg("SLOTS");
        let asked = conn.route_command(slots, RoutingInfo::SingleNode(route));
        match tokio::time::timeout(timeout, asked).await {
            Ok(Ok(reply)) => {
                seen.next = at;
                return SlotMap::parse(&reply);
            }
            Ok(Err(e)) => tracing::debug!(error = %e, "CLUSTER SLOTS refused"),
            Err(_) => tracing::debug!(node = at, "no answer to CLUSTER SLOTS"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(host: &str, port: i64) -> Value {
        Value::Array(vec![
            Value::BulkString(host.as_bytes().to_vec()),
            Value::Int(port),
            Value::BulkString(b"id".to_vec()),
        ])
    }

    fn slots(ranges: &[(i64, i64, &[i64])]) -> SlotMap {
        let ranges = ranges.iter().map(|(first, last, ports)| {
            let nodes = ports.iter().map(|p| node("127.0.0.1", *p));
            Value::Array(
                [Value::Int(*first), Value::Int(*last)]
                    .into_iter()
                    .chain(nodes)
                    .collect(),
            )
        });
        SlotMap::parse(&Value::Array(ranges.collect())).unwrap()
    }

    #[test]
    fn an_answer_is_read_as_masters_by_slot_and_every_node_once() {
        let map = slots(&[(8192, 16383, &[7001, 7003]), (0, 8191, &[7000, 7002])]);
        assert_eq!(map.masters[0], (0, 8191, "127.0.0.1:7000".to_owned()));
        assert_eq!(map.masters[1], (8192, 16383, "127.0.0.1:7001".to_owned()));
        let ports: Vec<u16> = map.nodes.iter().map(|(_, p)| *p).collect();
        assert_eq!(ports, [7001, 7003, 7000, 7002]);
        assert!(SlotMap::parse(&Value::Int(1)).is_none());
        assert!(SlotMap::parse(&Value::Array(vec![Value::Array(vec![Value::Int(0)])])).is_none());
    }

    #[test]
    fn a_promotion_is_a_change_once_and_a_lagging_answer_is_not() {
        let before = slots(&[(0, 16383, &[7000, 7001])]);
        let after = slots(&[(0, 16383, &[7001])]);
        let mut seen = Seen::default();
        assert!(
            !seen.changed_by(before.clone()),
            "the first answer is the baseline"
        );
        assert!(!seen.changed_by(before.clone()));
        assert!(
            seen.changed_by(after.clone()),
            "the promoted replica serves the slots"
        );
        assert!(!seen.changed_by(after.clone()));
        assert!(!seen.changed_by(before), "a node that has not heard of it yet");
        assert!(!seen.changed_by(after));
        assert!(seen.changed_by(slots(&[(0, 16383, &[7002])])));
    }
}
