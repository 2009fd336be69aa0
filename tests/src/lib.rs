//! End-to-end test support for paddock. `scripted` is the scripted model server every
//! end-to-end test talks to (M1: providers are tested through real HTTP on loopback);
//! `plugins` finds the built plugins and runs them in a shared sandbox; `pty` runs the binary
//! on a pseudo-terminal; `crash` is the crash harness (`cargo xtask crash N`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod crash;
pub mod plugins;
pub mod pty;
pub use paddock_scripted as scripted;

pub use plugins::{grant, load, plugin_bytes, plugin_dir, resolve_preset, sandbox};

/// Sends `signal` to the process `pid` (a child the test started and has not reaped yet, so
/// the number still names it) at once, from the test itself, and fails the test if it cannot:
/// not through a `kill` program, whose start can lag far behind the moment a test asked for on
/// a loaded machine and whose failure would go unseen (a signal never sent reads as one the
/// process ignored).
pub fn send_signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid fits pid_t");
    // SAFETY: `kill` has no memory preconditions.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(
        sent,
        0,
        "cannot send signal {signal} to pid {pid}: {}",
        std::io::Error::last_os_error()
    );
}
