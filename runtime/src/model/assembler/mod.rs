//! Assemblers: pure state machines that turn the events of one streamed response into a clean
//! assistant message, whatever quirks the provider's stream has.
//!
//! V2 (arguments parsed only once a call is complete; late deltas ignored; a block created
//! when a provider sends only deltas; recognisable defaults for a missing id or name), V1 and B2
//! (finish reason and body decide the outcome; a length cut blocks every call). No I/O and no
//! clock here: the transport (`model::http`) feeds decoded SSE events in, and tests feed
//! hand-written transcripts the same way.
//!
//! `openai` and `anthropic` read their wire format; `draft` holds what both accumulate; `calls`
//! builds tool calls from deltas; `outcome` decides finish, outcome and which calls may run.

mod anthropic;
mod calls;
mod diagnostics;
mod draft;
mod openai;
mod openai_wire;
mod outcome;

pub use anthropic::AnthropicAssembler;
pub use openai::OpenAiAssembler;

use super::error::ModelError;
use super::types::{AssistantMessage, Delta, PartialOutput};

/// Whether the stream should be read further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Continue,
    /// The provider marked the end (`[DONE]`, `message_stop`): stop reading.
    Done,
}

/// One wire format's assembler. Feed it every SSE event, then call `finish`.
pub trait WireAssembler {
    /// Takes one SSE event (its `event:` name and joined `data:` lines) and appends what it
    /// contributed for display to `out`. An error object from the provider is an `Err`.
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Delta>,
    ) -> Result<Step, ModelError>;

    /// The 1-based line of the response body the next event began on, when the transport
    /// knows it, so that messages about that event can name it.
    fn at_line(&mut self, line: usize);

    /// Records that the transport replaced invalid UTF-8 bytes before decoding.
    fn note_invalid_utf8(&mut self, bytes_replaced: usize);

    /// What has arrived so far, for display when the attempt fails (never committed, L3).
    fn partial(&self) -> PartialOutput;

    /// Ends the stream and builds the message. Fails only if nothing usable arrived.
    fn finish(self) -> Result<AssistantMessage, ModelError>;
}

/// The start of a line for a diagnostic, cut on a character boundary.
fn sample(data: &str) -> String {
    let mut end = data.len().min(120);
    while !data.is_char_boundary(end) {
        end -= 1;
    }
    data[..end].to_owned()
}

#[cfg(test)]
mod anomaly_tests;
#[cfg(test)]
mod anthropic_tests;
#[cfg(test)]
mod openai_tests;
#[cfg(test)]
mod proptests;
