//! The core's [`Runtime`] on the JS host: a monotonic clock, timers and `spawn_local`.
//!
//! - **Clock**: `performance.now()` (monotonic, ms since the time origin) wherever it exists:
//!   Node, browsers, Deno, workerd. Without it, `Date.now()` clamped so it never goes
//!   backwards (a wall clock set back would otherwise stretch leases). In workerd both only
//!   advance across I/O, which is all the lock logic needs: its deadlines are checked after
//!   replies and timers.
//! - **Sleep**: `setTimeout`, cleared when the future is dropped (the core races every Redis
//!   call against a timeout, so most timers are dropped, not fired). Delays over the 2^31 - 1 ms
//!   `setTimeout` limit are slept in chunks, because larger values fire at once. Node timers
//!   are `unref()`ed: neither the watchdog nor a lease deadline keeps a process alive (the
//!   facade keeps the event loop alive only while a call the program awaits is pending).
//! - **Spawn**: `wasm_bindgen_futures::spawn_local` (the watchdog, background releases).

use js_sys::{Function, Reflect};
use redlatch::{BoxFut, Runtime};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use wasm_bindgen::prelude::*;

/// Largest delay `setTimeout` honours, ms (2^31 - 1); larger values fire immediately.
pub const MAX_TIMER_MS: f64 = 2_147_483_647.0;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: f64) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(handle: &JsValue);
}

enum Clock {
    /// `performance.now` and its receiver.
    Performance { this: JsValue, now: Function },
    /// `Date.now`, clamped to be monotonic.
    Date,
}

/// Time, timers and tasks from the JS host.
pub struct JsRuntime {
    clock: Clock,
    /// The largest reading so far, ms: readings never go backwards.
    last_ms: Cell<f64>,
}

impl std::fmt::Debug for JsRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clock = match self.clock {
            Clock::Performance { .. } => "performance.now",
            Clock::Date => "Date.now",
        };
        f.debug_struct("JsRuntime").field("clock", &clock).finish()
    }
}

impl Default for JsRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl JsRuntime {
    /// Picks `performance.now()` when the host has it, else `Date.now()`.
    pub fn new() -> JsRuntime {
        let performance =
            Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).unwrap_or(JsValue::UNDEFINED);
        let now = if performance.is_object() {
            Reflect::get(&performance, &JsValue::from_str("now"))
                .ok()
                .and_then(|f| f.dyn_into::<Function>().ok())
        } else {
            None
        };
        let clock = match now {
            Some(now) => Clock::Performance {
                this: performance,
                now,
            },
            None => Clock::Date,
        };
        JsRuntime {
            clock,
            last_ms: Cell::new(0.0),
        }
    }

    /// `true` when the clock is `performance.now()` (diagnostics and tests).
    pub fn uses_performance_now(&self) -> bool {
        matches!(self.clock, Clock::Performance { .. })
    }

    /// The current reading in ms, never lower than an earlier one.
    pub fn now_ms(&self) -> f64 {
        let raw = match &self.clock {
            Clock::Performance { this, now } => now
                .call0(this)
                .ok()
                .and_then(|v| v.as_f64())
                .unwrap_or_else(js_sys::Date::now),
            Clock::Date => js_sys::Date::now(),
        };
        let t = if raw.is_finite() {
            raw.max(self.last_ms.get())
        } else {
            self.last_ms.get()
        };
        self.last_ms.set(t);
        t
    }
}

impl Runtime for JsRuntime {
    fn now(&self) -> Duration {
        Duration::from_secs_f64(self.now_ms().max(0.0) / 1000.0)
    }

    fn sleep(&self, duration: Duration) -> BoxFut<'static, ()> {
        Box::pin(sleep(duration))
    }

    fn spawn(&self, task: BoxFut<'static, ()>) {
        wasm_bindgen_futures::spawn_local(task);
    }

    fn wall_clock_ms(&self) -> u64 {
        js_sys::Date::now().max(0.0) as u64
    }
}

/// Sleeps for `duration` on host timers (rounded up to whole ms; chunked past 2^31 - 1 ms).
pub async fn sleep(duration: Duration) {
    let mut left = (duration.as_secs_f64() * 1000.0).ceil();
    loop {
        let chunk = left.min(MAX_TIMER_MS);
        Timer::new(chunk).await;
        left -= chunk;
        if left <= 0.0 {
            break;
        }
    }
}

#[derive(Default)]
struct TimerState {
    fired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

/// One `setTimeout`, cleared on drop unless it fired.
struct Timer {
    state: Rc<TimerState>,
    handle: JsValue,
    // Kept alive until the timer fires or is cleared; dropping it earlier would make the
    // host call a freed closure.
    _callback: Closure<dyn FnMut()>,
}

impl Timer {
    fn new(ms: f64) -> Timer {
        let state = Rc::new(TimerState::default());
        let shared = state.clone();
        let callback = Closure::<dyn FnMut()>::new(move || {
            shared.fired.set(true);
            if let Some(waker) = shared.waker.borrow_mut().take() {
                waker.wake();
            }
        });
        let handle = set_timeout(callback.as_ref().unchecked_ref(), ms);
        unref(&handle);
        Timer {
            state,
            handle,
            _callback: callback,
        }
    }
}

/// Node's `Timeout.unref()`: the timer alone does not keep the process alive. Browsers and
/// workerd return a number, which has no `unref`.
fn unref(handle: &JsValue) {
    if !handle.is_object() {
        return;
    }
    if let Ok(f) = Reflect::get(handle, &JsValue::from_str("unref")) {
        if let Some(f) = f.dyn_ref::<Function>() {
            let _ = f.call0(handle);
        }
    }
}

impl Future for Timer {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.state.fired.get() {
            return Poll::Ready(());
        }
        *self.state.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if !self.state.fired.get() {
            clear_timeout(&self.handle);
        }
    }
}
