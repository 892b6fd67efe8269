//! wasm-bindgen tests (under Node) of the exported classes end to end, over an in-memory fake
//! of the lease-lock scripts served through a JS transport object: the core's lock logic
//! running on JS promises, JS timers and JS errors.
#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Function, Object, Promise, Reflect};
use redlatch::protocol::scripts;
use redlatch_wasm::WasmClient;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

mod common;
use common::{get, set_timeout, KeepAlive};

/// A tiny Redis: lease-lock keys with expiry, fencing counters, and an on/off switch.
#[derive(Default)]
struct Fake {
    keys: HashMap<String, (String, f64)>,
    counters: HashMap<String, i64>,
    down: bool,
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

impl Fake {
    fn value(&mut self, key: &str) -> Option<String> {
        match self.keys.get(key) {
            Some((_, exp)) if *exp <= now_ms() => {
                self.keys.remove(key);
                None
            }
            other => other.map(|(v, _)| v.clone()),
        }
    }

    fn pttl(&mut self, key: &str) -> i64 {
        match self.value(key) {
            Some(_) => (self.keys[key].1 - now_ms()).max(0.0) as i64,
            None => -2,
        }
    }

    /// Answers one script call; `Err` is a Redis error reply.
    fn run(&mut self, script: &str, keys: &[String], args: &[String]) -> Result<JsValue, String> {
        let int = |i: i64| JsValue::from_f64(i as f64);
        let pair = |a: i64, b: i64| JsValue::from(Array::of2(&int(a), &int(b)));
        if script == scripts::SERVER_ID.source() {
            // Each fake is a server of its own (a quorum's nodes are told apart by it).
            return Ok(JsValue::from_str(&format!("{:x}", self as *const Fake as usize)));
        }
        let k = keys[0].clone();
        if script == scripts::LEASE_ACQUIRE.source() {
            let (token, lease) = (&args[0], args[1].parse::<f64>().unwrap());
            match self.value(&k) {
                Some(v) if &v != token => return Ok(pair(0, self.pttl(&k))),
                _ => {
                    self.keys.insert(k, (token.clone(), now_ms() + lease));
                }
            }
            if args[2] == "1" {
                let c = self.counters.entry(keys[1].clone()).or_default();
                *c += 1;
                return Ok(pair(1, *c));
            }
            return Ok(pair(1, 0));
        }
        let owns = |fake: &mut Fake, key: &str, token: &str| match fake.value(key) {
            Some(v) if v == token => 1,
            Some(_) => -1,
            None => 0,
        };
        if script == scripts::LEASE_RELEASE.source() {
            let r = owns(self, &k, &args[0]);
            if r == 1 {
                self.keys.remove(&k);
            }
            return Ok(int(r));
        }
        if script == scripts::LEASE_EXTEND.source() {
            let r = owns(self, &k, &args[0]);
            if r == 1 {
                self.keys.get_mut(&k).unwrap().1 = now_ms() + args[1].parse::<f64>().unwrap();
            }
            return Ok(int(r));
        }
        if script == scripts::RENEW_BATCH.source() {
            let lease: f64 = args[0].parse().unwrap();
            let out = Array::new();
            for (i, key) in keys.iter().enumerate() {
                let mine = owns(self, key, &args[i + 1][1..]) == 1;
                if mine {
                    self.keys.get_mut(key).unwrap().1 = now_ms() + lease;
                }
                out.push(&int(mine as i64));
            }
            return Ok(out.into());
        }
        if script == scripts::INSPECT.source() {
            let exists = self.value(&k).is_some() as i64;
            let owned = (args[0].len() > 1 && owns(self, &k, &args[0][1..]) == 1) as i64;
            let out: Array = [exists, self.pttl(&k), owned, owned]
                .iter()
                .map(|i| int(*i))
                .collect();
            return Ok(out.into());
        }
        if script == scripts::FORCE_UNLOCK.source() {
            return Ok(int(self.keys.remove(&k).is_some() as i64));
        }
        Err(format!(
            "ERR the fake does not know this script: {}",
            &script[..40]
        ))
    }
}

fn strings(v: &JsValue) -> Vec<String> {
    Array::from(v).iter().filter_map(|s| s.as_string()).collect()
}

/// A transport object whose `eval` is served by `fake`, asynchronously (like a socket).
fn transport(fake: &Rc<RefCell<Fake>>, label: &str) -> JsValue {
    let fake = fake.clone();
    let eval = Closure::<dyn FnMut(JsValue, JsValue, JsValue) -> Promise>::new(
        move |script: JsValue, keys, args| {
            let mut f = fake.borrow_mut();
            if f.down {
                return Promise::reject(&js_sys::Error::new("connect ECONNREFUSED").into());
            }
            let script = script.as_string().unwrap();
            match f.run(&script, &strings(&keys), &strings(&args)) {
                Ok(v) => Promise::resolve(&v),
                Err(e) => {
                    let err = js_sys::Error::new(&e);
                    err.set_name("ReplyError");
                    Promise::reject(&err.into())
                }
            }
        },
    );
    let obj = Object::new();
    Reflect::set(&obj, &"eval".into(), eval.as_ref()).unwrap();
    Reflect::set(&obj, &"label".into(), &label.into()).unwrap();
    eval.forget();
    obj.into()
}

/// Calls `target[name](...args)` and awaits the result if it is a Promise.
async fn call(target: &JsValue, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = get(target, name).dyn_into().unwrap();
    let value = f.apply(target, &args.iter().collect::<Array>())?;
    JsFuture::from(Promise::resolve(&value)).await
}

fn code(err: &JsValue) -> String {
    get(err, "code").as_string().unwrap_or_default()
}

fn client(nodes: &[Rc<RefCell<Fake>>], options: &str) -> JsValue {
    let list: Array = nodes
        .iter()
        .enumerate()
        .map(|(i, f)| transport(f, &format!("node{i}")))
        .collect();
    let options = js_sys::JSON::parse(options).unwrap();
    WasmClient::new(list.into(), options).unwrap().into()
}

async fn lock(client: &JsValue, name: &str, lease: JsValue) -> JsValue {
    call(
        client,
        "lock",
        &[
            name.into(),
            0.into(), // the kind: a lease lock (src/lock.rs `Kind`)
            lease,
            JsValue::UNDEFINED,
            JsValue::UNDEFINED,
        ],
    )
    .await
    .unwrap()
}

#[wasm_bindgen_test]
async fn acquire_exclude_release() {
    let _alive = KeepAlive::new();
    let fake = Rc::new(RefCell::new(Fake::default()));
    let c = client(std::slice::from_ref(&fake), "{}");
    let l = lock(&c, "a", 5000.into()).await;
    let held = call(&l, "acquire", &[]).await.unwrap();
    assert_eq!(get(&held, "leaseMs").as_f64(), Some(5000.0));
    assert!(fake.borrow_mut().value("a").is_some());
    let busy = call(&l, "acquire", &[0.into()]).await.unwrap_err();
    assert_eq!(code(&busy), "ERR_NOT_ACQUIRED");
    assert_eq!(get(&busy, "name").as_string().unwrap(), "NotAcquiredError");
    assert!(busy.is_instance_of::<js_sys::Error>());
    call(&held, "release", &[]).await.unwrap();
    assert!(fake.borrow_mut().value("a").is_none());
    let again = call(&held, "release", &[]).await.unwrap_err();
    assert_eq!(code(&again), "ERR_NOT_OWNED");
    let loss = call(&held, "loss", &[]).await.unwrap();
    assert!(loss.is_null(), "released, not lost: {loss:?}");
    assert_eq!(get(&held, "held").as_bool(), Some(false));
}

#[wasm_bindgen_test]
async fn waiting_polls_until_the_holders_lease_ends() {
    let _alive = KeepAlive::new();
    let fake = Rc::new(RefCell::new(Fake::default()));
    fake.borrow_mut()
        .keys
        .insert("b".into(), ("someone".into(), now_ms() + 150.0));
    let c = client(std::slice::from_ref(&fake), "{}");
    let l = lock(&c, "b", 1000.into()).await;
    let t0 = now_ms();
    let held = call(&l, "acquire", &[2000.into()]).await.unwrap();
    let took = now_ms() - t0;
    assert!((100.0..1000.0).contains(&took), "took {took} ms");
    call(&held, "release", &[]).await.unwrap();
}

#[wasm_bindgen_test]
async fn watchdog_renews_and_reports_loss() {
    let _alive = KeepAlive::new();
    let fake = Rc::new(RefCell::new(Fake::default()));
    let c = client(std::slice::from_ref(&fake), r#"{"watchdogTimeoutMs": 150}"#);
    let l = lock(&c, "w", JsValue::UNDEFINED).await;
    let held = call(&l, "acquire", &[]).await.unwrap();
    // Renewed past its first lease.
    redlatch_wasm::runtime::sleep(std::time::Duration::from_millis(350)).await;
    assert!(fake.borrow_mut().value("w").is_some(), "the watchdog renewed it");
    assert_eq!(get(&held, "lost").as_bool(), Some(false));
    let loss = call(&held, "loss", &[]);
    fake.borrow_mut().keys.remove("w");
    let t0 = now_ms();
    // Removed behind its back within the lease: lost, reason `deleted`.
    assert_eq!(loss.await.unwrap().as_string().as_deref(), Some("deleted"));
    assert!(now_ms() - t0 < 300.0);
    assert_eq!(get(&held, "lost").as_bool(), Some(true));
    assert_eq!(get(&held, "lostReason").as_string().as_deref(), Some("deleted"));
    let err = call(&held, "release", &[]).await.unwrap_err();
    assert_eq!(code(&err), "ERR_LOCK_LOST");
}

#[wasm_bindgen_test]
async fn quorum_tolerates_a_minority_down_and_reports_a_majority_down() {
    let _alive = KeepAlive::new();
    let nodes: Vec<_> = (0..3).map(|_| Rc::new(RefCell::new(Fake::default()))).collect();
    let c = client(&nodes, r#"{"networkTimeoutMs": 300}"#);
    assert_eq!(get(&c, "nodeCount").as_f64(), Some(3.0));
    nodes[2].borrow_mut().down = true;
    let l = lock(&c, "q", 5000.into()).await;
    let held = call(&l, "acquire", &[0.into()]).await.unwrap();
    call(&held, "release", &[]).await.unwrap();
    nodes[1].borrow_mut().down = true;
    let err = call(&l, "acquire", &[0.into()]).await.unwrap_err();
    assert_eq!(code(&err), "ERR_QUORUM");
    let outcomes = Array::from(&get(&err, "nodes"));
    assert_eq!(outcomes.length(), 3);
    assert!(get(&outcomes.get(2), "node")
        .as_string()
        .unwrap()
        .starts_with("node2"));
    assert!(get(&outcomes.get(2), "error")
        .as_string()
        .unwrap()
        .contains("ECONNREFUSED"));
}

#[wasm_bindgen_test]
async fn cancel_rejects_with_its_reason_and_leaves_nothing() {
    let _alive = KeepAlive::new();
    let fake = Rc::new(RefCell::new(Fake::default()));
    fake.borrow_mut()
        .keys
        .insert("c".into(), ("other".into(), now_ms() + 60_000.0));
    let c = client(std::slice::from_ref(&fake), "{}");
    let l = lock(&c, "c", 5000.into()).await;
    let reason = JsValue::from_str("aborted!");
    let cancel = Promise::new(&mut |resolve, _| {
        let r = reason.clone();
        let cb = Closure::once_into_js(move || resolve.call1(&JsValue::NULL, &r).unwrap());
        set_timeout(&cb.unchecked_into(), 50);
    });
    let err = call(
        &l,
        "acquire",
        &[
            JsValue::from_f64(f64::INFINITY),
            JsValue::UNDEFINED,
            cancel.into(),
        ],
    )
    .await
    .unwrap_err();
    assert_eq!(err, reason);
    assert_eq!(fake.borrow_mut().value("c").as_deref(), Some("other"));
}

#[wasm_bindgen_test]
async fn bad_input_is_refused_before_redis() {
    let _alive = KeepAlive::new();
    let fake = Rc::new(RefCell::new(Fake::default()));
    let c = client(std::slice::from_ref(&fake), "{}");
    let empty = call(&c, "lock", &["".into(), 0.into()]).await.unwrap_err();
    assert_eq!(code(&empty), "ERR_INVALID_ARGUMENT");
    let bad_lease = call(&c, "lock", &["x".into(), 0.into(), 1.5.into()])
        .await
        .unwrap_err();
    assert_eq!(code(&bad_lease), "ERR_INVALID_ARGUMENT");
    let none = WasmClient::new(Array::new().into(), JsValue::UNDEFINED)
        .err()
        .unwrap();
    assert_eq!(code(&none), "ERR_INVALID_ARGUMENT");
    let too_long = call(&c, "lock", &["x".repeat(4097).into(), 0.into()])
        .await
        .unwrap_err();
    assert_eq!(code(&too_long), "ERR_INVALID_ARGUMENT");
    // Refused when the lock is made, as natively, not at its first acquire.
    let fenced_quorum = client(&[fake.clone(), fake.clone(), fake.clone()], "{}");
    let err = call(
        &fenced_quorum,
        "lock",
        &["f".into(), 0.into(), 100.into(), JsValue::UNDEFINED, true.into()],
    )
    .await
    .unwrap_err();
    assert_eq!(code(&err), "ERR_INVALID_ARGUMENT");
    assert!(fake.borrow().keys.is_empty());
}

#[wasm_bindgen_test]
async fn fenced_locks_return_increasing_tokens() {
    let _alive = KeepAlive::new();
    let fake = Rc::new(RefCell::new(Fake::default()));
    let c = client(std::slice::from_ref(&fake), "{}");
    let l = call(
        &c,
        "lock",
        &["f".into(), 0.into(), 1000.into(), JsValue::UNDEFINED, true.into()],
    )
    .await
    .unwrap();
    let mut last = 0.0;
    for _ in 0..3 {
        let held = call(&l, "acquire", &[]).await.unwrap();
        let token = get(&held, "fencingToken").as_f64().unwrap();
        assert!(token > last);
        last = token;
        call(&held, "release", &[]).await.unwrap();
    }
}
