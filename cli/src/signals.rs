//! What a signal does to a command (X2, and the headless contract of docs/json-events.md):
//! Ctrl-C (SIGINT) interrupts the running turn; SIGTERM and SIGHUP (what `timeout`, CI runners
//! and Kubernetes send, and a closed terminal) end the session the same way, its turn logged
//! `terminated`, so `run --json` still ends with its `result` line and exits 143. A second
//! SIGTERM or SIGHUP exits at once (143), for a caller that will not wait.
//!
//! `catch_early` counts the signals from the first moment of `main` (before the async runtime
//! exists), so one that arrives during set-up ends the session as soon as it starts instead of
//! killing the process with nothing written. The handlers tokio registers later call it too.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::Exit;
use paddock::session::{Interrupter, Session};

/// The session a termination ends, once there is one.
static SESSION: OnceLock<Interrupter> = OnceLock::new();

/// SIGTERM and SIGHUP received since `catch_early`.
static SEEN: AtomicU32 = AtomicU32::new(0);

extern "C" fn count(_signal: libc::c_int) {
    // Async-signal-safe: one atomic add.
    SEEN.fetch_add(1, Ordering::SeqCst);
}

/// Counts SIGTERM and SIGHUP from now on instead of dying of them (call it first thing, in a
/// command that runs a session, before any thread exists).
pub(super) fn catch_early() {
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: called before any other thread exists; `count` only does an atomic add,
        // which is async-signal-safe; a zeroed `sigaction` with its handler set is valid.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = count as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Acts on SIGTERM and SIGHUP from now on (call it in the async runtime, before the session
/// starts): the first ends the session (`terminated`), a second exits at once.
pub(super) fn listen_for_termination() {
    let streams = [SignalKind::terminate(), SignalKind::hangup()].map(signal);
    let [Ok(mut term), Ok(mut hup)] = streams else {
        tracing::warn!("cannot listen for SIGTERM and SIGHUP; they end the session unlogged");
        return;
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            if SEEN.load(Ordering::SeqCst) >= 2 {
                std::process::exit(Exit::Terminated as i32);
            }
            if let Some(session) = SESSION.get() {
                session.terminate();
            }
        }
    });
}

/// Ctrl-C interrupts `session`'s running turn; SIGTERM or SIGHUP (see
/// `listen_for_termination`) ends it, also one that arrived while it was being set up.
pub(super) fn watch(session: &Session) {
    let interrupter = session.interrupter();
    if SESSION.set(interrupter.clone()).is_ok() && SEEN.load(Ordering::SeqCst) >= 1 {
        interrupter.terminate();
    }
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupter.interrupt();
        }
    });
}

/// Cancels `cancel` on Ctrl-C (X2).
pub(super) fn cancel_on_ctrl_c(cancel: &CancellationToken) {
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
}
