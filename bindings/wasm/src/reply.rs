//! JS reply values -> the core's [`Reply`].
//!
//! Host clients disagree on how a Lua reply looks in JavaScript: node-redis and ioredis give
//! `number`, `string`, `null` and arrays; RESP3 clients may give `bigint` or booleans; HTTP
//! clients may give strings for everything (the core accepts numeric strings) and binary-safe
//! clients give `Uint8Array`/`Buffer`. All of them map here, once; anything else is an
//! `ErrorKind::Redis` error ("unexpected reply"), never a guess.

use js_sys::{Array, Uint8Array};
use redlatch::protocol::reply::Reply;
use redlatch::{Error, ErrorKind, Result};
use wasm_bindgen::{JsCast, JsValue};

/// Deepest nesting accepted; our scripts reply with at most one level of arrays.
const MAX_DEPTH: u32 = 8;

/// Largest magnitude a JS number may have and still be an exact integer (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Converts a reply value resolved by a transport's `eval`/`evalsha`.
///
/// # Errors
/// `Redis` for values no Redis reply maps to (objects, functions, fractions, symbols), and
/// for an `Error` nested in an array (how ioredis reports a nested error reply).
pub fn from_js(value: &JsValue) -> Result<Reply> {
    convert(value, 0)
}

fn unexpected(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Redis,
        format!("unexpected reply from the transport: {what}"),
    )
}

fn convert(value: &JsValue, depth: u32) -> Result<Reply> {
    if depth > MAX_DEPTH {
        return Err(unexpected("arrays nested too deeply"));
    }
    if value.is_null() || value.is_undefined() {
        return Ok(Reply::Nil);
    }
    // RESP3 booleans; a Lua `false` is nil in RESP2.
    if let Some(b) = value.as_bool() {
        return Ok(if b { Reply::Int(1) } else { Reply::Nil });
    }
    if let Some(n) = value.as_f64() {
        if n.fract() == 0.0 && n.abs() <= EXACT {
            return Ok(Reply::Int(n as i64));
        }
        return Err(unexpected(format_args!("the number {n} (not an exact integer)")));
    }
    if value.is_bigint() {
        return i64::try_from(value.clone())
            .map(Reply::Int)
            .map_err(|_| unexpected("a bigint outside the 64-bit range"));
    }
    if let Some(s) = value.as_string() {
        return Ok(Reply::Bytes(s.into_bytes()));
    }
    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        return Ok(Reply::Bytes(bytes.to_vec()));
    }
    if Array::is_array(value) {
        let items: Array = value.clone().unchecked_into();
        return items
            .iter()
            .map(|item| convert(&item, depth + 1))
            .collect::<Result<Vec<_>>>()
            .map(Reply::Array);
    }
    if value.is_instance_of::<js_sys::Error>() {
        return Err(Error::new(ErrorKind::Redis, crate::error::describe(value)));
    }
    Err(unexpected(format_args!("a value of type {}", type_of(value))))
}

fn type_of(value: &JsValue) -> String {
    value
        .js_typeof()
        .as_string()
        .unwrap_or_else(|| "unknown".to_owned())
}
