//! The session log (L1, L2, L5-L8): an append-only JSONL file of typed events, from which
//! the history is derived and from which `resume` recovers.
//!
//! Map: `event` (the event types, stop reasons, inbox lanes), `file` (the writer: whole lines
//! only, fsync, atomic creation), `read` (the reader: a torn last line is reported, anything
//! else wrong is refused), `check` (sequence and pairing invariants), `history` (derive the
//! history in the calls' order, compactions applied; and render it as sent, results aged
//! in batches that keep the cached prefix, kept up to date between requests), `quote` (model
//! text framed by paddock cannot carry paddock's markers), `ageing` (which old results age
//! out to a stub, and where they spill), `state` (history, spending and turns kept up to date
//! event by event), `stream` (the log read for `resume` without keeping every event), `index`
//! (the per-session index `log --list` reads), `recover` (what a crash left owing, call by
//! call), `lock` (one writer per session), `session` (the log as the loop shares it), `atif`
//! (the log as an ATIF-v1.8 trajectory, its types in `atif_schema`).

mod ageing;
mod atif;
mod atif_schema;
mod blobs;
mod check;
mod event;
mod file;
mod history;
mod index;
mod lock;
mod quote;
mod read;
mod recover;
mod session;
mod shells;
mod state;
mod stream;
#[cfg(test)]
pub(crate) mod test_session;

pub use ageing::{aged_spill_name, file_safe};
#[cfg(any(test, feature = "internals"))]
pub use atif::trajectory;
pub use atif::{trajectory_of_log, write_trajectory};
#[cfg(any(test, feature = "internals"))]
pub use atif_schema::Trajectory;
pub use blobs::{BLOBS_DIR, Blobs};
pub use event::{
    Asked, Body, ChildSpent, CompactReason, Event, ForkLink, InstructionRecord, Lane, LayerRecord,
    PresetSwitch,
    LoggedRepair, ParentLink, PluginHash, SessionStart, SkillsRecord, Source, StopReason, Touches,
};
pub use file::LogWriter;
#[cfg(any(test, feature = "internals"))]
pub use history::TASK_HEADER;
pub use history::{History, estimate_tokens};
pub use index::{CLIENT_MODELS, SessionIndex, session_index};
pub use lock::{LockError, SessionLock, Wait, recorded_holder};
pub use quote::quote_markers;
pub use read::read_log;
#[cfg(any(test, feature = "internals"))]
pub use recover::{OUTCOME_UNKNOWN, recover};
pub use recover::{Recovery, Settle, client_gone, cut_before_call, recover_tail};
pub use session::{SessionLog, Tap};
#[cfg(any(test, feature = "internals"))]
pub use state::SessionState;
#[cfg(not(any(test, feature = "internals")))]
pub(crate) use state::SessionState;
pub use state::{Spent, TurnMark, rewound_ranges};
pub use stream::{Streamed, stream_log};

/// The log's file name inside a session directory.
pub const LOG_FILE: &str = "events.jsonl";
