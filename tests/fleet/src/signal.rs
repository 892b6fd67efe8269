//! The only unsafe code in the harness: `kill(2)` by pid. Callers must hold the process's
//! `Child` un-reaped (checked with `try_wait`) while signalling, so the pid cannot have been
//! reused by another process.

use std::io;

/// `SIGSTOP`: freezes a process (a "GC pause" or a stalled Redis node).
pub(crate) const STOP: libc::c_int = libc::SIGSTOP;
/// `SIGCONT`: resumes a stopped process.
pub(crate) const CONT: libc::c_int = libc::SIGCONT;
/// `SIGTERM`: asks for a clean shutdown.
pub(crate) const TERM: libc::c_int = libc::SIGTERM;

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
