//! wasm-bindgen tests (run under Node by `make wasm-test`) of what this crate adapts: JS
//! replies, transport objects and their rejections, JS errors, the JS clock and timers.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Uint8Array};
use redlatch::protocol::reply::Reply;
use redlatch::protocol::request::Holder;
use redlatch::protocol::scripts;
use redlatch::{Error, ErrorKind, Runtime, Transport};
use redlatch_wasm::error::{class_name, to_js};
use redlatch_wasm::reply::from_js;
use redlatch_wasm::runtime::JsRuntime;
use redlatch_wasm::transport::{classify, JsTransport};
use redlatch_wasm::{client, options};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::wasm_bindgen_test;

mod common;
use common::{get, js, KeepAlive};

#[wasm_bindgen_test]
fn replies_from_every_js_shape() {
    assert_eq!(from_js(&JsValue::NULL).unwrap(), Reply::Nil);
    assert_eq!(from_js(&JsValue::UNDEFINED).unwrap(), Reply::Nil);
    assert_eq!(from_js(&JsValue::from(42)).unwrap(), Reply::Int(42));
    assert_eq!(from_js(&JsValue::from(-2)).unwrap(), Reply::Int(-2));
    assert_eq!(from_js(&js("2n ** 60n")).unwrap(), Reply::Int(1 << 60));
    assert_eq!(from_js(&JsValue::TRUE).unwrap(), Reply::Int(1));
    assert_eq!(from_js(&JsValue::FALSE).unwrap(), Reply::Nil);
    assert_eq!(
        from_js(&JsValue::from_str("OK")).unwrap(),
        Reply::Bytes(b"OK".to_vec())
    );
    let bytes = Uint8Array::from(&[1u8, 2, 255][..]);
    assert_eq!(from_js(&bytes).unwrap(), Reply::Bytes(vec![1, 2, 255]));
    assert_eq!(
        from_js(&js("[1, '9', null, [0, -1]]")).unwrap(),
        Reply::Array(vec![
            Reply::Int(1),
            Reply::Bytes(b"9".to_vec()),
            Reply::Nil,
            Reply::Array(vec![Reply::Int(0), Reply::Int(-1)]),
        ])
    );
}

#[wasm_bindgen_test]
fn replies_no_redis_value_maps_to_are_errors() {
    for bad in ["1.5", "({ a: 1 })", "() => 1", "Symbol('x')", "2n ** 70n", "NaN"] {
        let err = from_js(&js(bad)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Redis, "{bad}");
    }
    let nested = from_js(&js("[1, new Error('WRONGTYPE nested')]")).unwrap_err();
    assert_eq!(nested.kind(), ErrorKind::Redis);
    assert_eq!(nested.message(), "WRONGTYPE nested");
}

#[wasm_bindgen_test]
fn rejections_are_classified() {
    let named = js("Object.assign(new Error('boom'), { name: 'ReplyError' })");
    assert_eq!(classify(&named).kind(), ErrorKind::Redis);
    let ctor = js("(() => { class ErrorReply extends Error {}; return new ErrorReply('x') })()");
    assert_eq!(classify(&ctor).kind(), ErrorKind::Redis);
    let prefixed = js("new Error('NOSCRIPT No matching script')");
    assert_eq!(classify(&prefixed).kind(), ErrorKind::Redis);
    // Error replies are classified by their code, as the native transport does.
    for (text, kind) in [
        (
            "NOPERM this user has no permissions to run the 'publish' command",
            ErrorKind::NoPermission,
        ),
        (
            "OOM command not allowed when used memory > 'maxmemory'.",
            ErrorKind::OutOfMemory,
        ),
        (
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            ErrorKind::KeyConflict,
        ),
    ] {
        let reply = js(&format!(
            "Object.assign(new Error({text:?}), {{ name: 'ReplyError' }})"
        ));
        assert_eq!(classify(&reply).kind(), kind, "{text}");
    }
    let socket = js("new Error('Socket closed unexpectedly')");
    let e = classify(&socket);
    assert_eq!(e.kind(), ErrorKind::Connection);
    assert_eq!(e.message(), "Socket closed unexpectedly");
    let plain = classify(&JsValue::from_str("ECONNRESET"));
    assert_eq!(plain.kind(), ErrorKind::Connection);
    assert_eq!(plain.message(), "ECONNRESET");
    assert_eq!(classify(&JsValue::from(7)).message(), "7");
}

#[wasm_bindgen_test]
fn errors_are_js_errors_with_name_code_and_status() {
    for kind in ErrorKind::ALL {
        let err = to_js(&Error::new(kind, "why"));
        assert!(err.is_instance_of::<js_sys::Error>(), "{kind}");
        assert_eq!(get(&err, "name").as_string().unwrap(), class_name(kind));
        assert_eq!(get(&err, "code").as_string().unwrap(), kind.js_code());
        assert_eq!(get(&err, "status").as_f64().unwrap() as i32, kind.code());
        assert_eq!(get(&err, "message").as_string().unwrap(), "why");
    }
    assert_eq!(class_name(ErrorKind::NotAcquired), "NotAcquiredError");
    assert_eq!(class_name(ErrorKind::Connection), "RedisConnectionError");
    assert_eq!(class_name(ErrorKind::Redis), "LockError");
}

fn transport_of(source: &str) -> Result<JsTransport, JsValue> {
    JsTransport::from_js(js(source), 0)
}

#[wasm_bindgen_test]
fn transports_are_checked() {
    for bad in [
        "null",
        "42",
        "({})",
        "({ eval: 1 })",
        "({ eval() {}, evalsha: 'x' })",
        "({ eval() {}, label: '' })",
    ] {
        let err = transport_of(bad).unwrap_err();
        assert_eq!(
            get(&err, "code").as_string().unwrap(),
            "ERR_INVALID_ARGUMENT",
            "{bad}"
        );
        assert_eq!(get(&err, "name").as_string().unwrap(), "InvalidArgumentError");
    }
    assert_eq!(transport_of("({ eval() {} })").unwrap().label(), "transport 1");
    assert_eq!(
        transport_of("({ eval() {}, label: 'h:1' })").unwrap().label(),
        "h:1"
    );
}

#[wasm_bindgen_test]
async fn evalsha_first_then_eval_after_noscript() {
    let _alive = KeepAlive::new();
    let obj = js("{ calls: [],
           async evalsha(sha, keys, args) { this.calls.push('evalsha:' + sha);
             throw Object.assign(new Error('NOSCRIPT No matching script'), { name: 'ReplyError' }) },
           eval(script, keys, args) { this.calls.push('eval'); return [1, 0] } }");
    let t = JsTransport::from_js(obj.clone(), 0).unwrap();
    let req = Holder::Lease { token: "tok".into() }.acquire("name", 5000, None, "", 0);
    let reply = t.eval(&req).await.unwrap();
    assert_eq!(reply, Reply::Array(vec![Reply::Int(1), Reply::Int(0)]));
    let calls: Vec<String> = Array::from(&get(&obj, "calls"))
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    assert_eq!(
        calls,
        [
            format!("evalsha:{}", scripts::LEASE_ACQUIRE.sha1()),
            "eval".to_owned()
        ]
    );
}

#[wasm_bindgen_test]
async fn transport_sends_script_keys_and_args() {
    let _alive = KeepAlive::new();
    let obj = js("{ calls: [], eval(script, keys, args) { this.calls.push([script, keys, args]); return Promise.resolve('OK') } }");
    let t = JsTransport::from_js(obj.clone(), 2).unwrap();
    assert_eq!(t.label(), "transport 3");
    let holder = Holder::Lease { token: "tok".into() };
    let req = holder.acquire("order:42", 700, Some(0), "", 0);
    assert_eq!(t.eval(&req).await.unwrap(), Reply::Bytes(b"OK".to_vec()));
    let calls: Array = get(&obj, "calls").into();
    assert_eq!(calls.length(), 1);
    let call: Array = calls.get(0).into();
    assert_eq!(call.get(0).as_string().unwrap(), scripts::LEASE_ACQUIRE.source());
    let keys: Vec<String> = Array::from(&call.get(1))
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    let args: Vec<String> = Array::from(&call.get(2))
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    assert_eq!(keys, req.keys);
    assert_eq!(args, ["tok", "700", "1", "0"]);
}

#[wasm_bindgen_test]
async fn evalsha_is_used_when_the_script_is_cached() {
    let _alive = KeepAlive::new();
    let obj = js("{ shas: [], evalsha(sha) { this.shas.push(sha); return 1 }, eval() { throw new Error('not expected') } }");
    let t = JsTransport::from_js(obj.clone(), 0).unwrap();
    let req = Holder::Lease { token: "t".into() }.extend("k", 10);
    assert_eq!(t.eval(&req).await.unwrap(), Reply::Int(1));
    let shas: Array = get(&obj, "shas").into();
    assert_eq!(shas.get(0).as_string().unwrap(), scripts::LEASE_EXTEND.sha1());
}

#[wasm_bindgen_test]
async fn requests_by_source_skip_evalsha() {
    let _alive = KeepAlive::new();
    let obj = js("{ shas: [], evals: 0, evalsha(sha) { this.shas.push(sha); return 1 }, eval() { this.evals++; return 0 } }");
    let t = JsTransport::from_js(obj.clone(), 0).unwrap();
    let undo = Holder::Lease { token: "t".into() }.abort("k", "", 0);
    assert!(undo.by_source);
    assert_eq!(t.eval(&undo).await.unwrap(), Reply::Int(0));
    assert_eq!(Array::from(&get(&obj, "shas")).length(), 0);
    assert_eq!(get(&obj, "evals").as_f64(), Some(1.0));
}

#[wasm_bindgen_test]
async fn thrown_and_rejected_failures_become_core_errors() {
    let _alive = KeepAlive::new();
    let req = Holder::Lease { token: "t".into() }.extend("k", 10);
    let throws = transport_of("{ eval() { throw new TypeError('client is closed') } }").unwrap();
    let e = throws.eval(&req).await.unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (ErrorKind::Connection, "client is closed")
    );
    let rejects = transport_of("{ eval() { return Promise.reject(new Error('ERR bad script')) } }").unwrap();
    assert_eq!(rejects.eval(&req).await.unwrap_err().kind(), ErrorKind::Redis);
    let garbage = transport_of("{ eval: async () => ({ result: 1 }) }").unwrap();
    assert_eq!(garbage.eval(&req).await.unwrap_err().kind(), ErrorKind::Redis);
}

#[wasm_bindgen_test]
async fn clock_is_monotonic_and_timers_sleep() {
    let _alive = KeepAlive::new();
    let rt = JsRuntime::new();
    assert!(rt.uses_performance_now(), "Node has performance.now()");
    let t0 = rt.now();
    rt.sleep(Duration::from_millis(30)).await;
    let slept = rt.now() - t0;
    assert!(slept >= Duration::from_millis(29), "{slept:?}");
    assert!(slept < Duration::from_millis(1000), "{slept:?}");
    let mut last = rt.now();
    for _ in 0..1000 {
        let now = rt.now();
        assert!(now >= last);
        last = now;
    }
}

#[wasm_bindgen_test]
async fn spawned_tasks_run_and_dropped_sleeps_do_not_fire() {
    let _alive = KeepAlive::new();
    let rt = JsRuntime::new();
    let ran = Rc::new(RefCell::new(false));
    let flag = ran.clone();
    rt.spawn(Box::pin(async move {
        *flag.borrow_mut() = true;
    }));
    // A sleep dropped before it fires is cleared (no callback into a freed closure).
    drop(rt.sleep(Duration::from_millis(5)));
    rt.sleep(Duration::from_millis(20)).await;
    assert!(*ran.borrow());
}

#[wasm_bindgen_test]
fn options_follow_the_node_rules() {
    assert_eq!(options::millis("leaseMs", 10.0, false).unwrap(), 10);
    assert_eq!(options::millis("waitMs", 0.0, true).unwrap(), 0);
    for (v, zero) in [
        (0.0, false),
        (-1.0, true),
        (1.5, true),
        (f64::NAN, true),
        (9_007_199_254_740_992.0, true),
    ] {
        let err = options::millis("x", v, zero).unwrap_err();
        assert_eq!(
            get(&err, "code").as_string().unwrap(),
            "ERR_INVALID_ARGUMENT",
            "{v}"
        );
    }
    assert_eq!(options::wait(Some(f64::INFINITY)).unwrap(), None);
    assert_eq!(options::wait(Some(5.0)).unwrap(), Some(Duration::from_millis(5)));
    let c = options::client_config(&js("{ watchdogTimeoutMs: 900, nodeTimeoutMs: 20 }")).unwrap();
    assert_eq!(c.watchdog_timeout, Duration::from_millis(900));
    assert_eq!(c.node_timeout, Some(Duration::from_millis(20)));
    assert!(options::client_config(&js("{ leaseMS: 1 }")).is_err());
    assert!(options::client_config(&js("[]")).is_err());
    assert!(options::client_config(&JsValue::UNDEFINED).is_ok());
}

#[wasm_bindgen_test]
fn web_crypto_is_the_random_source() {
    client::check_random_source().unwrap();
}
