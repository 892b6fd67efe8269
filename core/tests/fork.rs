//! The fork rule (shared/API.md, "Fork"): a forked child does not own its parent's holds
//! (`owned()` false, release/extend `NotOwned`), never releases them (not even by dropping
//! their guards), and its calls on the parent's blocking client fail at once instead of
//! hanging on the parent's runtime threads, which do not exist in the child. New clients made
//! in the child work.
//!
//! One test per binary would be ideal (a forked child has only the forking thread); these
//! tests fork while other test threads may run, so the child touches nothing but redlatch and
//! reports through its exit code.

mod common;
use common::*;
use redlatch::{blocking, ErrorKind, Reason};
use redlatch_fleet::{in_forked_child, ChildEnd};
use std::cell::RefCell;
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(10);

/// `true` for `NotOwned` with reason `never_held`, the answer for an inherited hold.
fn inherited_refusal<T>(r: redlatch::Result<T>) -> bool {
    matches!(r, Err(e) if e.kind() == ErrorKind::NotOwned && e.reason() == Some(Reason::NeverHeld))
}

#[test]
fn forked_child_neither_owns_nor_releases_the_parents_holds() {
    let s = server();
    let c = blocking::Client::connect(&s.url()).expect("connect");
    let rguard = c.rlock("fork:r").acquire().unwrap();
    let lguard = c.lock("fork:l").lease(Duration::from_secs(30)).acquire().unwrap();
    let sem = c.permit_semaphore("fork:p");
    sem.try_set_permits(1).unwrap();
    let permit = sem.acquire(Some(Duration::from_secs(30))).unwrap();
    let multi = c.multi_lock_names(["fork:m1", "fork:m2"]).unwrap();
    let mguard = multi.lease(Duration::from_secs(30)).acquire().unwrap();

    // Taken out (and dropped) in the child's copy of memory only; the parent's stay put.
    let inherited = RefCell::new(Some((c, rguard, lguard, permit, mguard)));
    let end = in_forked_child(DEADLINE, || {
        let held = inherited.borrow_mut().take().unwrap();
        let code = (|| {
            let (_, rguard, lguard, permit, mguard) = &held;
            if !matches!(rguard.owned(), Ok(false)) || !matches!(lguard.owned(), Ok(false)) {
                return 1;
            }
            if rguard.is_held() || lguard.is_held() || !rguard.as_async().is_inherited() {
                return 2;
            }
            if !inherited_refusal(rguard.release()) || !inherited_refusal(lguard.release()) {
                return 3;
            }
            if !inherited_refusal(lguard.extend(Duration::from_secs(5)))
                || !inherited_refusal(lguard.release_final())
            {
                return 4;
            }
            if !inherited_refusal(permit.release()) || !inherited_refusal(mguard.release()) {
                return 5;
            }
            0
        })();
        if code != 0 {
            std::mem::forget(held); // what the old code would release or hang on
            return code;
        }
        let (c, rguard, lguard, permit, mguard) = held;
        // Drop everything inherited, as a pre-fork worker's clean-up would: nothing released.
        drop((rguard, lguard, permit, mguard));
        c.close();
        drop(c);
        0
    });
    assert_eq!(end, ChildEnd::Exited(0));
    let (c, rguard, lguard, permit, mguard) = inherited.into_inner().unwrap();
    // The parent's client still works, waits through its runtime included: the child's
    // drops closed none of its connections (their sockets share the parent's epoll).
    let started = Instant::now();
    let r = c.lock("fork:l").wait(Duration::from_millis(300)).acquire();
    assert_eq!(r.map(|_| ()).map_err(|e| e.kind()), Err(ErrorKind::NotAcquired));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The parent still holds all of it.
    assert!(rguard.owned().unwrap());
    assert!(lguard.owned().unwrap());
    assert_eq!(sem.available().unwrap(), 0);
    rguard.release().expect("the parent's reentrant hold is intact");
    lguard.release().expect("the parent's lease hold is intact");
    permit.release().expect("the parent's permit is intact");
    mguard.release().expect("the parent's multi-lock is intact");
}

#[test]
fn forked_child_calls_on_the_parents_blocking_client_fail_at_once() {
    let s = server();
    let url = s.url();
    let c = blocking::Client::connect(&url).expect("connect");
    let busy = c
        .lock("fork:busy")
        .lease(Duration::from_secs(30))
        .acquire()
        .unwrap();
    let end = in_forked_child(DEADLINE, || {
        let started = Instant::now();
        // Contended: it would wait on the parent's runtime worker, which is not here.
        let r = c
            .lock("fork:busy")
            .lease(Duration::from_secs(5))
            .wait(Duration::from_secs(2))
            .acquire();
        if !matches!(r, Err(e) if e.kind() == ErrorKind::InvalidArgument) {
            return 1;
        }
        let r = c.lock("fork:free").try_acquire();
        if !matches!(r, Err(e) if e.kind() == ErrorKind::InvalidArgument) {
            return 2;
        }
        if started.elapsed() > Duration::from_secs(1) {
            return 3;
        }
        // A client made in the child works.
        let Ok(fresh) = blocking::Client::connect(&url) else {
            return 4;
        };
        let Ok(g) = fresh.lock("fork:free").lease(Duration::from_secs(5)).acquire() else {
            return 5;
        };
        if g.release().is_err() {
            return 6;
        }
        if !matches!(fresh.lock("fork:busy").try_acquire(), Ok(None)) {
            return 7;
        }
        drop(c);
        0
    });
    assert_eq!(end, ChildEnd::Exited(0));
    assert!(busy.owned().unwrap());
    busy.release().unwrap();
}

#[test]
fn forked_child_does_not_own_an_async_guard() {
    let s = server();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let c = rt.block_on(client(&s));
    let guard = rt
        .block_on(c.lock("fork:a").lease(Duration::from_secs(30)).acquire())
        .unwrap();
    let inherited = RefCell::new(Some((guard, c, rt)));
    let end = in_forked_child(DEADLINE, || {
        let (guard, c, rt) = inherited.borrow_mut().take().unwrap();
        // Never dropped here: the parent's runtime (its shutdown would wait for threads
        // that do not exist in the child).
        std::mem::forget((c, rt));
        let code = (|| {
            if !guard.is_inherited() || guard.is_held() {
                return 1;
            }
            // Each answers before anything touches Redis or the parent's runtime.
            if !matches!(futures::executor::block_on(guard.owned()), Ok(false)) {
                return 2;
            }
            if !inherited_refusal(futures::executor::block_on(guard.release())) {
                return 3;
            }
            if !inherited_refusal(futures::executor::block_on(guard.extend(Duration::from_secs(5)))) {
                return 4;
            }
            0
        })();
        if code != 0 {
            std::mem::forget(guard);
            return code;
        }
        drop(guard);
        0
    });
    assert_eq!(end, ChildEnd::Exited(0));
    let (guard, _c, rt) = inherited.into_inner().unwrap();
    assert!(!guard.is_inherited());
    assert!(rt.block_on(guard.owned()).unwrap());
    rt.block_on(guard.release()).unwrap();
}
