//! `REDLATCH_WORKER_THREADS` sets the worker threads of the runtimes the bindings build (the
//! blocking API's here, and so the C binding's); a value outside 1..=16 is refused with
//! `InvalidArgument` naming it (before stop 38 Python and Node clamped or ignored it in
//! silence, and the blocking API did not read it). Its own test binary: the variable is
//! process-wide.

mod common;
use common::*;
use redlatch::{blocking, ErrorKind, WORKER_THREADS_VAR};

/// Threads of this process named like the blocking runtime's workers.
fn runtime_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "redlatch")
        .count()
}

#[test]
fn the_blocking_runtime_takes_its_workers_from_the_environment() {
    let s = server();
    std::env::set_var(WORKER_THREADS_VAR, "two");
    let err = blocking::Client::connect(&s.url()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.message().contains("\"two\""), "{err}");

    std::env::set_var(WORKER_THREADS_VAR, "3");
    let before = runtime_threads();
    let client = blocking::Client::connect(&s.url()).unwrap();
    assert_eq!(runtime_threads() - before, 3);
    client
        .lock("wt")
        .try_acquire()
        .unwrap()
        .unwrap()
        .release()
        .unwrap();
    std::env::remove_var(WORKER_THREADS_VAR);
}
