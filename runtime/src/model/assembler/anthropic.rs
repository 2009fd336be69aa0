//! Assembles an Anthropic Messages stream (`stream: true`) into an assistant message.
//!
//! V2 and M1. Follows `message_start`, `content_block_start`/`_delta`/`_stop`,
//! `message_delta`, `message_stop`; keeps thinking blocks (text and signature) and
//! `redacted_thinking` blocks as the message's reasoning, in order; and survives: `ping`, an empty `partial_json` (`{}`), a
//! repeated `message_start` of the same message (ignored; another message's start is a protocol
//! error), deltas for a block that never started (created) or already stopped
//! (ignored), error events mid-stream, a missing `message_stop`, and the stop reasons
//! `max_tokens`, `refusal` and `tool_use`. A body with no event of this API (another API's
//! events, data that is not JSON) is a protocol error naming what arrived.

use super::calls::Fragment;
use super::draft::Draft;
use super::{Step, WireAssembler, sample};
use crate::model::error::{ModelError, transient_error_kind};
use crate::model::types::{
    AssistantMessage, AttemptId, Delta, Diagnostic, Finish, PartialOutput, Reasoning, Usage,
};
use serde::Deserialize;
use std::borrow::Cow;

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<i64>,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(borrow, default)]
    content_block: Option<Block<'a>>,
    #[serde(borrow, default)]
    delta: Option<EventDelta<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct MessageStart {
    id: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<serde_json::Value>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
    /// A `redacted_thinking` block's opaque content.
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct EventDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
}

/// Missing fields are `None` (serde's rule for `Option`).
#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

#[derive(Clone, Copy, PartialEq)]
enum BlockKind {
    Text,
    Tool,
    /// Thinking (readable or redacted): kept as the message's reasoning, not its text; the
    /// number is its place in `Draft::reasoning`.
    Thinking(usize),
    /// Anything newer: not part of the committed message.
    Other,
}

struct BlockState {
    index: i64,
    kind: BlockKind,
    stopped: bool,
}

/// Whether two block kinds are the same kind, whichever reasoning block each is.
fn same_kind(a: BlockKind, b: BlockKind) -> bool {
    std::mem::discriminant(&a) == std::mem::discriminant(&b)
}

/// The wire format's name in errors, and its events besides `ping` and `error`.
const WIRE: &str = "Anthropic Messages";
const KNOWN_EVENTS: [&str; 6] = [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
];

pub struct AnthropicAssembler {
    draft: Draft,
    blocks: Vec<BlockState>,
    stop_reason: Option<String>,
    usage: WireUsage,
    saw_usage: bool,
    saw_start: bool,
    /// The id in the first `message_start`: the message this stream is about.
    message_id: Option<String>,
    saw_event: bool,
    saw_stop: bool,
}

impl AnthropicAssembler {
    pub fn new(attempt: AttemptId) -> AnthropicAssembler {
        AnthropicAssembler {
            draft: Draft::new(attempt),
            blocks: Vec::new(),
            stop_reason: None,
            usage: WireUsage::default(),
            saw_usage: false,
            saw_start: false,
            message_id: None,
            saw_event: false,
            saw_stop: false,
        }
    }

    fn merge_usage(&mut self, usage: WireUsage) {
        self.saw_usage = true;
        let keep = |mine: &mut Option<u64>, theirs: Option<u64>| {
            if theirs.is_some() {
                *mine = theirs;
            }
        };
        keep(&mut self.usage.input_tokens, usage.input_tokens);
        keep(&mut self.usage.output_tokens, usage.output_tokens);
        keep(
            &mut self.usage.cache_creation_input_tokens,
            usage.cache_creation_input_tokens,
        );
        keep(
            &mut self.usage.cache_read_input_tokens,
            usage.cache_read_input_tokens,
        );
    }

    /// The block at `index`, created with `kind` if it never started.
    fn block(&mut self, index: i64, kind: BlockKind) -> &mut BlockState {
        let at = match self.blocks.iter().position(|b| b.index == index) {
            Some(at) => at,
            None => {
                self.blocks.push(BlockState {
                    index,
                    kind,
                    stopped: false,
                });
                self.blocks.len() - 1
            }
        };
        &mut self.blocks[at]
    }

    fn on_block_start(&mut self, index: i64, block: Block<'_>, out: &mut Vec<Delta>) {
        let next = self.draft.reasoning.len();
        let kind = match block.kind.as_deref() {
            Some("text") => BlockKind::Text,
            Some("tool_use") => BlockKind::Tool,
            Some("thinking" | "redacted_thinking") => BlockKind::Thinking(next),
            _ => BlockKind::Other,
        };
        let existed = self.blocks.iter().any(|b| b.index == index);
        if self.block(index, kind).stopped {
            self.draft.note(Diagnostic::LateDelta { index });
            return;
        }
        match kind {
            BlockKind::Text => self
                .draft
                .push_text(block.text.as_deref().unwrap_or_default(), out),
            BlockKind::Tool => {
                let fragment = Fragment {
                    key: index,
                    id: block.id.as_deref(),
                    name: block.name.as_deref(),
                    arguments: None,
                };
                self.draft
                    .calls
                    .apply(fragment, out, &mut self.draft.diagnostics);
                if let Some(input) = block
                    .input
                    .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                {
                    self.draft.calls.set_initial(index, input.to_string());
                }
            }
            // Its deltas came first and made it: only a signature may still be new.
            BlockKind::Thinking(_) if existed => self.sign(index, block.signature.as_deref()),
            BlockKind::Thinking(_) if block.kind.as_deref() == Some("redacted_thinking") => {
                let data = block.data.as_deref().unwrap_or_default().to_owned();
                self.draft.reasoning.push(Reasoning::Redacted { data });
            }
            BlockKind::Thinking(_) => {
                let text = block.thinking.as_deref().unwrap_or_default();
                self.draft.push_reasoning(text, true, out);
                self.sign(index, block.signature.as_deref());
            }
            BlockKind::Other => {}
        }
    }

    /// Adds a signature to the thinking block at `index` (it arrives as its last delta).
    fn sign(&mut self, index: i64, signature: Option<&str>) {
        let Some(signature) = signature.filter(|s| !s.is_empty()) else {
            return;
        };
        let slot = self.blocks.iter().find(|b| b.index == index).map(|b| b.kind);
        if let Some(BlockKind::Thinking(at)) = slot
            && let Some(Reasoning::Thinking { signature: mine, .. }) =
                self.draft.reasoning.get_mut(at)
        {
            mine.get_or_insert_with(String::new).push_str(signature);
        }
    }

    fn on_block_delta(&mut self, index: i64, delta: EventDelta<'_>, out: &mut Vec<Delta>) {
        let next = self.draft.reasoning.len();
        let kind = match delta.kind.as_deref() {
            Some("text_delta") => BlockKind::Text,
            Some("input_json_delta") => BlockKind::Tool,
            Some("thinking_delta" | "signature_delta") => BlockKind::Thinking(next),
            _ => BlockKind::Other,
        };
        let block = self.block(index, kind);
        if block.stopped {
            self.draft.note(Diagnostic::LateDelta { index });
            return;
        }
        let existing = block.kind;
        if existing == kind && matches!(kind, BlockKind::Thinking(_)) {
            // A thinking block that never started: created by its first delta.
            self.draft.reasoning.push(Reasoning::Thinking {
                text: String::new(),
                signature: None,
            });
        }
        match (existing, kind) {
            (BlockKind::Thinking(at), BlockKind::Thinking(_)) => {
                if let Some(text) = delta.thinking.as_deref().filter(|t| !t.is_empty())
                    && let Some(Reasoning::Thinking { text: mine, .. }) =
                        self.draft.reasoning.get_mut(at)
                {
                    mine.push_str(text);
                    out.push(Delta::Reasoning {
                        text: text.to_owned(),
                    });
                }
                self.sign(index, delta.signature.as_deref());
                return;
            }
            _ if !same_kind(existing, kind) => return,
            _ => {}
        }
        match (existing, kind) {
            (BlockKind::Text, BlockKind::Text) => self
                .draft
                .push_text(delta.text.as_deref().unwrap_or_default(), out),
            (BlockKind::Tool, BlockKind::Tool) => {
                let fragment = Fragment {
                    key: index,
                    id: None,
                    name: None,
                    arguments: delta.partial_json.as_deref(),
                };
                self.draft
                    .calls
                    .apply(fragment, out, &mut self.draft.diagnostics);
            }
            _ => {}
        }
    }

    /// A second `message_start`: the same message is ignored, usage too (it belongs to the kept
    /// one); another message's start is a spliced retry: nothing of this response may run.
    fn on_repeated_start(&mut self, id: Option<String>) -> Result<(), ModelError> {
        match (&self.message_id, id) {
            (Some(first), Some(second)) if *first != second => Err(ModelError::Protocol {
                wire: WIRE,
                detail: format!(
                    "a second message ({second}) started inside message {first}, a spliced \
                     retry; nothing from this response was run"
                ),
                retry: true,
            }),
            _ => {
                self.draft.note(Diagnostic::RepeatedMessageStart);
                Ok(())
            }
        }
    }

    fn stop_all(&mut self) {
        for block in &mut self.blocks {
            block.stopped = true;
        }
        self.draft.calls.close_all();
    }
}

/// Maps an Anthropic `stop_reason`.
pub fn finish_from_anthropic(reason: &str) -> Finish {
    match reason {
        "end_turn" | "stop_sequence" => Finish::Stop,
        "tool_use" => Finish::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => Finish::Length,
        "refusal" => Finish::Refusal,
        other => Finish::Unknown(other.to_owned()),
    }
}

impl WireAssembler for AnthropicAssembler {
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Delta>,
    ) -> Result<Step, ModelError> {
        if data.trim().is_empty() {
            return Ok(Step::Continue);
        }
        let Some(parsed) = self.draft.parse::<Event<'_>>(data) else {
            return Ok(Step::Continue);
        };
        let kind = parsed.kind.as_deref().unwrap_or(event);
        let index = parsed.index.unwrap_or(0);
        match kind {
            "ping" => return Ok(Step::Continue),
            "error" => {
                let error = parsed.error.unwrap_or(WireError {
                    kind: String::new(),
                    message: sample(data),
                });
                let retryable = transient_error_kind(&error.kind);
                return Err(ModelError::Provider {
                    kind: error.kind,
                    message: error.message,
                    retryable,
                });
            }
            _ => {}
        }
        if !KNOWN_EVENTS.contains(&kind) {
            self.draft
                .note(Diagnostic::UnknownEvent { name: sample(kind) });
            self.draft.note_unrecognized(data);
            return Ok(Step::Continue);
        }
        self.saw_event = true;
        match kind {
            "message_start" if self.saw_start => {
                let id = parsed.message.and_then(|m| m.id);
                self.on_repeated_start(id)?;
            }
            "message_start" => {
                self.saw_start = true;
                if let Some(message) = parsed.message {
                    self.message_id = message.id;
                    if let Some(usage) = message.usage {
                        self.merge_usage(usage);
                    }
                }
            }
            "content_block_start" => {
                if let Some(block) = parsed.content_block {
                    self.on_block_start(index, block, out);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = parsed.delta {
                    self.on_block_delta(index, delta, out);
                }
            }
            "content_block_stop" => {
                if let Some(block) = self.blocks.iter_mut().find(|b| b.index == index) {
                    block.stopped = true;
                }
                self.draft.calls.close(index);
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason.into_owned());
                    self.stop_all();
                }
                if let Some(usage) = parsed.usage {
                    self.merge_usage(usage);
                }
            }
            "message_stop" => {
                self.saw_stop = true;
                return Ok(Step::Done);
            }
            _ => {}
        }
        Ok(Step::Continue)
    }

    fn at_line(&mut self, line: usize) {
        self.draft.line = Some(line);
    }

    fn note_invalid_utf8(&mut self, bytes_replaced: usize) {
        self.draft.note(Diagnostic::InvalidUtf8 { bytes_replaced });
    }

    fn partial(&self) -> PartialOutput {
        self.draft.partial()
    }

    fn finish(mut self) -> Result<AssistantMessage, ModelError> {
        if !self.saw_event {
            return Err(self.draft.nothing_recognized(WIRE));
        }
        if !self.saw_stop {
            self.draft.note(Diagnostic::MissingEndMarker);
        }
        let usage = self.saw_usage.then(|| {
            let u = &self.usage;
            let read = u.cache_read_input_tokens.unwrap_or(0);
            let write = u.cache_creation_input_tokens.unwrap_or(0);
            Usage {
                input_tokens: u.input_tokens.unwrap_or(0) + read + write,
                output_tokens: u.output_tokens.unwrap_or(0),
                cache_read_tokens: read,
                cache_write_tokens: write,
            }
        });
        let finish = self.stop_reason.as_deref().map(finish_from_anthropic);
        Ok(self.draft.conclude(finish, usage, true))
    }
}
