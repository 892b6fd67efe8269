//! Core errors as JavaScript `Error` objects.
//!
//! Every rejection and every throw of this module is a real `Error` (never a string), carrying
//! the same properties as the native addon's errors (shared/API.md, "Errors"):
//! - `name`: the class name the facade exports (`NotAcquiredError`, `LockLostError`, ...),
//! - `code`: the stable string from the core's `ErrorKind::js_code()` (`ERR_NOT_ACQUIRED`, ...),
//! - `status`: the stable number from `ErrorKind::code()` (the C `redlatch_status` value),
//! - `nodes`: for quorum errors, `[{ node, error }]` with `error` null where a node granted,
//! - `reason`: for `NotOwnedError` / `LockLostError`, the core's word (`expired`, `taken`,
//!   `deleted`, `never_held`); `null` on other errors.
//!
//! The JavaScript facade (`js/src/errors.mjs`) only swaps the prototype to its class of the
//! same name, so `instanceof` works and the stack stays the one made here.

use js_sys::{Array, Object, Reflect};
use redlatch::{Error, ErrorKind};
use wasm_bindgen::prelude::*;

/// The facade's class name for `kind` (ERR_REDIS and ERR_PANIC use the base class).
pub fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotAcquired => "NotAcquiredError",
        ErrorKind::NotOwned => "NotOwnedError",
        ErrorKind::LockLost => "LockLostError",
        ErrorKind::Quorum => "QuorumError",
        ErrorKind::Connection => "RedisConnectionError",
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::NoPermission => "NoPermissionError",
        ErrorKind::OutOfMemory => "OutOfMemoryError",
        ErrorKind::KeyConflict => "KeyConflictError",
        ErrorKind::WouldDeadlock => "WouldDeadlockError",
        _ => "LockError",
    }
}

fn set(target: &Object, key: &str, value: &JsValue) {
    // Defining a property on a fresh ordinary object cannot fail.
    let _ = Reflect::set(target, &JsValue::from_str(key), value);
}

/// A JS `Error` for a core error, with `name`, `code`, `status` and (quorum) `nodes`.
pub fn to_js(err: &Error) -> JsValue {
    let js = js_sys::Error::new(err.message());
    js.set_name(class_name(err.kind()));
    let obj: &Object = js.as_ref();
    set(obj, "code", &JsValue::from_str(err.kind().js_code()));
    set(obj, "status", &JsValue::from(err.code()));
    let reason = err.reason().map(|r| JsValue::from_str(r.as_str()));
    set(obj, "reason", &reason.unwrap_or(JsValue::NULL));
    if err.kind() == ErrorKind::Quorum {
        let nodes = Array::new();
        for n in err.nodes() {
            let entry = Object::new();
            set(&entry, "node", &JsValue::from_str(&n.node));
            let why = match &n.result {
                Ok(()) => JsValue::NULL,
                Err(why) => JsValue::from_str(why),
            };
            set(&entry, "error", &why);
            nodes.push(&entry);
        }
        set(obj, "nodes", &nodes);
    }
    js.into()
}

/// An `InvalidArgument` JS error raised by the binding itself.
pub fn invalid(message: impl Into<String>) -> JsValue {
    to_js(&Error::invalid(message))
}

/// Extension so core results convert in one call: `result.js()?`.
pub trait IntoJs<T> {
    /// Maps the core error, if any, to its JS `Error`.
    fn js(self) -> Result<T, JsValue>;
}

impl<T> IntoJs<T> for redlatch::Result<T> {
    fn js(self) -> Result<T, JsValue> {
        self.map_err(|e| to_js(&e))
    }
}

/// The text of a thrown or rejected JS value: `message` of an `Error`-like object, else
/// `String(value)`.
pub fn describe(value: &JsValue) -> String {
    if value.is_object() {
        if let Ok(m) = Reflect::get(value, &JsValue::from_str("message")) {
            if let Some(m) = m.as_string() {
                return m;
            }
        }
    }
    if let Some(s) = value.as_string() {
        return s;
    }
    js_string(value)
        .map(String::from)
        .unwrap_or_else(|_| format!("{value:?}"))
}

#[wasm_bindgen]
extern "C" {
    /// The global `String(value)` (throws for a Symbol).
    #[wasm_bindgen(js_name = String, catch)]
    fn js_string(value: &JsValue) -> Result<js_sys::JsString, JsValue>;
}
