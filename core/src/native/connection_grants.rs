//! A quorum node's acquire tries still running, so that the release of the hold a try grants
//! goes behind it on the same connection (`Request::follows_its_grant`).
//!
//! Why: a quorum acquire returns once a majority granted; the try on a node that did not
//! answer in time runs on in the background. Released meanwhile, the hold's release to that
//! node was sent on its own: both waited for the same new connection, the release went first
//! when it was made, and the late grant kept the node's key for the whole lease (a C trial of
//! stop 49, 7 of 7 runs with the node paused through both). A release now waits until each
//! try of its grant has a connection, then goes on that one, behind it.

use super::{Live, Reconnecting};
use crate::protocol::request::{AttemptMark, Request};
use event_listener::Event;
use std::sync::Mutex;

/// The acquire tries running on one node: each with its connection once it has one.
#[derive(Default)]
pub(crate) struct Running {
    tries: Mutex<Vec<Try>>,
    changed: Event,
    next_id: std::sync::atomic::AtomicU64,
}

struct Try {
    id: u64,
    mark: AttemptMark,
    live: Option<Live>,
}

/// An acquire try noted in [`Running`] until this is dropped.
pub(crate) struct GrantTry<'a> {
    running: &'a Running,
    id: u64,
}

impl GrantTry<'_> {
    /// The try is sent on `live`.
    pub(crate) fn sent_on(&self, live: &Live) {
        let mut tries = self.running.tries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = tries.iter_mut().find(|t| t.id == self.id) {
            t.live = Some(live.clone());
        }
        drop(tries);
        self.running.changed.notify(usize::MAX);
    }
}

impl Drop for GrantTry<'_> {
    fn drop(&mut self) {
        let mut tries = self.running.tries.lock().unwrap_or_else(|p| p.into_inner());
        tries.retain(|t| t.id != self.id);
        drop(tries);
        self.running.changed.notify(usize::MAX);
    }
}

impl Reconnecting {
    /// Notes `request` as a running acquire try when this is a quorum's node (`None`
    /// otherwise, or for other requests: a single node's acquire ends before its hold exists).
    pub(crate) fn grant_try(&self, request: &Request) -> Option<GrantTry<'_>> {
        self.settings.servers.as_ref()?;
        if request.is_undo() || request.follows_its_grant() {
            return None;
        }
        let mark = request.attempt_mark()?;
        let running = &self.grants;
        let id = running.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        running
            .tries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Try { id, mark, live: None });
        Some(GrantTry { running, id })
    }

    /// The connections the running tries of `release`'s grant were sent on, once none of
    /// them is still waiting for one (the caller bounds the wait: its network timeout).
    pub(crate) async fn grant_tries_of(&self, release: &Request) -> Vec<Live> {
        if self.settings.servers.is_none() || !release.follows_its_grant() {
            return Vec::new();
        }
        loop {
            let listener = self.grants.changed.listen();
            {
                let tries = self.grants.tries.lock().unwrap_or_else(|p| p.into_inner());
                let own: Vec<&Try> = tries
                    .iter()
                    .filter(|t| release.goes_behind(Some(&t.mark)))
                    .collect();
                if own.iter().all(|t| t.live.is_some()) {
                    return own.iter().filter_map(|t| t.live.clone()).collect();
                }
            }
            listener.await;
        }
    }
}
