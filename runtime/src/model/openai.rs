//! OpenAI Chat Completions: the request body (`stream: true` with
//! `stream_options.include_usage`), the bearer key, and the assembler for its stream.
//!
//! M1. Serves every OpenAI-compatible server (vLLM, llama.cpp, llama-cpp-python, Ollama,
//! OpenRouter): only the base URL, the key and `max_tokens_field` differ. What is sent is what
//! every one of them accepts: the assistant message with calls has `"content": ""` (some
//! servers refuse `null`, and leaving it out breaks some chat templates), `tool_choice` is
//! explicit whenever tools are offered (some servers take a missing one as "none"), and an output
//! limit is always sent (some servers' default is unlimited).

use super::assembler::OpenAiAssembler;
use super::config::{ProviderConfig, ToolChoice};
use super::messages::ModelRequest;
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
            "messages": request.messages.messages().map(message).collect::<Vec<_>>(),
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

    fn message(history: &Message) -> Option<Value> {
        Some(message(history))
    }

    fn assembler(attempt: AttemptId) -> OpenAiAssembler {
        OpenAiAssembler::new(attempt)
    }
}

fn message(message: &Message) -> Value {
    match message {
        Message::System { text } => json!({ "role": "system", "content": text }),
        Message::User { text } => json!({ "role": "user", "content": text }),
        Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
            json!({ "role": "assistant", "content": text })
        }
        Message::Assistant { text, tool_calls } => json!({
            "role": "assistant",
            "content": text,
            "tool_calls": tool_calls.iter().map(call).collect::<Vec<_>>(),
        }),
        Message::Tool(result) => json!({
            "role": "tool",
            "tool_call_id": result.call_id,
            "content": result.content,
        }),
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
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: String::new(),
                    }],
                },
                Message::Tool(ToolResultMessage {
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
            messages: vec![Message::User { text: "hi".into() }].into(),
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
            messages: vec![Message::User { text: "hi".into() }].into(),
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
