//! What a signal does to a command (X2, and the headless contract of docs/json-events.md):
//! Ctrl-C (SIGINT) interrupts the running turn (`interrupted`, exit 130); SIGTERM and SIGHUP
//! (what `timeout`, CI runners and Kubernetes send, and a closed terminal) end the session the
//! same way, its turn logged `terminated`, so `run --json` still ends with its `result` line and
//! exits 143. A second signal of either kind before the session has started exits at once, for
//! a caller that will not wait; a second SIGTERM or SIGHUP always does.
//!
//! `catch_early` counts the three signals from the first instruction of `main` (before the
//! command line is parsed or the async runtime exists), so one that arrives during set-up ends
//! the session as soon as its first turn is set up instead of killing the process with nothing
//! written. The handlers tokio registers later call it too, so the counts stay whole. Commands
//! that run no session give the signals back (`release_early`).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::Exit;
use paddock::session::{Interrupter, Session};

/// The session a signal interrupts or ends, once there is one.
static SESSION: OnceLock<Interrupter> = OnceLock::new();

/// SIGTERM and SIGHUP received since `catch_early`.
static TERMINATIONS: AtomicU32 = AtomicU32::new(0);

/// SIGINT received since `catch_early`.
static INTERRUPTS: AtomicU32 = AtomicU32::new(0);

/// The signals `catch_early` counts.
const CAUGHT: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn count(signal: libc::c_int) {
    // Async-signal-safe: one atomic add.
    match signal {
        libc::SIGINT => INTERRUPTS.fetch_add(1, Ordering::SeqCst),
        _ => TERMINATIONS.fetch_add(1, Ordering::SeqCst),
    };
}

/// Counts SIGINT, SIGTERM and SIGHUP from now on instead of dying of them (call it first
/// thing in `main`, before any thread exists).
pub(super) fn catch_early() {
    for signal in CAUGHT {
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

/// For a command that runs no session: the signals act as they would have without
/// `catch_early`, and one already counted does so now (the process dies of it, as its caller
/// expects). Call it before any thread exists.
pub(super) fn release_early() {
    for signal in CAUGHT {
        // SAFETY: called before any other thread exists; restoring the default action has no
        // other precondition.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    let pending = [
        (libc::SIGINT, INTERRUPTS.load(Ordering::SeqCst)),
        (libc::SIGTERM, TERMINATIONS.load(Ordering::SeqCst)),
    ];
    for (signal, seen) in pending {
        if seen > 0 {
            // SAFETY: raising a signal whose action is the default has no precondition; the
            // process ends of it here.
            unsafe {
                libc::raise(signal);
            }
        }
    }
}

/// Acts on the signals from now on (call it in the async runtime, as the command starts): the
/// first SIGINT interrupts the session's turn, the first SIGTERM or SIGHUP ends the session; a
/// second one before there is a session, or a second SIGTERM or SIGHUP at any time, exits at
/// once.
pub(super) fn listen() {
    let streams = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .map(signal);
    let [Ok(mut int), Ok(mut term), Ok(mut hup)] = streams else {
        tracing::warn!(
            "cannot listen for SIGINT, SIGTERM and SIGHUP; they end the session unlogged"
        );
        return;
    };
    tokio::spawn(async move {
        loop {
            let interrupt = tokio::select! {
                _ = int.recv() => true,
                _ = term.recv() => false,
                _ = hup.recv() => false,
            };
            let session = SESSION.get();
            let (count, exit) = match interrupt {
                true => (&INTERRUPTS, Exit::Interrupted),
                false => (&TERMINATIONS, Exit::Terminated),
            };
            let again = count.load(Ordering::SeqCst) >= 2;
            if again && (!interrupt || session.is_none()) {
                std::process::exit(exit as i32);
            }
            match (session, interrupt) {
                (Some(session), true) => session.interrupt(),
                (Some(session), false) => session.terminate(),
                // Counted: `watch` and `deliver_early` act on it once the session exists.
                (None, _) => {}
            }
        }
    });
}

/// The signals reach `session` from now on; a SIGTERM or SIGHUP that arrived while it was
/// being set up ends it now. Call `deliver_early` once its first turn is set up.
pub(super) fn watch(session: &Session) {
    let interrupter = session.interrupter();
    if SESSION.set(interrupter.clone()).is_ok() && TERMINATIONS.load(Ordering::SeqCst) >= 1 {
        interrupter.terminate();
    }
}

/// A Ctrl-C that arrived before the session's first turn was set up (while paddock started,
/// compiled, or recovered the log) interrupts that turn: call it between `Session::send` (or
/// `go_on`) and awaiting the turn.
pub(super) fn deliver_early(session: &Session) {
    if INTERRUPTS.load(Ordering::SeqCst) >= 1 {
        session.interrupt();
    }
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
