//! Helpers shared by the wasm-bindgen test files.
#![allow(dead_code)]

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setInterval)]
    fn set_interval(f: &Function, ms: i32) -> JsValue;
    #[wasm_bindgen(js_name = clearInterval)]
    fn clear_interval(handle: &JsValue);
    #[wasm_bindgen(js_name = setTimeout)]
    pub fn set_timeout(f: &Function, ms: i32) -> JsValue;
}

/// Keeps Node's event loop alive while an async test runs. The module's own timers are
/// unref'd by design (they never keep a process alive), so without this the test runner's
/// process would exit, silently, while a test awaits one of them.
pub struct KeepAlive(JsValue);

impl KeepAlive {
    pub fn new() -> KeepAlive {
        KeepAlive(set_interval(&Function::new_no_args(""), 1000))
    }
}

impl Drop for KeepAlive {
    fn drop(&mut self) {
        clear_interval(&self.0);
    }
}

/// Evaluates a JS expression.
pub fn js(source: &str) -> JsValue {
    Function::new_no_args(&format!("return ({source})"))
        .call0(&JsValue::NULL)
        .unwrap()
}

/// `target[key]`.
pub fn get(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap()
}
