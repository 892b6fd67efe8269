//! A host-supplied JS object as the core's [`Transport`] for one Redis node.
//!
//! Edge workers and browsers cannot open a TCP socket, so the host passes the Redis client it
//! already has, as an object with `eval(script, keys, args)` returning a Promise of the reply
//! (and optionally `evalsha(sha1, keys, args)`). Only scripts are sent: the core's `plain`
//! fast path (`SET NX PX` without Lua) is ignored here, so a transport needs nothing else.
//! There is no pub/sub either: waiters poll with jitter, bounded by the holder's PTTL (see
//! the core's driver/acquire.rs).
//!
//! Rejections become core errors: a Redis error reply (`ReplyError` in ioredis, `ErrorReply`
//! in node-redis, or any error whose message starts with a Redis error code such as `ERR` or
//! `WRONGTYPE`) is classified by its text as the native transport does
//! ([`redlatch::redis_error_kind`]: `NOPERM` is `NoPermission`, `OOM` `OutOfMemory`,
//! `WRONGTYPE` `KeyConflict`, others `Redis`); anything else (a closed socket, an HTTP
//! failure) is `ErrorKind::Connection`, which the core retries within its network timeout.
//!
//! A quorum's transports are told apart by server identity before their first call
//! ([`redlatch::QuorumServers`], through the `server_id` script): two transports reaching one
//! server under different labels (`localhost:P` and `127.0.0.1:P`) would let it cast two votes,
//! so the second is refused with `InvalidArgument` on every call and never votes.

use crate::error::{describe, invalid};
use crate::reply;
use js_sys::{Array, Function, Promise, Reflect};
use redlatch::protocol::independence;
use redlatch::protocol::reply::Reply;
use redlatch::protocol::request::Request;
use redlatch::{BoxFut, Error, ErrorKind, QuorumServers, Result, Subscription, Transport};
use std::sync::{Arc, Mutex};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(typescript_custom_section)]
const TRANSPORT_TS: &'static str = r#"
/** What a transport's promise may resolve to: a Redis reply as JS clients represent it. */
export type RedisReply = null | undefined | number | bigint | boolean | string | Uint8Array | RedisReply[];

/**
 * One Redis node, reached through a client the host provides (node-redis, ioredis, an HTTP
 * Redis client). `eval` runs a Lua script (`EVAL script numkeys ...keys ...args`); `evalsha`,
 * when present, is tried first and `eval` is used after a `NOSCRIPT` error. Reject with the
 * client's error: Redis error replies (`ReplyError`, `ErrorReply`, or a message starting with
 * a Redis error code) are reported as such, anything else counts as a connection failure.
 */
export interface RedisTransport {
  eval(script: string, keys: string[], args: string[]): Promise<RedisReply> | RedisReply;
  evalsha?(sha1: string, keys: string[], args: string[]): Promise<RedisReply> | RedisReply;
  /** The node's address for messages (no credentials), e.g. `10.0.0.5:6379`. */
  label?: string;
}
"#;

/// Error names that JS Redis clients give to error replies.
const REPLY_ERROR_NAMES: [&str; 5] = [
    "ReplyError",
    "ErrorReply",
    "SimpleError",
    "BlobError",
    "RedisError",
];

/// Redis error-reply prefixes, for clients that reject with a plain `Error`.
const REPLY_ERROR_CODES: [&str; 22] = [
    "ERR",
    "WRONGTYPE",
    "NOSCRIPT",
    "BUSY",
    "OOM",
    "NOPERM",
    "NOAUTH",
    "WRONGPASS",
    "READONLY",
    "LOADING",
    "MASTERDOWN",
    "MISCONF",
    "EXECABORT",
    "NOREPLICAS",
    "CLUSTERDOWN",
    "CROSSSLOT",
    "MOVED",
    "ASK",
    "TRYAGAIN",
    "BUSYKEY",
    "UNKILLABLE",
    "NOTBUSY",
];

/// One Redis node behind a JS object.
pub struct JsTransport {
    target: JsValue,
    eval: Function,
    evalsha: Option<Function>,
    label: String,
    /// A quorum's transports share it: the server this one reaches must be no other's.
    servers: Option<Arc<QuorumServers>>,
    /// The identity check's outcome once known: passed or not possible (`None`), or the
    /// refusal every call then gets.
    identity: Mutex<Option<Option<Error>>>,
    /// The target's user may not run `EVALSHA`: scripts go by source.
    evalsha_denied: std::cell::Cell<bool>,
}

impl std::fmt::Debug for JsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsTransport").field("label", &self.label).finish()
    }
}

fn property(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

impl JsTransport {
    /// Checks and wraps transport number `index` (0-based) of a client.
    ///
    /// # Errors
    /// An `InvalidArgumentError` when `value` has no `eval` function, or a non-function
    /// `evalsha`, or a non-string `label`.
    pub fn from_js(value: JsValue, index: usize) -> std::result::Result<JsTransport, JsValue> {
        let which = format!("transport {}", index + 1);
        if !value.is_object() && !value.is_function() {
            return Err(invalid(format!(
                "{which} must be an object with an eval(script, keys, args) method"
            )));
        }
        let eval = property(&value, "eval")
            .dyn_into::<Function>()
            .map_err(|_| invalid(format!("{which} has no eval(script, keys, args) method")))?;
        let evalsha = match property(&value, "evalsha") {
            v if v.is_undefined() || v.is_null() => None,
            v => Some(
                v.dyn_into::<Function>()
                    .map_err(|_| invalid(format!("{which}: evalsha must be a function")))?,
            ),
        };
        let label = match property(&value, "label") {
            v if v.is_undefined() || v.is_null() => which,
            v => match v.as_string() {
                Some(s) if !s.is_empty() => s,
                _ => return Err(invalid(format!("{which}: label must be a non-empty string"))),
            },
        };
        Ok(JsTransport {
            target: value,
            eval,
            evalsha,
            label,
            servers: None,
            identity: Mutex::new(None),
            evalsha_denied: std::cell::Cell::new(false),
        })
    }

    /// This transport as one of a quorum's, whose servers `servers` keeps apart.
    pub fn in_quorum(mut self, servers: Arc<QuorumServers>) -> JsTransport {
        self.servers = Some(servers);
        self
    }

    /// Before the first call of a quorum's transport: the server it reaches must be no other
    /// transport's (module docs). A connection failure leaves it to the next call; a server
    /// that refuses `INFO` (an ACL) or has no `run_id` is not checked.
    async fn check_server(&self) -> Result<()> {
        let Some(servers) = &self.servers else {
            return Ok(());
        };
        let known = self.identity.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(outcome) = known {
            return outcome.map_or(Ok(()), Err);
        }
        let refusal = match self.run(&independence::server_id()).await {
            Ok(Reply::Bytes(id)) => servers.claim(&self.label, &String::from_utf8_lossy(&id)).err(),
            Ok(_) => None,
            Err(e) if e.kind() == ErrorKind::Connection => return Err(e),
            Err(_) => None,
        };
        *self.identity.lock().unwrap_or_else(|p| p.into_inner()) = Some(refusal.clone());
        refusal.map_or(Ok(()), Err)
    }

    /// Runs `request`: `EVALSHA` when the target has it, `EVAL` after a `NOSCRIPT`.
    async fn run(&self, request: &Request) -> Result<Reply> {
        let script = request.script;
        let by_digest = !request.by_source && !self.evalsha_denied.get();
        if let Some(evalsha) = self.evalsha.as_ref().filter(|_| by_digest) {
            match self.invoke(evalsha, script.sha1(), request).await {
                Err(e) if is_noscript(&e) => {}
                // An ACL user granted EVAL only: by source from now on (as the native
                // transports do, `scripts_run.rs`).
                Err(e) if e.refuses_evalsha() => {
                    self.evalsha_denied.set(true);
                }
                other => return other,
            }
        }
        self.invoke(&self.eval, script.source(), request).await
    }

    /// Calls `f(first, keys, args)` on the target and awaits its result (a Promise, a
    /// thenable or a plain value). A synchronous throw counts like a rejection.
    async fn invoke(&self, f: &Function, first: &str, request: &Request) -> Result<Reply> {
        let called = f.call3(
            &self.target,
            &JsValue::from_str(first),
            &strings(&request.keys),
            &strings(&request.args),
        );
        let settled = match called {
            Ok(value) => JsFuture::from(Promise::resolve(&value)).await,
            Err(thrown) => Err(thrown),
        };
        match settled {
            Ok(value) => reply::from_js(&value),
            Err(rejected) => Err(classify(&rejected)),
        }
    }
}

fn strings(items: &[String]) -> Array {
    items.iter().map(|s| JsValue::from_str(s)).collect()
}

/// The core error for a transport's rejection value.
pub fn classify(rejected: &JsValue) -> Error {
    let message = describe(rejected);
    if is_reply_error(rejected, &message) {
        // ioredis prefixes nothing, node-redis neither: the message is Redis' reply text.
        Error::from_redis_reply(message)
    } else {
        Error::new(ErrorKind::Connection, message)
    }
}

fn is_reply_error(rejected: &JsValue, message: &str) -> bool {
    if rejected.is_object() {
        let name = property(rejected, "name").as_string();
        let ctor = property(&property(rejected, "constructor"), "name").as_string();
        let named = [name, ctor]
            .iter()
            .flatten()
            .any(|n| REPLY_ERROR_NAMES.contains(&n.as_str()));
        if named || property(rejected, "code").as_string().as_deref() == Some("ERR_REDIS") {
            return true;
        }
    }
    let first = message.split([' ', ':']).next().unwrap_or_default();
    REPLY_ERROR_CODES.contains(&first)
}

fn is_noscript(err: &Error) -> bool {
    err.kind() == ErrorKind::Redis && err.message().starts_with("NOSCRIPT")
}

impl Transport for JsTransport {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        Box::pin(async move {
            self.check_server().await?;
            self.run(request).await
        })
    }

    fn subscribe<'a>(&'a self, _channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        // No pub/sub through an eval function: the core polls instead.
        Box::pin(async { Ok(None) })
    }

    fn label(&self) -> &str {
        &self.label
    }
}
