//! The blocking API called from inside an async runtime (a `#[tokio::main]` body, a task)
//! behaves the same whether or not it has to wait: it works, blocking that thread meanwhile.
//! It used to do its first try on the calling thread and then `block_on` the rest, which tokio
//! refuses inside a runtime: an acquire worked while the lock was free and panicked under
//! contention. A call on a thread of the client's own runtime, which would wait for itself,
//! fails at once with `WouldDeadlock`.

mod common;
use common::*;
use redlatch::{blocking, ErrorKind};
use std::time::{Duration, Instant};

/// Acquires `name` on `c` (a 5 s wait), then releases it: the acquire's and the release's results.
fn acquire_and_release(c: &blocking::Client, name: &str) -> redlatch::Result<redlatch::Result<()>> {
    c.lock(name)
        .lease(Duration::from_secs(5))
        .wait(Duration::from_secs(5))
        .acquire()
        .map(|g| g.release())
}

/// Holds `name` on `c` and releases it from another thread after `after`.
fn hold_then_release(c: &blocking::Client, name: &str, after: Duration) -> std::thread::JoinHandle<()> {
    let g = c.lock(name).lease(Duration::from_secs(30)).acquire().unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        g.release().unwrap();
    })
}

fn contended_acquire_inside(rt: &tokio::runtime::Runtime, tag: &str) {
    let s = server();
    let c = blocking::Client::connect(&s.url()).expect("connect");
    let name = format!("in-async:{tag}");
    let releaser = hold_then_release(&c, &name, Duration::from_millis(300));
    let (result, waited) = rt.block_on(async {
        let started = Instant::now();
        let r = c
            .lock(name.as_str())
            .lease(Duration::from_secs(5))
            .wait(Duration::from_secs(5))
            .acquire();
        (r, started.elapsed())
    });
    releaser.join().unwrap();
    let guard = result.expect("a contended blocking acquire inside a runtime waits and succeeds");
    assert!(
        waited >= Duration::from_millis(200),
        "it waited for the release ({waited:?})"
    );
    rt.block_on(async {
        guard.release().unwrap();
        // An uncontended acquire there works as before, and so does close().
        c.lock(name.as_str())
            .try_acquire()
            .unwrap()
            .expect("free")
            .release()
            .unwrap();
    });
}

#[test]
fn contended_blocking_acquire_inside_a_multi_thread_runtime_waits() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    contended_acquire_inside(&rt, "mt");
}

#[test]
fn contended_blocking_acquire_inside_a_current_thread_runtime_waits() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    contended_acquire_inside(&rt, "ct");
}

#[test]
fn connect_and_close_inside_a_runtime_work() {
    let s = server();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = blocking::Client::connect(&s.url()).expect("connect inside a runtime");
        let g = c
            .lock("in-async:close")
            .lease(Duration::from_secs(30))
            .acquire()
            .unwrap();
        c.close();
        assert!(g.is_closed(), "close() released it");
        drop((g, c)); // the last owner of the client's runtime, dropped inside another one
    });
}

#[test]
fn contended_blocking_acquire_inside_a_task_waits() {
    let s = server();
    let c = blocking::Client::connect(&s.url()).expect("connect");
    let releaser = hold_then_release(&c, "in-async:task", Duration::from_millis(300));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c2 = c.clone();
    let r =
        rt.block_on(
            async move { tokio::spawn(async move { acquire_and_release(&c2, "in-async:task") }).await },
        );
    releaser.join().unwrap();
    r.expect("the task did not panic")
        .expect("acquired")
        .expect("released");
}

#[test]
fn contended_blocking_acquire_from_spawn_blocking_still_works() {
    let s = server();
    let c = blocking::Client::connect(&s.url()).expect("connect");
    let releaser = hold_then_release(&c, "in-async:sb", Duration::from_millis(300));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c2 = c.clone();
    let r = rt.block_on(async move {
        tokio::task::spawn_blocking(move || acquire_and_release(&c2, "in-async:sb")).await
    });
    releaser.join().unwrap();
    r.unwrap().expect("acquired").expect("released");
}

#[test]
fn blocking_call_on_the_clients_own_runtime_is_refused_at_once() {
    let s = server();
    let c = blocking::Client::connect(&s.url()).expect("connect");
    let c2 = c.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    c.runtime().spawn(async move {
        // Free or not, the same answer: its one worker would wait for itself.
        let free = c2.lock("in-async:own").try_acquire().map(|g| g.is_some());
        let _ = tx.send(free);
    });
    let r = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("answered at once");
    assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::WouldDeadlock));
    assert!(!c.lock("in-async:own").locked().unwrap(), "nothing was taken");
}
