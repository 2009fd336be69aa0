//! Which connections `paddock mcp serve --listen` keeps, so that clients without the token
//! cannot crowd out one with it:
//!
//! - at most [`MAX_CONNECTIONS`] open at once; at the limit, a new connection evicts the oldest
//!   one that has not yet sent a request with the token (a client with the token sends its
//!   request at once, so only idle or refused connections are evicted), and is itself closed if
//!   every open connection is authenticated;
//! - an accept error backs off (a listener whose accept fails stays readable: retrying at once
//!   spins) and is logged at most once per [`LOG_EVERY`], with the count since the last line;
//!   when the error is the descriptor limit, the oldest unauthenticated connection is evicted
//!   to make room;
//! - `RLIMIT_NOFILE`'s soft limit raised to the hard limit at start.
//!
//! The header-read timeout that closes connections sending nothing is hyper's (`mcp_http.rs`).

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// Connections open at once.
pub(super) const MAX_CONNECTIONS: usize = 256;
/// The first pause after an accept error; doubled on each error in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(5);
/// The longest pause after an accept error.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// At most one log line about accept errors per this long.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The open connections, oldest first (ids only grow).
#[derive(Default)]
pub(super) struct Admission {
    state: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next: u64,
    slots: BTreeMap<u64, Slot>,
}

struct Slot {
    authenticated: bool,
    evict: CancellationToken,
}

/// One admitted connection: its slot is freed when this is dropped.
pub(super) struct Ticket {
    id: u64,
    evicted: CancellationToken,
    admission: Arc<Admission>,
}

impl Admission {
    fn open(&self) -> MutexGuard<'_, Open> {
        // A panic while holding the lock leaves the map consistent: every change is one insert
        // or remove.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a connection just accepted, evicting the oldest unauthenticated one at the
    /// limit; `None` (close the new one) when every open connection is authenticated.
    pub(super) fn admit(self: &Arc<Self>) -> Option<Ticket> {
        let mut open = self.open();
        if open.slots.len() >= MAX_CONNECTIONS && !evict_oldest(&mut open) {
            return None;
        }
        let id = open.next;
        open.next += 1;
        let evicted = CancellationToken::new();
        open.slots.insert(
            id,
            Slot {
                authenticated: false,
                evict: evicted.clone(),
            },
        );
        Some(Ticket {
            id,
            evicted,
            admission: self.clone(),
        })
    }

    /// Closes the oldest unauthenticated connection, if any (to free a descriptor).
    pub(super) fn evict_one(&self) -> bool {
        evict_oldest(&mut self.open())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.open().slots.len()
    }
}

fn evict_oldest(open: &mut Open) -> bool {
    let Some(id) = open
        .slots
        .iter()
        .find(|(_, slot)| !slot.authenticated)
        .map(|(id, _)| *id)
    else {
        return false;
    };
    if let Some(slot) = open.slots.remove(&id) {
        slot.evict.cancel();
    }
    true
}

impl Ticket {
    /// The connection sent a request with the token: it is never evicted.
    pub(super) fn authenticated(&self) {
        if let Some(slot) = self.admission.open().slots.get_mut(&self.id) {
            slot.authenticated = true;
        }
    }

    /// Resolves when the connection was evicted: the caller drops it, closing the socket.
    pub(super) async fn evicted(&self) {
        self.evicted.cancelled().await
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.open().slots.remove(&self.id);
    }
}

/// Accept errors in a row and when they were last logged.
#[derive(Default)]
pub(super) struct AcceptErrors {
    in_a_row: u32,
    last_line: Option<Instant>,
    unlogged: u64,
}

impl AcceptErrors {
    /// An accept succeeded: the next error starts from the shortest pause.
    pub(super) fn accepted(&mut self) {
        self.in_a_row = 0;
    }

    /// An accept failed with `error`: logs it if no line was written in the last
    /// [`LOG_EVERY`], evicts a connection if descriptors ran out, and returns how long to pause
    /// before accepting again.
    pub(super) fn failed(&mut self, error: &io::Error, admission: &Admission) -> Duration {
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last_line
            .is_none_or(|last| now.duration_since(last) >= LOG_EVERY)
        {
            let others = self.unlogged - 1;
            let more = if others == 0 {
                String::new()
            } else {
                format!(" ({others} more since the last such line)")
            };
            tracing::warn!(
                "mcp serve: cannot accept connections: {error}{more}; backing off, at most one \
                 line a minute"
            );
            self.last_line = Some(now);
            self.unlogged = 0;
        }
        if out_of_descriptors(error) {
            admission.evict_one();
        }
        let pause = FIRST_BACKOFF.saturating_mul(1u32 << self.in_a_row.min(16));
        self.in_a_row = self.in_a_row.saturating_add(1);
        pause.min(MAX_BACKOFF)
    }
}

fn out_of_descriptors(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// An accept error that concerns one connection only (it is gone): accept the next at once.
pub(super) fn per_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit, so the connection limit, not the
/// descriptor limit, is what a flood meets first. Failing is not fatal: the limits above still
/// hold.
pub(super) fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, which lives on this stack frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    if limit.rlim_cur >= limit.rlim_max {
        return;
    }
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: setrlimit reads the struct it is given; raising the soft limit up to the hard
    // one needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        tracing::debug!(
            "mcp serve: cannot raise the descriptor limit: {}",
            io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_limit_the_oldest_unauthenticated_connection_is_evicted() {
        let admission = Arc::new(Admission::default());
        let first = admission.admit().expect("room");
        first.authenticated();
        let second = admission.admit().expect("room");
        let mut rest: Vec<Ticket> = (2..MAX_CONNECTIONS)
            .map(|_| admission.admit().expect("room"))
            .collect();
        assert_eq!(admission.len(), MAX_CONNECTIONS);
        let newest = admission.admit().expect("evicts one");
        assert!(second.evicted.is_cancelled(), "the oldest idle one goes");
        assert!(!first.evicted.is_cancelled(), "an authenticated one stays");
        assert_eq!(admission.len(), MAX_CONNECTIONS);
        drop(second);
        assert_eq!(
            admission.len(),
            MAX_CONNECTIONS,
            "its slot was already freed"
        );
        // All authenticated: a new connection is refused instead.
        newest.authenticated();
        rest.iter().for_each(Ticket::authenticated);
        assert!(admission.admit().is_none());
        assert!(!admission.evict_one());
        rest.pop();
        assert!(admission.admit().is_some());
    }

    #[test]
    fn accept_errors_back_off_and_log_once() {
        let admission = Admission::default();
        let mut errors = AcceptErrors::default();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let pauses: Vec<Duration> = (0..12)
            .map(|_| errors.failed(&emfile, &admission))
            .collect();
        assert_eq!(pauses[0], FIRST_BACKOFF);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]), "{pauses:?}");
        assert_eq!(*pauses.last().unwrap(), MAX_BACKOFF);
        assert_eq!(errors.unlogged, 11, "one line for twelve errors");
        errors.accepted();
        assert_eq!(errors.failed(&emfile, &admission), FIRST_BACKOFF);
        assert!(per_connection(&io::Error::from(
            io::ErrorKind::ConnectionAborted
        )));
        assert!(!per_connection(&emfile));
    }
}
