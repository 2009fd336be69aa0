//! Anthropic Messages: the request body (`stream: true`, `system` apart, tool results as
//! `tool_result` blocks in a user turn), the `x-api-key` and version headers, and the assembler
//! for its stream.
//!
//! SPEC M1.

use super::assembler::AnthropicAssembler;
use super::config::{ProviderConfig, ToolChoice};
use super::http::Wire;
use super::types::{AttemptId, Message, ModelRequest, ToolCall};
use serde_json::{Value, json};

pub(crate) struct Anthropic;

impl Wire for Anthropic {
    type Assembler = AnthropicAssembler;
    const PATH: &'static str = "/v1/messages";

    fn auth_headers(config: &ProviderConfig, key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", config.anthropic_version.clone())];
        if let Some(key) = key {
            headers.push(("x-api-key", key.to_owned()));
        }
        headers
    }

    fn body(config: &ProviderConfig, request: &ModelRequest) -> Value {
        let system: Vec<&str> = request
            .messages
            .messages()
            .filter_map(|m| match m {
                Message::System { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let max_tokens = request
            .max_output_tokens
            .unwrap_or_else(|| config.output_limit());
        let mut body = json!({
            "model": config.model,
            "max_tokens": max_tokens,
            "messages": turns(request.messages.messages()),
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.parameters,
                    })
                })
                .collect();
            // `auto` is the API's default; the others are spelled its way.
            match config.tool_choice {
                ToolChoice::Auto => {}
                ToolChoice::Required => body["tool_choice"] = json!({"type": "any"}),
                ToolChoice::None => body["tool_choice"] = json!({"type": "none"}),
            }
        }
        if let Some(temperature) = config.temperature {
            body["temperature"] = json!(temperature);
        }
        body
    }

    const MERGES: bool = true;

    fn blocks(message: &Message) -> Option<(&'static str, Vec<Value>)> {
        Some(blocks(message))
    }

    fn assembler(attempt: AttemptId) -> AnthropicAssembler {
        AnthropicAssembler::new(attempt)
    }
}

/// The history as alternating turns of content blocks: consecutive entries with the same role
/// share one turn (several tool results answer one assistant turn); empty text is left out,
/// because the API rejects empty text blocks.
fn turns<'a>(messages: impl Iterator<Item = &'a Message>) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = blocks(message);
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect()
}

/// The role and content blocks of one message (the system prompt has none: it goes apart).
fn blocks(message: &Message) -> (&'static str, Vec<Value>) {
    match message {
        Message::System { .. } => ("system", Vec::new()),
        Message::User { text } => ("user", text_block(text).into_iter().collect()),
        Message::Assistant { text, tool_calls } => {
            let mut blocks: Vec<Value> = text_block(text).into_iter().collect();
            for call in tool_calls {
                blocks.extend(tool_use(call));
            }
            ("assistant", blocks)
        }
        Message::Tool(result) => {
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": result.content,
            });
            if result.is_error {
                block["is_error"] = json!(true);
            }
            ("user", vec![block])
        }
    }
}

/// A call as `tool_use`. `input` must be an object: arguments that were not one (they got an
/// error result, or ran repaired) go as `{}`, and their text as sent goes just before it in a
/// text block, so the model still sees what it wrote (issue 11, item 9).
fn tool_use(call: &ToolCall) -> Vec<Value> {
    let input = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .filter(Value::is_object);
    let block = |input: &Value| json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": input });
    match input {
        Some(input) => vec![block(&input)],
        None => vec![
            json!({
                "type": "text",
                "text": format!(
                    "[arguments of call {} as sent, not a JSON object; its input shows as {{}}]\n{}",
                    call.id, call.arguments
                ),
            }),
            block(&json!({})),
        ],
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({ "type": "text", "text": text }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::{ANTHROPIC_DEFAULT_MAX_TOKENS, ProviderKind};
    use crate::model::types::ToolResult;

    #[test]
    fn system_goes_apart_and_tool_results_share_one_user_turn() {
        let config = ProviderConfig::new(ProviderKind::Anthropic, "claude", None);
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let result = |id: &str, is_error| {
            Message::Tool(ToolResult {
                call_id: id.into(),
                content: "x".into(),
                is_error,
            })
        };
        let request = ModelRequest {
            messages: vec![
                Message::System { text: "sys".into() },
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: "Reading.".into(),
                    tool_calls: vec![call("t1"), call("t2")],
                },
                result("t1", false),
                result("t2", true),
            ]
            .into(),
            ..ModelRequest::default()
        };
        let body = Anthropic::body(&config, &request);
        assert_eq!(body["system"], json!("sys"));
        assert_eq!(body["max_tokens"], json!(ANTHROPIC_DEFAULT_MAX_TOKENS));
        let messages = body["messages"].as_array().map(Vec::len);
        assert_eq!(messages, Some(3));
        assert_eq!(
            body["messages"][1]["content"][1]["input"],
            json!({"path": "a"})
        );
        assert_eq!(body["messages"][2]["role"], json!("user"));
        assert_eq!(
            body["messages"][2]["content"][1]["tool_use_id"],
            json!("t2")
        );
        assert_eq!(body["messages"][2]["content"][1]["is_error"], json!(true));
        assert!(body["messages"][2]["content"][0].get("is_error").is_none());
    }

    #[test]
    fn arguments_that_are_not_an_object_stay_visible_as_text() {
        let config = ProviderConfig::new(ProviderKind::Anthropic, "claude", None);
        let raw = "{'path': 'a', oops";
        let request = ModelRequest {
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "t1".into(),
                        name: "read_file".into(),
                        arguments: raw.into(),
                    }],
                },
            ]
            .into(),
            ..ModelRequest::default()
        };
        let body = Anthropic::body(&config, &request);
        let content = &body["messages"][1]["content"];
        let text = content[0]["text"].as_str().unwrap_or_default();
        assert!(text.contains(raw), "{text}");
        assert!(text.contains("t1"), "{text}");
        assert_eq!(content[1]["type"], json!("tool_use"));
        assert_eq!(content[1]["input"], json!({}));
    }
}
