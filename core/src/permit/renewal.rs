//! The watchdog's renewal of a [`Permit`](super::Permit) taken without a lease: every third
//! of the client's watchdog timeout, until it is released, dropped, found gone or its lease
//! ran out unrenewed.

use super::held::PermitState;
use crate::driver::waiting;
use crate::driver::Engine;
use crate::protocol::family::permits;
use crate::protocol::family::PUBLISH;
use crate::protocol::timing;
use futures::future::select;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Starts renewing a watchdog-mode permit unless a renewal task runs: on the renewer's runtime
/// when the client has one (`Client::renew_through`), as the watchdog renews holds, so a
/// blocked Node event loop does not lose its permits (a user trial of stop 38: another
/// process got the only permit).
pub(super) fn start_renewals(state: &Arc<PermitState>, first: Renew) {
    if state.renewing.swap(true, Ordering::AcqRel) {
        return;
    }
    let renewals = state.engine.renewals();
    renewals
        .runtime
        .spawn(Box::pin(renew(Arc::downgrade(state), renewals.clone(), first)));
}

/// When a renewal task's first renewal goes out.
#[derive(Clone, Copy)]
pub(super) enum Renew {
    /// A permit just acquired: a period from now.
    AfterAPeriod,
    /// Renewals a refused release interrupted: the last one may be most of a period old.
    AtOnce,
}

/// Renews a watchdog-mode permit every third of the watchdog timeout until it is released,
/// dropped or found gone, or its client closed (or abandoned), through `renewals` (the client's
/// engine, or its renewer's). Holds it weakly: a dropped permit is not kept alive.
async fn renew(state: Weak<PermitState>, renewals: Arc<Engine>, first: Renew) {
    renew_while_held(&state, &renewals, first).await;
    if let Some(strong) = state.upgrade() {
        strong.renewing.store(false, Ordering::Release);
        // A release refused meanwhile (nothing changed) found this task still running.
        let held = !strong.ended.load(Ordering::Acquire) && !strong.lost.load(Ordering::Acquire);
        if held && !strong.engine.registry.is_closed() {
            start_renewals(&strong, Renew::AtOnce);
        }
    }
}

async fn renew_while_held(state: &Weak<PermitState>, renewals: &Arc<Engine>, first: Renew) {
    let mut pause = match first {
        Renew::AfterAPeriod => None,
        Renew::AtOnce => Some(Duration::ZERO),
    };
    loop {
        let Some(strong) = state.upgrade() else { return };
        let engine = strong.engine.clone();
        let timeout = engine.config.watchdog_timeout;
        let period = timing::renewal_period(timeout);
        let listener = strong.stop.listen();
        if strong.ended.load(Ordering::Acquire) {
            return;
        }
        drop(strong);
        let wait = pause.unwrap_or(period);
        if !wait.is_zero() {
            let _ = select(renewals.runtime.sleep(wait), listener).await;
        }
        let Some(strong) = state.upgrade() else { return };
        if strong.ended.load(Ordering::Acquire) || engine.registry.is_closed() {
            return;
        }
        let sent = strong.engine.now();
        let now = renewals.runtime.wall_clock_ms();
        let expiry = permits::expiry(now, Some(timeout.as_millis() as u64));
        let outcome = match permits::extend(&strong.name, &strong.id, expiry, now, PUBLISH) {
            Ok(request) => waiting::call(renewals, &request)
                .await
                .and_then(|r| permits::decode_extend(&r)),
            Err(e) => Err(e),
        };
        match outcome {
            Ok(true) => {
                let until = super::held::valid_until_ms(sent, timeout);
                strong.valid_until_ms.fetch_max(until, Ordering::AcqRel);
                pause = None;
            }
            Ok(false) => {
                tracing::warn!(semaphore = %strong.name, "permit renewal found it no longer held");
                strong.lost.store(true, Ordering::Release);
                return;
            }
            Err(e) if strong.lease_ended() => {
                // Redis gives it back at its expiry: another client may hold it now.
                tracing::warn!(semaphore = %strong.name, error = %e, "permit lost: its renewals failed until its lease ended");
                strong.lost.store(true, Ordering::Release);
                return;
            }
            Err(e) => {
                tracing::debug!(semaphore = %strong.name, error = %e, "permit renewal failed; retrying");
                pause = Some((period / 4).min(Duration::from_secs(1)));
            }
        }
    }
}
