//! The C ABI of redlatch: `libredlatch.so` / `libredlatch.a` with `include/redlatch.h`.
//!
//! A thin layer over [`redlatch::blocking`]: it converts C types, maps errors to
//! [`redlatch_status`] and keeps track of which thread holds what. It never re-implements lock
//! logic. The conventions (status returns, out-params, ownership, threads, fork, callbacks) are
//! written down in `bindings/c/README.md`; every exported function says who owns and who frees.
//!
//! Files by concept, as in rustls-ffi: [`panic`](mod@panic) is the boundary every export runs
//! inside; [`error`] the status enum and the per-thread last error; `ffi` the pointer, string
//! and duration checks; [`client`] and [`lock`] the two handles (acquiring is in `lock`); `hold`
//! the holds of one lock handle per owner; `held` release, extend and the other operations on
//! the caller's current hold; `inspect` locked, TTL and hold count; `settings` the checked lock
//! options shared by every lock constructor; [`rwlock`] the read/write lock, whose two sides are
//! lock handles; [`semaphore`], [`permit`] (the permit-expirable semaphore), [`latch`] (the
//! count-down latch) and [`multi`] (the multi-lock), the rest of Redisson's family;
//! [`callback`] the lost-lock
//! callback; [`deployment`] the TLS, Sentinel and `sync_replicas` options and the warning callback; `fork` what a forked child may do with inherited handles; [`version`] the library
//! version.

// C names (`redlatch_client`, `REDLATCH_OK`) are the public ABI, spelled the C way.
#![allow(non_camel_case_types)]

pub mod callback;
pub mod client;
pub mod deployment;
pub mod error;
mod ffi;
mod fork;
mod held;
mod hold;
mod inspect;
pub mod latch;
pub mod lock;
pub mod multi;
pub mod panic;
pub mod permit;
pub mod rwlock;
pub mod semaphore;
mod settings;
pub mod version;

pub use callback::redlatch_lost_callback;
pub use client::{redlatch_client, redlatch_client_options};
pub use deployment::redlatch_warning_callback;
pub use error::redlatch_status;
pub use latch::redlatch_count_down_latch;
pub use lock::{redlatch_lock, redlatch_lock_options};
pub use multi::redlatch_multi_lock;
pub use permit::{redlatch_permit, redlatch_permit_semaphore};
pub use rwlock::redlatch_rw_lock;
pub use semaphore::redlatch_semaphore;
