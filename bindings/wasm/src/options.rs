//! Integer-millisecond durations and client options, checked as shared/API.md says for Node:
//! integers in `[1, 2^53 - 1]` ms (a wait may be 0; `Infinity` means forever). Anything else
//! is an `InvalidArgumentError` before anything reaches Redis.
//!
//! The facade (`js/src/args.mjs`) checks types and option names first with the same
//! messages; these checks guard the exported classes when they are used directly.

use crate::error::invalid;
use js_sys::{Object, Reflect};
use redlatch::protocol::timing::MAX_DURATION_MS;
use redlatch::Config;
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};

/// Client option names (all integer ms).
pub const CLIENT_OPTIONS: [&str; 4] = [
    "watchdogTimeoutMs",
    "networkTimeoutMs",
    "nodeTimeoutMs",
    "pollIntervalMs",
];

/// Checks a duration in ms: an integer, not negative, > 0 unless `allow_zero`, at most
/// 2^53 - 1.
///
/// # Errors
/// `InvalidArgumentError` describing the first rule broken.
pub fn millis(what: &str, value: f64, allow_zero: bool) -> Result<u64, JsValue> {
    if value.is_nan() {
        return Err(invalid(format!(
            "{what} must be a number of milliseconds, not NaN"
        )));
    }
    if value < 0.0 {
        return Err(invalid(format!("{what} must not be negative (got {value})")));
    }
    if value == 0.0 && !allow_zero {
        return Err(invalid(format!("{what} must be greater than zero")));
    }
    if value > MAX_DURATION_MS as f64 {
        return Err(invalid(format!(
            "{what} of {value} ms exceeds the maximum of {MAX_DURATION_MS} ms (2^53 - 1)"
        )));
    }
    if value.fract() != 0.0 {
        return Err(invalid(format!(
            "{what} must be an integer number of milliseconds (got {value})"
        )));
    }
    Ok(value as u64)
}

/// A lease in ms (> 0) as a `Duration`.
///
/// # Errors
/// As [`millis`].
pub fn lease(value: f64) -> Result<Duration, JsValue> {
    millis("leaseMs", value, false).map(Duration::from_millis)
}

/// A wait: `None` or `Infinity` = forever, else integer ms >= 0.
///
/// # Errors
/// As [`millis`].
pub fn wait(value: Option<f64>) -> Result<Option<Duration>, JsValue> {
    match value {
        None => Ok(None),
        Some(v) if v == f64::INFINITY => Ok(None),
        Some(v) => millis("waitMs", v, true).map(|ms| Some(Duration::from_millis(ms))),
    }
}

/// The core [`Config`] from `{ watchdogTimeoutMs, networkTimeoutMs, nodeTimeoutMs,
/// pollIntervalMs }` (each optional; `undefined`/`null` options = defaults).
///
/// # Errors
/// `InvalidArgumentError` for a non-object, an unknown key or a bad duration.
pub fn client_config(options: &JsValue) -> Result<Config, JsValue> {
    let mut config = Config::default();
    if options.is_undefined() || options.is_null() {
        return Ok(config);
    }
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Err(invalid("client options must be an object"));
    }
    for key in Object::keys(options.unchecked_ref::<Object>()).iter() {
        let key = key.as_string().unwrap_or_default();
        if !CLIENT_OPTIONS.contains(&key.as_str()) {
            return Err(invalid(format!(
                "unknown option {key:?} in client options (expected one of: {})",
                CLIENT_OPTIONS.join(", ")
            )));
        }
    }
    for key in CLIENT_OPTIONS {
        let value = Reflect::get(options, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
        if value.is_undefined() {
            continue;
        }
        let Some(ms) = value.as_f64() else {
            return Err(invalid(format!("{key} must be a number of milliseconds")));
        };
        let d = Duration::from_millis(millis(key, ms, false)?);
        match key {
            "watchdogTimeoutMs" => config.watchdog_timeout = d,
            "networkTimeoutMs" => config.network_timeout = d,
            "nodeTimeoutMs" => config.node_timeout = Some(d),
            _ => config.poll_interval = d,
        }
    }
    Ok(config)
}

/// A fresh reentrant owner number from the core's one process-wide owner space
/// (`redlatch::new_owner`: 1 ..= 2^53 - 1, exact as a JavaScript number), shared with the
/// owners the core picks itself, so none collide. The facade numbers its owners with it
/// (`lib/facade/owner.mjs`).
#[wasm_bindgen::prelude::wasm_bindgen(js_name = newOwner)]
pub fn new_owner() -> f64 {
    redlatch::new_owner() as f64
}
