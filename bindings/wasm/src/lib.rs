//! # redlatch-wasm
//!
//! The redlatch core compiled to WebAssembly, for runtimes that cannot load a native addon or
//! open a TCP socket (edge workers, browsers, some serverless platforms). They reach Redis
//! through a client the host already has; this crate adapts only what differs from the native
//! build, and the lock logic stays the core's (DESIGN.md principle 2):
//!
//! | concern | module | host facility |
//! |---|---|---|
//! | Redis | [`transport`], [`reply`] | a JS object's `eval(script, keys, args)` Promise |
//! | time, sleep, tasks | [`runtime`] | `performance.now()`, `setTimeout`, `spawn_local` |
//! | random tokens | [`client`] (probe) | Web Crypto, through getrandom's `wasm_js` backend |
//! | errors | [`error`] | `Error` objects with `name`, `code`, `status` |
//!
//! The exported classes ([`WasmClient`], [`WasmLock`], [`WasmHeld`], and for the rest of the
//! family [`family`] and [`multi`]) are the low-level layer;
//! the npm entry `redlatch/wasm` wraps them in the same `Client`/`Lock`/`Held` API as the
//! native addon (`js/src/`), adding AbortSignal wiring and the error classes.
//!
//! Everything is compiled for `wasm32` only; on other targets this crate is empty, so
//! workspace-wide `cargo clippy`/`cargo test` on the host are unaffected.

// Transports are JS objects (not Send); the core's Arc-based structure is used single-threaded.
#![cfg_attr(target_arch = "wasm32", allow(clippy::arc_with_non_send_sync))]

#[cfg(target_arch = "wasm32")]
pub mod client;
#[cfg(target_arch = "wasm32")]
pub mod error;
#[cfg(target_arch = "wasm32")]
pub mod family;
#[cfg(target_arch = "wasm32")]
pub mod held;
#[cfg(target_arch = "wasm32")]
pub mod lock;
#[cfg(target_arch = "wasm32")]
pub mod multi;
#[cfg(target_arch = "wasm32")]
pub mod options;
#[cfg(target_arch = "wasm32")]
pub mod reply;
#[cfg(target_arch = "wasm32")]
pub mod runtime;
#[cfg(target_arch = "wasm32")]
pub mod transport;

#[cfg(target_arch = "wasm32")]
pub use client::WasmClient;
#[cfg(target_arch = "wasm32")]
pub use held::WasmHeld;
#[cfg(target_arch = "wasm32")]
pub use lock::WasmLock;
