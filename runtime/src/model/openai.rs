//! OpenAI Chat Completions: the request body (`stream: true` with
//! `stream_options.include_usage`), the bearer key, and the assembler for its stream.
//!
//! M1. Serves every OpenAI-compatible server (vLLM, llama.cpp, llama-cpp-python, Ollama,
//! OpenRouter): only the base URL, the key and `max_tokens_field` differ. What is sent is what
//! every one of them accepts: the assistant message with calls has `"content": ""` (some
//! servers refuse `null`, and leaving it out breaks some chat templates), `tool_choice` is
//! explicit whenever tools are offered (some servers take a missing one as "none"), and an output
//! limit is always sent (some servers' default is unlimited).
//!
//! Images go as `image_url` parts with a `data:` URL: in the user message they came with, and
//! for tool results (a `tool` message takes text only) in a user message after the last
//! result of the step. A text-only model (`ProviderConfig::accepts_images`) gets placeholders.
//! Streamed reasoning is not sent back.

use super::assembler::OpenAiAssembler;
use super::config::{ProviderConfig, ToolChoice};
use super::image::ImagePart;
use super::messages::{Messages, ModelRequest};
use super::types::{AttemptId, Message, ToolCall};
use super::wire::Wire;
use serde_json::{Value, json};

pub(crate) struct OpenAi;

impl Wire for OpenAi {
    type Assembler = OpenAiAssembler;
    const PATH: &'static str = "/chat/completions";

    fn auth_headers(_: &ProviderConfig, key: Option<&str>) -> Vec<(&'static str, String)> {
        key.map(|k| ("authorization", format!("Bearer {k}")))
            .into_iter()
            .collect()
    }

    fn body(config: &ProviderConfig, request: &ModelRequest) -> Value {
        let mut body = json!({
            "model": config.model,
            "messages": (0..request.messages.len())
                .flat_map(|i| values(config, &request.messages, i))
                .collect::<Vec<_>>(),
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        },
                    })
                })
                .collect();
            body["tool_choice"] = json!(match config.tool_choice {
                ToolChoice::Auto => "auto",
                ToolChoice::Required => "required",
                ToolChoice::None => "none",
            });
        }
        let limit = request
            .max_output_tokens
            .unwrap_or_else(|| config.output_limit());
        body[config.max_tokens_field_name()] = json!(limit);
        if let Some(temperature) = config.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(key) = request
            .cache_key
            .as_ref()
            .filter(|_| config.sends_cache_key())
        {
            body["prompt_cache_key"] = json!(key);
        }
        body
    }

    fn message(config: &ProviderConfig, messages: &Messages, i: usize) -> Option<Vec<Value>> {
        Some(values(config, messages, i))
    }

    fn assembler(attempt: AttemptId) -> OpenAiAssembler {
        OpenAiAssembler::new(attempt)
    }
}

/// The values message `i` is sent as: one, and after the last of a run of tool results, a
/// user message with the images those results returned (a `tool` message takes text only,
/// and nothing may come between the results of one assistant message).
fn values(config: &ProviderConfig, messages: &Messages, i: usize) -> Vec<Value> {
    let Some(keyed) = messages.get(i) else {
        return Vec::new();
    };
    let mut values = vec![message(config, &keyed.message)];
    let is_result = |m: &Message| matches!(m, Message::Tool(_));
    let run_ends = !messages.get(i + 1).is_some_and(|next| is_result(&next.message));
    if is_result(&keyed.message) && run_ends && config.accepts_images() {
        let first = (0..=i)
            .rev()
            .take_while(|&j| messages.get(j).is_some_and(|k| is_result(&k.message)))
            .last()
            .unwrap_or(i);
        let mut parts = Vec::new();
        for j in first..=i {
            if let Some(Message::Tool(result)) = messages.get(j).map(|k| k.message.as_ref())
                && !result.images.is_empty()
            {
                parts.push(json!({
                    "type": "text",
                    "text": format!("[the images call {} returned]", result.call_id),
                }));
                parts.extend(result.images.iter().map(image_part));
            }
        }
        if !parts.is_empty() {
            values.push(json!({ "role": "user", "content": parts }));
        }
    }
    values
}

fn image_part(image: &ImagePart) -> Value {
    json!({ "type": "image_url", "image_url": { "url": image.data_url() } })
}

/// `text` with a text-only model's placeholder for each image appended.
fn with_placeholders(text: &str, images: &[ImagePart]) -> String {
    let mut text = text.to_owned();
    for image in images {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&image.placeholder());
    }
    text
}

fn message(config: &ProviderConfig, message: &Message) -> Value {
    match message {
        Message::System { text } => json!({ "role": "system", "content": text }),
        Message::User { text, images } if images.is_empty() => {
            json!({ "role": "user", "content": text })
        }
        Message::User { text, images } if config.accepts_images() => {
            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(json!({ "type": "text", "text": text }));
            }
            parts.extend(images.iter().map(image_part));
            json!({ "role": "user", "content": parts })
        }
        Message::User { text, images } => {
            json!({ "role": "user", "content": with_placeholders(text, images) })
        }
        // Reasoning is not sent back: OpenAI-compatible servers take no reasoning in a request
        // (some refuse `reasoning_content` there), and the model does not need it again.
        Message::Assistant {
            text, tool_calls, ..
        } if tool_calls.is_empty() => {
            json!({ "role": "assistant", "content": text })
        }
        Message::Assistant {
            text, tool_calls, ..
        } => json!({
            "role": "assistant",
            "content": text,
            "tool_calls": tool_calls.iter().map(call).collect::<Vec<_>>(),
        }),
        Message::Tool(result) => {
            let content = if result.images.is_empty() {
                result.content.clone()
            } else if config.accepts_images() {
                format!(
                    "{}\n[its image follows, after the results of this step]",
                    result.content
                )
            } else {
                with_placeholders(&result.content, &result.images)
            };
            json!({
                "role": "tool",
                "tool_call_id": result.call_id,
                "content": content,
            })
        }
    }
}

fn call(call: &ToolCall) -> Value {
    // The API wants a JSON string; an empty one (a call without arguments) is sent as `{}`.
    let arguments = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    json!({
        "id": call.id,
        "type": "function",
        "function": { "name": call.name, "arguments": arguments },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::{DEFAULT_MAX_OUTPUT_TOKENS, MaxTokensField, ProviderKind};
    use crate::model::types::{ToolDef, ToolResultMessage};

    #[test]
    fn history_tools_and_limits_map_to_chat_completions_fields() {
        let mut config = ProviderConfig::new(ProviderKind::Openai, "m", None);
        config.max_output_tokens = Some(100);
        let request = ModelRequest {
            messages: vec![
                Message::System { text: "sys".into() },
                Message::User { images: Vec::new(), text: "hi".into() },
                Message::Assistant { reasoning: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: String::new(),
                    }],
                },
                Message::Tool(ToolResultMessage { images: Vec::new(),
                    call_id: "c1".into(),
                    content: "text".into(),
                    is_error: false,
                }),
            ]
            .into(),
            tools: vec![ToolDef {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: None,
            ..ModelRequest::default()
        };
        let body = OpenAi::body(&config, &request);
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["stream_options"]["include_usage"], json!(true));
        assert_eq!(body["max_completion_tokens"], json!(100));
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(body["messages"][2]["content"], json!(""));
        assert_eq!(body["tool_choice"], json!("auto"));
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!("{}")
        );
        assert_eq!(body["messages"][3]["tool_call_id"], json!("c1"));
        assert_eq!(body["tools"][0]["function"]["name"], json!("read_file"));

        config.max_tokens_field = MaxTokensField::MaxTokens;
        let body = OpenAi::body(
            &config,
            &ModelRequest {
                max_output_tokens: Some(7),
                ..request
            },
        );
        assert_eq!(body["max_tokens"], json!(7));
    }

    #[test]
    fn a_limit_is_always_sent_and_tool_choice_only_with_tools() {
        let mut config =
            ProviderConfig::new(ProviderKind::Openai, "m", Some("http://127.0.0.1:1/v1"));
        let request = ModelRequest {
            messages: vec![Message::User { images: Vec::new(), text: "hi".into() }].into(),
            ..ModelRequest::default()
        };
        let body = OpenAi::body(&config, &request);
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_OUTPUT_TOKENS));
        assert!(body.get("max_completion_tokens").is_none(), "{body}");
        assert!(body.get("tool_choice").is_none(), "{body}");
        config.tool_choice = ToolChoice::Required;
        let with_tools = ModelRequest {
            tools: vec![ToolDef {
                name: "ls".into(),
                description: "List".into(),
                parameters: json!({"type": "object"}),
            }],
            ..request
        };
        assert_eq!(
            OpenAi::body(&config, &with_tools)["tool_choice"],
            json!("required")
        );
    }

    #[test]
    fn the_session_id_goes_as_prompt_cache_key_where_the_api_takes_it() {
        let request = ModelRequest {
            messages: vec![Message::User { images: Vec::new(), text: "hi".into() }].into(),
            cache_key: Some("20261201-abc".into()),
            ..ModelRequest::default()
        };
        let openai = ProviderConfig::new(ProviderKind::Openai, "gpt-5", None);
        assert_eq!(
            OpenAi::body(&openai, &request)["prompt_cache_key"],
            json!("20261201-abc")
        );
        // Another server may refuse a field it does not know: sent only when the preset says so.
        let mut local =
            ProviderConfig::new(ProviderKind::Openai, "m", Some("http://127.0.0.1:8000/v1"));
        assert!(
            OpenAi::body(&local, &request)
                .get("prompt_cache_key")
                .is_none()
        );
        local.prompt_cache_key = Some(true);
        assert_eq!(
            OpenAi::body(&local, &request)["prompt_cache_key"],
            json!("20261201-abc")
        );
        let unkeyed = ModelRequest {
            cache_key: None,
            ..request
        };
        assert!(
            OpenAi::body(&openai, &unkeyed)
                .get("prompt_cache_key")
                .is_none()
        );
    }
}
