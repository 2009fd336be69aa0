//! The session log (SPEC L1, L2, L5-L8): an append-only JSONL file of typed events, from which
//! the history is derived and from which `resume` recovers.
//!
//! Map: `event` (the event types, stop reasons, inbox lanes), `file` (the writer: whole lines
//! only, fsync, atomic creation), `read` (the reader: a torn last line is reported, anything
//! else wrong is refused), `check` (sequence and pairing invariants), `history` (derive the
//! history in the calls' order), `recover` (what a crash left owing, call by call), `lock` (one
//! writer per session), `session` (the log as the loop shares it).

mod check;
mod event;
mod file;
mod history;
mod lock;
mod read;
mod recover;
mod session;

pub use event::{Body, Event, Lane, PluginHash, SessionStart, Source, StopReason, Touches};
pub use file::LogWriter;
pub use history::{derive_history, has_task};
pub use lock::{LOCK_FILE, LockError, SessionLock, Wait};
pub use read::{LogError, LogRead, read_log};
pub use recover::{OUTCOME_UNKNOWN, Recovery, Settle, recover};
pub use session::SessionLog;

/// The log's file name inside a session directory.
pub const LOG_FILE: &str = "events.jsonl";
