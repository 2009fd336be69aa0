//! The session log (SPEC L1, L2, L5): an append-only JSONL file of typed events, from which
//! the history is derived and from which `resume` recovers.
//!
//! Map: `event` (the event types, stop reasons, inbox lanes), `file` (writer with fsync, reader
//! that drops a torn last line), `history` (derive the history; recovery per L2).

mod event;
mod file;
mod history;

pub use event::{Body, Event, Lane, PluginHash, SessionStart, Source, StopReason};
pub use file::{LogError, LogRead, LogWriter, read_log};
pub use history::{OUTCOME_UNKNOWN, Recovery, derive_history, recover};

/// The log's file name inside a session directory.
pub const LOG_FILE: &str = "events.jsonl";

mod session;
pub use session::SessionLog;
