//! The only unsafe code in the harness: `kill(2)` by pid. Callers must hold the process's
//! `Child` un-reaped (checked with `try_wait`) while signalling, so the pid cannot have been
//! reused by another process.

use std::io;
use std::process::Child;

/// `SIGSTOP`: freezes a process (a "GC pause" or a stalled Redis node).
pub(crate) const STOP: libc::c_int = libc::SIGSTOP;
/// `SIGCONT`: resumes a stopped process.
pub(crate) const CONT: libc::c_int = libc::SIGCONT;
/// `SIGTERM`: asks for a clean shutdown.
pub(crate) const TERM: libc::c_int = libc::SIGTERM;

/// A signal a test sends to a child process it started (see [`signal_child`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGSTOP`: freezes the process, like a long GC pause or a stalled VM.
    Stop,
    /// `SIGCONT`: resumes a stopped process.
    Cont,
    /// `SIGKILL`: a crash (no clean-up code runs).
    Kill,
    /// `SIGTERM`: asks for a clean exit.
    Term,
}

impl Signal {
    fn number(self) -> libc::c_int {
        match self {
            Signal::Stop => STOP,
            Signal::Cont => CONT,
            Signal::Kill => libc::SIGKILL,
            Signal::Term => TERM,
        }
    }
}

/// Sends `signal` to `child`, a process this test started, by pid. The child is checked to be
/// still un-reaped first (`try_wait`), so its pid cannot belong to another process.
///
/// # Errors
/// `NotConnected` if the child has already exited (it is reaped then), or the `kill(2)` error.
pub fn signal_child(child: &mut Child, signal: Signal) -> io::Result<()> {
    if child.try_wait()?.is_some() {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the process has already exited",
        ));
    }
    send(child.id(), signal.number())
}

/// Sends `sig` to `pid`.
#[allow(unsafe_code)]
pub(crate) fn send(pid: u32, sig: libc::c_int) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, sig) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
