//! What the scripted server answers: one step per request, in order. A step is a reply (text,
//! tool calls split at chosen points, a finish reason, usage, optional faults) or an HTTP error
//! status. Scripts are plain data (serde), so the binary can read them from a JSON file.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A streamed reply in the wire format of the endpoint that was called.
    Reply(Turn),
    /// An HTTP error instead of a stream.
    Status {
        status: u16,
        #[serde(default)]
        body: String,
        /// Sent as `retry-after` (seconds).
        #[serde(default)]
        retry_after_secs: Option<u64>,
        /// Sent as `retry-after-ms`.
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
}

/// Finish reasons in neutral words; each wire format spells them its own way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptFinish {
    Stop,
    ToolCalls,
    Length,
    ContentFilter,
    Refusal,
    /// Sent exactly as written.
    Raw(String),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Text pieces, one chunk each.
    #[serde(default)]
    pub text: Vec<String>,
    #[serde(default)]
    pub calls: Vec<ScriptCall>,
    /// `None` sends no finish reason at all.
    #[serde(default)]
    pub finish: Option<ScriptFinish>,
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// Lines sent verbatim after the first frame (not JSON, comments, anything).
    #[serde(default)]
    pub garbage: Vec<String>,
    /// Leave out the end marker (`[DONE]`, `message_stop`).
    #[serde(default)]
    pub omit_end: bool,
    /// Pause between frames, in milliseconds.
    #[serde(default)]
    pub frame_delay_ms: u64,
    #[serde(default)]
    pub fault: Option<Fault>,
    /// Reasoning pieces, one chunk each, before the text: OpenAI-compatible
    /// `reasoning_content` deltas, or one Anthropic thinking block.
    #[serde(default)]
    pub reasoning: Vec<String>,
    /// Anthropic: the thinking block's signature, sent as its last delta.
    #[serde(default)]
    pub signature: Option<String>,
    /// Anthropic: a `redacted_thinking` block with this data, after the thinking block.
    #[serde(default)]
    pub redacted: Option<String>,
    /// When set, these frames are sent verbatim instead of rendering the fields above.
    #[serde(default)]
    pub raw: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// `None` sends no id (a quirk some servers have).
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// The complete argument text (JSON or, for a length cut, not).
    pub arguments: String,
    /// Byte offsets where the argument text is cut into separate chunks.
    #[serde(default)]
    pub split_at: Vec<usize>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    pub input: u64,
    pub output: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// Close the connection abruptly after this many frames.
    DropAfter { frames: usize },
    /// Send nothing for `ms` after this many frames, then go on.
    StallAfter { frames: usize, ms: u64 },
    /// After this many frames, send an OpenAI text delta every `every_ms`, forever: a model
    /// that rambles and a server with no output limit (OpenAI wire only).
    Endless { frames: usize, every_ms: u64 },
}

impl Turn {
    pub fn text(pieces: &[&str]) -> Turn {
        Turn {
            text: pieces.iter().map(|p| p.to_string()).collect(),
            finish: Some(ScriptFinish::Stop),
            usage: Some(ScriptUsage {
                input: 10,
                output: 5,
            }),
            ..Turn::default()
        }
    }

    pub fn calls(calls: Vec<ScriptCall>) -> Turn {
        Turn {
            calls,
            finish: Some(ScriptFinish::ToolCalls),
            usage: Some(ScriptUsage {
                input: 10,
                output: 5,
            }),
            ..Turn::default()
        }
    }

    pub fn with_fault(mut self, fault: Fault) -> Turn {
        self.fault = Some(fault);
        self
    }
}

impl ScriptCall {
    pub fn new(id: &str, name: &str, arguments: &str, split_at: &[usize]) -> ScriptCall {
        ScriptCall {
            id: Some(id.to_owned()),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            split_at: split_at.to_vec(),
        }
    }

    /// The argument text cut at `split_at` (offsets not on a character boundary are skipped).
    pub fn pieces(&self) -> Vec<&str> {
        let mut cuts: Vec<usize> = self
            .split_at
            .iter()
            .copied()
            .filter(|&c| c > 0 && c < self.arguments.len() && self.arguments.is_char_boundary(c))
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([self.arguments.len()]) {
            pieces.push(&self.arguments[from..cut]);
            from = cut;
        }
        pieces
    }
}
