//! [`in_forked_child`]: runs a closure in a forked child process, for tests of the fork rule
//! (shared/API.md, "Fork": a child neither owns nor renews its parent's holds).

use std::time::{Duration, Instant};

/// How a forked child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildEnd {
    /// It exited with this code (the closure's return value, 101 if it panicked).
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// It was still running at the deadline and was killed (`SIGKILL`): a hang.
    Hung,
}

/// Forks; the child runs `child` and exits with its return value at once (`_exit`: no
/// destructors, no exit handlers, as a pre-fork worker that calls `_exit` would), and the
/// parent waits for it up to `deadline`, killing it after that.
///
/// Only the calling thread exists in the child, so `child` must not wait for anything another
/// thread of the parent held at the fork (the test's own locks, a stderr lock in use): keep the
/// test that calls this alone in its binary, or keep other threads quiet meanwhile.
#[allow(unsafe_code)]
pub fn in_forked_child(deadline: Duration, child: impl FnOnce() -> i32) -> ChildEnd {
    // SAFETY: fork(2) has no memory-safety preconditions; the child only runs `child` and
    // `_exit`s, never returning into the caller's frames.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(101);
        // SAFETY: _exit(2) ends the process; nothing runs after it.
        unsafe { libc::_exit(code) };
    }
    let started = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: `pid` is our own child, not yet reaped; `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            break;
        }
        if started.elapsed() > deadline {
            // SAFETY: our own child, not yet reaped (so its pid cannot have been reused).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return ChildEnd::Hung;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if libc::WIFEXITED(status) {
        ChildEnd::Exited(libc::WEXITSTATUS(status))
    } else {
        ChildEnd::Signaled(libc::WTERMSIG(status))
    }
}
