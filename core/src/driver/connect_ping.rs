//! The `PING` a client's connect sends each node, shared by the native builder and the
//! bindings' own engines (the Node addon's local engine), so that both ride out the same
//! faults.

use super::transport::Runtime;
use crate::error::{ErrorKind, Result};
use std::future::Future;
use std::time::Duration;

/// Runs `ping` (a node's connect check), trying again twice (50 and 100 ms later) after a
/// `Connection` error that is not permanent and came within half of `network_timeout`: a
/// connection closed as it was made (`CLIENT KILL`, a restart, a full `maxclients`) failed
/// the whole connect, which calls ride out (a Rust user trial of stop 49: 31 of 600 connects
/// during a `CLIENT KILL` loop, said to be a TLS port). A refusal no retry cures (a wrong
/// password, TLS settings) and a node that did not answer in time are reported at once, so a
/// plain-text client on a TLS port still fails quickly, saying so. The caller bounds the
/// whole (the tries take at most three network timeouts).
pub async fn ping_at_connect<F, Fut>(
    runtime: &dyn Runtime,
    network_timeout: Duration,
    mut ping: F,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let mut pause = Duration::from_millis(50);
    let mut tries_left = 2;
    loop {
        let started = runtime.now();
        match ping().await {
            Err(e)
                if tries_left > 0
                    && e.kind() == ErrorKind::Connection
                    && !e.is_permanent()
                    && runtime.now().saturating_sub(started) < network_timeout / 2 =>
            {
                tries_left -= 1;
                runtime.sleep(pause).await;
                pause *= 2;
            }
            other => return other,
        }
    }
}
