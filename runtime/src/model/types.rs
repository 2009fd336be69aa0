//! The values that cross the model boundary: the history sent to a provider, the tool list, the
//! events streamed back while an attempt runs, and the assistant message committed when it ends.
//!
//! M1 (provider input and output), L3 (every event carries its attempt id; partial output of
//! a failed attempt is a separate type that cannot be committed), V1 and B2 (`Finish` and
//! `Outcome`). Behaviour lives elsewhere: this module only defines shapes.

use serde::{Deserialize, Serialize};

use super::image::ImagePart;
use std::fmt;
use std::time::Duration;

/// One entry of the conversation history, in the order the model saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        text: String,
    },
    /// The user's text, and the images they attached (`run --image`, `/image`).
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImagePart>,
    },
    /// A committed assistant message: its text, the calls it made, and the reasoning the
    /// provider streamed before them (sent back where the provider requires it).
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<Reasoning>,
    },
    /// The result of one call, paired with it by `call_id`.
    Tool(ToolResultMessage),
}

/// A tool call as it is recorded in the history and sent back to the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The complete argument text exactly as the model produced it (JSON, or not).
    pub arguments: String,
}

/// The result of a tool call, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultMessage {
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
    /// Images the tool returned (`read_file` on a PNG, an MCP server's image content).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImagePart>,
}

impl Message {
    /// The user's `text`, without images.
    pub fn user(text: impl Into<String>) -> Message {
        Message::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// Reasoning a provider streamed with a message. Anthropic signs its thinking blocks and
/// requires them back, unchanged, in the assistant turn before the tool results that follow
/// (a redacted block is sent back as the opaque `data` it came as); OpenAI-compatible servers
/// stream `reasoning_content` or `reasoning` text, which is kept and not sent back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reasoning {
    /// Readable reasoning; `signature` is Anthropic's, when it sent one.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Anthropic's `redacted_thinking`: encrypted, shown to no one, sent back as it came.
    Redacted { data: String },
}

impl Reasoning {
    /// The readable text (empty for a redacted block).
    pub fn text(&self) -> &str {
        match self {
            Reasoning::Thinking { text, .. } => text,
            Reasoning::Redacted { .. } => "",
        }
    }

    /// Bytes it adds to a request, for the context estimate.
    pub fn bytes(&self) -> usize {
        match self {
            Reasoning::Thinking { text, signature } => {
                text.len() + signature.as_ref().map_or(0, String::len)
            }
            Reasoning::Redacted { data } => data.len(),
        }
    }
}

/// Reasoning as one text: readable blocks joined by blank lines, redacted ones named.
pub fn reasoning_text(reasoning: &[Reasoning]) -> String {
    reasoning
        .iter()
        .map(|r| match r {
            Reasoning::Thinking { text, .. } => text.as_str(),
            Reasoning::Redacted { .. } => "[redacted thinking]",
        })
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A tool offered to the model. The registry converts its tool specs to this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// Token counts reported by the provider, normalised across wire formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All prompt tokens, including those read from or written to a prompt cache.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

/// Why the provider stopped generating, as reported (or inferred, see `AssistantMessage`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    Stop,
    ToolCalls,
    /// Cut by the output-token limit (`length`, `max_tokens`).
    Length,
    ContentFilter,
    Refusal,
    Unknown(String),
}

/// What the loop should do with a finished message (B2: finish reason and body together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Text only, and it does not announce a tool call: the model is done.
    Completed,
    /// There are calls to run (each may still be individually blocked, see `AssembledCall`).
    ToolCalls,
    /// Cut by the output limit: no call may run (V1).
    Truncated,
    ContentFiltered,
    Refused,
    /// The model said it would call a tool but sent no call (for the loop's nudge, B1).
    DroppedToolCall,
}

/// The error text sent back for every call of a response cut by the output limit (V1).
pub const TRUNCATED_CALL_ERROR: &str = "arguments may be truncated; re-issue the complete call";
/// The error text for calls of a response stopped by a content filter or a refusal.
pub const STOPPED_CALL_ERROR: &str =
    "the response was stopped by the provider before it ended normally; the call was not executed";

/// A call produced by the assembler once its attempt ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssembledCall {
    pub call: ToolCall,
    /// `call.arguments` parsed as JSON, once, after the call was complete; `None` if it does not
    /// parse (repair is the next stage's job, V3).
    pub parsed: Option<serde_json::Value>,
    /// The provider sent no id; `call.id` is a generated, recognisable one.
    pub generated_id: bool,
    /// The provider sent no name; `call.name` is `MISSING_TOOL_NAME`.
    pub missing_name: bool,
    /// `Some(error text)` when this call must not run; the loop sends the text back as its result.
    pub not_executable: Option<String>,
}

/// The name given to a call whose provider sent none; no tool is registered under it.
pub const MISSING_TOOL_NAME: &str = "missing_tool_name";

/// Something odd the assembler saw and survived; recorded for the log, never fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Diagnostic {
    NonJsonData {
        /// The 1-based line of the body the data began on, when the transport knew it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line: Option<usize>,
        sample: String,
    },
    UnexpectedShape {
        sample: String,
    },
    InvalidUtf8 {
        bytes_replaced: usize,
    },
    MissingEndMarker,
    FinishInferred {
        finish: Finish,
    },
    LateDelta {
        index: i64,
    },
    RepeatedCall {
        id: String,
    },
    GeneratedCallId {
        id: String,
    },
    MissingCallName {
        id: String,
    },
    RepeatedMessageStart,
    UnknownEvent {
        name: String,
    },
    RefusalText,
    /// A legacy `function_call` delta repeated a `tool_calls` call (llama-cpp-python does);
    /// it was taken as that call, not as another. `id` is the call's (empty if it had none).
    MirroredFunctionCall {
        id: String,
    },
    /// Another response (chunks with another `id`) followed the one that finished, in the same
    /// body; it was ignored, its usage too: the usage recorded is the kept response's.
    SecondResponse {
        id: String,
    },
}

/// The committed assistant message of a completed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub attempt: AttemptId,
    pub text: String,
    pub calls: Vec<AssembledCall>,
    pub finish: Finish,
    /// The provider sent no finish reason; `finish` was decided from the body.
    pub finish_inferred: bool,
    /// What the provider streamed as reasoning, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    pub outcome: Outcome,
    pub usage: Option<Usage>,
    /// From `usage` and the price table; `None` when the model has no known price.
    pub cost_usd: Option<f64>,
    pub diagnostics: Vec<Diagnostic>,
}

impl AssistantMessage {
    /// The history entry for this message.
    pub fn to_history(&self) -> Message {
        Message::Assistant {
            text: self.text.clone(),
            tool_calls: self.calls.iter().map(|c| c.call.clone()).collect(),
            reasoning: self.reasoning.clone(),
        }
    }
}

/// Identifies one model request (one try); unique within a process run and across runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AttemptId(pub String);

impl fmt::Display for AttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    Streaming,
    Completed,
    Failed,
    Interrupted,
}

/// What a failed or interrupted attempt had produced: for display only, never committed (L3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartialOutput {
    pub text: String,
    /// Calls as far as they had arrived; arguments may be incomplete.
    pub calls: Vec<ToolCall>,
}

/// One piece of streamed output, as the assembler saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Delta {
    Text {
        text: String,
    },
    /// A new call began; `id` and `name` may still be empty here.
    CallStarted {
        index: usize,
        id: String,
        name: String,
    },
    CallArguments {
        index: usize,
        fragment: String,
    },
    /// Reasoning text, streamed before the answer (display only until committed).
    Reasoning {
        text: String,
    },
}

/// What a provider reports while it works. Every event names its attempt (L3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    AttemptStarted {
        attempt: AttemptId,
        number: u32,
    },
    Delta {
        attempt: AttemptId,
        delta: Delta,
    },
    /// The attempt ended. `partial` is set for failed and interrupted attempts.
    AttemptEnded {
        attempt: AttemptId,
        status: AttemptStatus,
        error: Option<String>,
        partial: Option<PartialOutput>,
        usage: Option<Usage>,
    },
    /// A failed attempt will be retried after `delay`.
    RetryScheduled {
        attempt: AttemptId,
        delay: Duration,
        reason: String,
    },
}

/// The record of one attempt, kept for the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub id: AttemptId,
    pub number: u32,
    pub status: AttemptStatus,
    pub error: Option<String>,
    pub partial: Option<PartialOutput>,
}

/// A finished model request: the committed message and every attempt it took.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub message: AssistantMessage,
    pub attempts: Vec<AttemptRecord>,
}
