//! Behaviours of real OpenAI-compatible servers that the scripted server can imitate, each
//! modelled on what llama-cpp-python's server (0.3, chat format `chatml-function-calling`) did
//! to paddock: refuse an assistant message whose `content` is `null` with a long HTTP 500,
//! drop the tools when a request has no `tool_choice`, and mirror every `tool_calls[0]` delta in
//! the legacy `function_call` field of the same chunk. All off by default.

use super::script::{ScriptFinish, Turn};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quirks {
    /// Answer HTTP 500 with a pydantic-style validation error (without using a step) when an
    /// assistant message carries `"content": null`.
    #[serde(default)]
    pub refuse_null_content: bool,
    /// When tools are offered without `tool_choice` (or with `"none"`), ignore them: the reply
    /// keeps its text (or says it has no tools) and loses its calls.
    #[serde(default)]
    pub drop_tools_without_tool_choice: bool,
    /// Repeat each `tool_calls[0]` delta as `function_call` in the same chunk.
    #[serde(default)]
    pub mirror_function_call: bool,
}

/// The 500 body llama-cpp-python sent for `"content": null` (long, as the real one is).
pub fn null_content_error(index: usize) -> String {
    let detail = |kind: &str| {
        format!(
            "{{'type': 'string_type', 'loc': ('body', 'messages', {index}, '{kind}', 'content'), \
             'msg': 'Input should be a valid string', 'input': None}}"
        )
    };
    let all: Vec<String> = [
        "typed-dict",
        "ChatCompletionRequestSystemMessage",
        "ChatCompletionRequestUserMessage",
        "ChatCompletionRequestAssistantMessage",
        "ChatCompletionRequestToolMessage",
        "ChatCompletionRequestFunctionMessage",
    ]
    .iter()
    .map(|kind| detail(kind))
    .collect();
    json!({"error": {"message": format!("[{}]", all.join(", ")), "type": "internal_server_error"}})
        .to_string()
}

impl Quirks {
    /// The status and body this server refuses `request` with, if it does.
    pub fn refusal(&self, request: &Value) -> Option<(u16, String)> {
        if !self.refuse_null_content {
            return None;
        }
        let messages = request["messages"].as_array()?;
        let index = messages
            .iter()
            .position(|m| m["role"] == "assistant" && m.get("content") == Some(&Value::Null))?;
        Some((500, null_content_error(index)))
    }

    /// The turn as this server would really answer `request`.
    pub fn adapt(&self, request: &Value, mut turn: Turn) -> Turn {
        let offered = request["tools"].as_array().is_some_and(|t| !t.is_empty());
        let choice = request.get("tool_choice").filter(|c| **c != json!("none"));
        if self.drop_tools_without_tool_choice
            && offered
            && choice.is_none()
            && !turn.calls.is_empty()
        {
            turn.calls.clear();
            if turn.text.is_empty() {
                turn.text = vec!["I cannot read files; I have no tools.".into()];
            }
            turn.finish = Some(ScriptFinish::Stop);
        }
        turn
    }

    /// The frames with each `tool_calls[0]` delta mirrored as `function_call`.
    pub fn mirror(&self, frames: Vec<String>) -> Vec<String> {
        if !self.mirror_function_call {
            return frames;
        }
        frames
            .into_iter()
            .map(|frame| mirror_frame(&frame).unwrap_or(frame))
            .collect()
    }
}

fn mirror_frame(frame: &str) -> Option<String> {
    let data = frame.strip_prefix("data: ")?.trim_end();
    let mut chunk: Value = serde_json::from_str(data).ok()?;
    let delta = chunk.pointer_mut("/choices/0/delta")?.as_object_mut()?;
    let function = delta.get("tool_calls")?.pointer("/0/function")?.clone();
    delta.insert("function_call".into(), function);
    Some(format!("data: {chunk}\n\n"))
}
