//! The OpenAI Chat Completions chunk as it arrives on the wire (borrowed from the line where it
//! can be), and what a chunk means beyond its deltas: an error object sent as a chunk, and the
//! finish reasons of compatible servers (V2, M1).

use std::borrow::Cow;

use serde::Deserialize;

use crate::model::error::{ModelError, transient_error_kind};
use crate::model::types::Finish;

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) error: Option<serde_json::Value>,
    #[serde(borrow, default)]
    pub(super) object: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default)]
    pub(super) index: Option<u64>,
    #[serde(borrow, default)]
    pub(super) delta: Option<ChoiceDelta<'a>>,
    #[serde(borrow, default)]
    pub(super) finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct ChoiceDelta<'a> {
    #[serde(borrow, default)]
    pub(super) content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) refusal: Option<Cow<'a, str>>,
    /// Reasoning text: DeepSeek, vLLM and llama.cpp call it `reasoning_content`, OpenRouter
    /// and Ollama `reasoning`.
    #[serde(borrow, default)]
    pub(super) reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) tool_calls: Option<Vec<CallDelta<'a>>>,
    /// The deprecated single-call form, still sent by some servers.
    #[serde(borrow, default)]
    pub(super) function_call: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct CallDelta<'a> {
    #[serde(default)]
    pub(super) index: Option<i64>,
    #[serde(borrow, default)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(super) function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) arguments: Option<Arguments<'a>>,
}

/// Arguments are a string on the wire; some servers send the object itself.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Arguments<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Json(serde_json::Value),
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(super) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(super) prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
pub(super) struct PromptDetails {
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
}

/// An error object sent as a chunk: `{"error": {...}}` or vLLM's `{"object": "error", ...}`.
pub(super) fn provider_error(chunk: &Chunk<'_>) -> Option<ModelError> {
    let (kind, message) = match (&chunk.error, &chunk.object) {
        (Some(serde_json::Value::Object(error)), _) => {
            let field = |name: &str| match error.get(name) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            };
            let kind = field("type").or_else(|| field("code"));
            (
                kind.unwrap_or_default(),
                field("message").unwrap_or_default(),
            )
        }
        (Some(serde_json::Value::Null), _) | (None, None) => return None,
        (Some(other), _) => (String::new(), other.to_string()),
        (None, Some(object)) if object == "error" => (
            "error".to_owned(),
            chunk.message.as_deref().unwrap_or_default().to_owned(),
        ),
        (None, Some(_)) => return None,
    };
    let retryable = transient_error_kind(&kind);
    Some(ModelError::Provider {
        kind,
        message,
        retryable,
    })
}

/// Maps an OpenAI (or compatible) `finish_reason`.
pub fn finish_from_openai(reason: &str) -> Finish {
    match reason {
        "stop" | "eos" | "end_turn" | "stop_sequence" => Finish::Stop,
        "tool_calls" | "function_call" | "tool_use" => Finish::ToolCalls,
        "length" | "max_tokens" => Finish::Length,
        "content_filter" => Finish::ContentFilter,
        "refusal" => Finish::Refusal,
        other => Finish::Unknown(other.to_owned()),
    }
}
