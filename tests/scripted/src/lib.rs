//! The scripted model server: speaks OpenAI Chat Completions and Anthropic Messages over SSE on
//! 127.0.0.1 (an ephemeral port), follows a script of turns, misbehaves on request (429 with
//! `retry-after`, 500, a connection dropped mid-stream, a stalled stream, garbage lines, a
//! `length` cut, a stream that never ends), imitates real servers' quirks on request (`quirks`)
//! and records every request it receives.
//!
//! M1 (providers tested through real HTTP on loopback). `script` is the data, `wire` turns
//! a turn into frames, `server` is the HTTP side.

mod quirks;
mod script;
mod server;
mod wire;

pub use quirks::{Quirks, null_content_error};
pub use script::{Fault, Script, ScriptCall, ScriptFinish, ScriptUsage, Step, Turn};
pub use server::{RecordedRequest, Responder, ScriptedServer};
pub use wire::{anthropic_frames, openai_frames};
