//! Core errors as the JSON the JavaScript facade turns into `Error` subclasses.
//!
//! One shape for every way an error leaves the addon: as the message of a thrown napi error
//! (napi-rs gives those a fixed `code`, its own `Status` enum, so the kind travels in the
//! message) and as the `error` argument of `settle` (calls.rs): a one-line JSON object
//! `{"redlatch":1,"code":"ERR_NOT_OWNED","status":2,"message":"...","reason":"deleted","nodes":[...]}`
//! (`reason` for NotOwned / LockLost only, the core's word).
//! `lib/facade/errors.mjs` parses it and builds `NotAcquiredError` & co. The code strings come from
//! the core's `ErrorKind::js_code()`, so they match the C status names (`REDLATCH_<X>` ↔
//! `ERR_<X>`) and the numeric `status` matches the C value, mechanically.

use redlatch::{Error, ErrorKind};

/// A napi error carrying a core error, for the facade to decode.
pub(crate) fn to_napi(err: Error) -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, to_json(&err))
}

/// The JSON form of a core error (module docs).
pub(crate) fn to_json(err: &Error) -> String {
    let mut out = String::with_capacity(96 + err.message().len());
    out.push_str("{\"redlatch\":1,\"code\":");
    push_json_str(&mut out, err.kind().js_code());
    out.push_str(",\"status\":");
    out.push_str(&err.code().to_string());
    out.push_str(",\"message\":");
    push_json_str(&mut out, err.message());
    if let Some(reason) = err.reason() {
        out.push_str(",\"reason\":");
        push_json_str(&mut out, reason.as_str());
    }
    if !err.nodes().is_empty() {
        out.push_str(",\"nodes\":[");
        for (i, n) in err.nodes().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"node\":");
            push_json_str(&mut out, &n.node);
            out.push_str(",\"error\":");
            match &n.result {
                Ok(()) => out.push_str("null"),
                Err(why) => push_json_str(&mut out, why),
            }
            out.push('}');
        }
        out.push(']');
    }
    out.push('}');
    out
}

/// An `InvalidArgument` rejection raised by the binding itself.
pub(crate) fn invalid(message: impl Into<String>) -> napi::Error {
    to_napi(Error::invalid(message))
}

/// The rejection for any call on a closed client.
pub(crate) fn closed() -> napi::Error {
    to_napi(Error::new(ErrorKind::Connection, "the client is closed"))
}

/// Extension so core results convert in one call.
pub(crate) trait IntoNapi<T> {
    /// Maps the core error, if any, to its napi rejection.
    fn js(self) -> napi::Result<T>;
}

impl<T> IntoNapi<T> for Result<T, Error> {
    fn js(self) -> napi::Result<T> {
        self.map_err(to_napi)
    }
}

fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_json() {
        let mut s = String::new();
        push_json_str(&mut s, "a\"b\\c\nd\u{1}é");
        assert_eq!(s, "\"a\\\"b\\\\c\\nd\\u0001é\"");
    }
}
