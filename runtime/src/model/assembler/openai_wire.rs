//! What an OpenAI Chat Completions chunk means beyond its deltas: an error object sent as a
//! chunk, and the finish reasons of compatible servers (SPEC V2, M1).

use super::openai::Chunk;
use crate::model::error::{ModelError, transient_error_kind};
use crate::model::types::Finish;

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
