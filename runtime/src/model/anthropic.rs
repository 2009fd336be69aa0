//! Anthropic Messages: the request body (`stream: true`, `system` apart, tool results as
//! `tool_result` blocks in a user turn), the `x-api-key` and version headers, and the assembler
//! for its stream.
//!
//! The API caches a request's prefix only up to blocks marked `cache_control`, four at most.
//! The body marks the last tool, the system prompt, the end of the messages an earlier request
//! of the session sent as they are (`ModelRequest::cached_prefix`: what that request wrote is
//! read), and the end of the last message (written for the next request). `[model] cache_ttl`
//! sets how long they are kept, or turns them off.
//!
//! Images go as base64 `image` blocks (in a user turn, or inside a `tool_result`), or as
//! placeholders to a text-only model. Thinking blocks come back with their signatures, and
//! redacted ones as they came, first in their assistant turn (`[model] thinking_budget`
//! turns thinking on).
//!
//! M1.

use super::assembler::AnthropicAssembler;
use super::config::{CacheTtl, ProviderConfig, ToolChoice};
use super::messages::ModelRequest;
use super::image::ImagePart;
use super::types::{AttemptId, Message, Reasoning, ToolCall};
use super::wire::Wire;
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
        let marked = marked(request);
        let mut body = json!({
            "model": config.model,
            "max_tokens": max_tokens,
            "messages": turns(config, request.messages.messages(), &marked),
            "stream": true,
        });
        if !system.is_empty() {
            let text = system.join("\n\n");
            body["system"] = match cache_control(config) {
                Some(mark) => json!([{ "type": "text", "text": text, "cache_control": mark }]),
                None => json!(text),
            };
        }
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
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
            if let (Some(last), Some(mark)) = (tools.last_mut(), cache_control(config)) {
                last["cache_control"] = mark;
            }
            body["tools"] = Value::Array(tools);
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
        if let Some(budget) = config.thinking_budget {
            body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
        }
        body
    }

    const MERGES: bool = true;

    fn blocks(config: &ProviderConfig, message: &Message) -> Option<(&'static str, Vec<Value>)> {
        Some(blocks(config, message))
    }

    fn marked(config: &ProviderConfig, request: &ModelRequest) -> Vec<usize> {
        if cache_control(config).is_some() {
            marked(request)
        } else {
            Vec::new()
        }
    }

    fn mark(config: &ProviderConfig, blocks: &mut [Value]) {
        if let (Some(last), Some(mark)) = (blocks.last_mut(), cache_control(config)) {
            last["cache_control"] = mark;
        }
    }

    fn assembler(attempt: AttemptId) -> AnthropicAssembler {
        AnthropicAssembler::new(attempt)
    }
}

/// The breakpoint of `config`'s TTL, `None` when caching is off.
fn cache_control(config: &ProviderConfig) -> Option<Value> {
    match config.cache_ttl {
        CacheTtl::Off => None,
        CacheTtl::FiveMinutes => Some(json!({ "type": "ephemeral" })),
        CacheTtl::OneHour => Some(json!({ "type": "ephemeral", "ttl": "1h" })),
    }
}

/// The messages whose last block is a breakpoint: the last one with blocks within the
/// `cached_prefix`, and the last one with blocks. With the tool list and the system prompt,
/// four at most.
fn marked(request: &ModelRequest) -> Vec<usize> {
    let with_blocks = |upto: usize| {
        (0..upto).rev().find(|&i| {
            request
                .messages
                .get(i)
                .is_some_and(|k| has_blocks(&k.message))
        })
    };
    let last = with_blocks(request.messages.len());
    let read = request
        .cached_prefix
        .and_then(|n| with_blocks(n.min(request.messages.len())));
    let mut marked: Vec<usize> = read.into_iter().chain(last).collect();
    marked.dedup();
    marked
}

/// The history as alternating turns of content blocks: consecutive entries with the same role
/// share one turn (several tool results answer one assistant turn); empty text is left out,
/// because the API rejects empty text blocks. The last block of each message in `marked` is a
/// cache breakpoint.
fn turns<'a>(
    config: &ProviderConfig,
    messages: impl Iterator<Item = &'a Message>,
    marked: &[usize],
) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for (i, message) in messages.enumerate() {
        let (role, mut blocks) = blocks(config, message);
        if blocks.is_empty() {
            continue;
        }
        if marked.contains(&i) {
            Anthropic::mark(config, &mut blocks);
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

/// Whether a message has content blocks (the same answer as `blocks`, without building them).
fn has_blocks(message: &Message) -> bool {
    match message {
        Message::System { .. } => false,
        Message::User { text, images } => !text.is_empty() || !images.is_empty(),
        Message::Assistant {
            text,
            tool_calls,
            reasoning,
        } => {
            !text.is_empty()
                || !tool_calls.is_empty()
                || reasoning.iter().any(|r| reasoning_block(r).is_some())
        }
        Message::Tool(_) => true,
    }
}

/// The role and content blocks of one message (the system prompt has none: it goes apart).
/// Images go as `image` blocks, or as placeholders to a text-only model; signed thinking
/// goes back first in its assistant turn, as the API requires before tool results.
fn blocks(config: &ProviderConfig, message: &Message) -> (&'static str, Vec<Value>) {
    match message {
        Message::System { .. } => ("system", Vec::new()),
        Message::User { text, images } => {
            let mut blocks: Vec<Value> = text_block(text).into_iter().collect();
            blocks.extend(images.iter().map(|image| image_block(config, image)));
            ("user", blocks)
        }
        Message::Assistant {
            text,
            tool_calls,
            reasoning,
        } => {
            let mut blocks: Vec<Value> = reasoning.iter().filter_map(reasoning_block).collect();
            blocks.extend(text_block(text));
            for call in tool_calls {
                blocks.extend(tool_use(call));
            }
            ("assistant", blocks)
        }
        Message::Tool(result) => {
            let content = if result.images.is_empty() {
                json!(result.content)
            } else {
                let mut parts: Vec<Value> = text_block(&result.content).into_iter().collect();
                parts.extend(result.images.iter().map(|image| image_block(config, image)));
                Value::Array(parts)
            };
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": content,
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
/// text block, so the model still sees what it wrote.
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

/// An image as a base64 `image` block, or its placeholder for a text-only model.
fn image_block(config: &ProviderConfig, image: &ImagePart) -> Value {
    if !config.accepts_images() {
        return json!({ "type": "text", "text": image.placeholder() });
    }
    json!({
        "type": "image",
        "source": { "type": "base64", "media_type": image.media_type(), "data": image.base64() },
    })
}

/// Reasoning as the API takes it back: a thinking block with its signature, a redacted one as
/// it came. Thinking without a signature (a compatible server's) cannot be sent back.
fn reasoning_block(reasoning: &Reasoning) -> Option<Value> {
    match reasoning {
        Reasoning::Thinking {
            text,
            signature: Some(signature),
        } => Some(json!({ "type": "thinking", "thinking": text, "signature": signature })),
        Reasoning::Thinking { .. } => None,
        Reasoning::Redacted { data } => Some(json!({ "type": "redacted_thinking", "data": data })),
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({ "type": "text", "text": text }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::{DEFAULT_MAX_OUTPUT_TOKENS, ProviderKind};
    use crate::model::types::ToolResultMessage;

    #[test]
    fn system_goes_apart_and_tool_results_share_one_user_turn() {
        let config = ProviderConfig::new(ProviderKind::Anthropic, "claude", None);
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let result = |id: &str, is_error| {
            Message::Tool(ToolResultMessage { images: Vec::new(),
                call_id: id.into(),
                content: "x".into(),
                is_error,
            })
        };
        let request = ModelRequest {
            messages: vec![
                Message::System { text: "sys".into() },
                Message::User { images: Vec::new(), text: "hi".into() },
                Message::Assistant { reasoning: Vec::new(),
                    text: "Reading.".into(),
                    tool_calls: vec![call("t1"), call("t2")],
                },
                result("t1", false),
                result("t2", true),
            ]
            .into(),
            ..ModelRequest::default()
        };
        let mut config = config;
        config.cache_ttl = CacheTtl::Off;
        let body = Anthropic::body(&config, &request);
        assert_eq!(body["system"], json!("sys"));
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_OUTPUT_TOKENS));
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
                Message::User { images: Vec::new(), text: "hi".into() },
                Message::Assistant { reasoning: Vec::new(),
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

    /// Every block marked as a cache breakpoint: (turn, block) for messages, and whether the
    /// system prompt and which tools are marked.
    fn breakpoints(body: &Value) -> (Vec<(usize, usize)>, bool, Vec<usize>) {
        let marked = |v: &Value| v.get("cache_control").is_some();
        let mut blocks = Vec::new();
        for (t, turn) in body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            for (b, block) in turn["content"].as_array().into_iter().flatten().enumerate() {
                if marked(block) {
                    blocks.push((t, b));
                }
            }
        }
        let system = body["system"]
            .as_array()
            .is_some_and(|s| s.iter().any(marked));
        let tools = body["tools"].as_array().into_iter().flatten().enumerate();
        let tools = tools.filter(|(_, t)| marked(t)).map(|(i, _)| i).collect();
        (blocks, system, tools)
    }

    #[test]
    fn breakpoints_mark_the_tools_the_system_prompt_what_was_sent_before_and_the_end() {
        let mut config = ProviderConfig::new(ProviderKind::Anthropic, "claude", None);
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        let result = |id: &str| {
            Message::Tool(ToolResultMessage { images: Vec::new(),
                call_id: id.into(),
                content: "x".into(),
                is_error: false,
            })
        };
        let tool = |name: &str| crate::model::ToolDef {
            name: name.into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        };
        let messages = vec![
            Message::System { text: "sys".into() },
            Message::User { images: Vec::new(), text: "hi".into() },
            Message::Assistant { reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![call("t1"), call("t2")],
            },
            result("t1"),
            result("t2"),
            Message::Assistant { reasoning: Vec::new(),
                text: String::new(),
                tool_calls: vec![call("t3")],
            },
            result("t3"),
        ];
        // The request before the last assistant message ended with t2's result.
        let request = ModelRequest {
            messages: messages.clone().into(),
            tools: vec![tool("a"), tool("b")],
            cached_prefix: Some(5),
            ..ModelRequest::default()
        };
        let body = Anthropic::body(&config, &request);
        let (blocks, system, tools) = breakpoints(&body);
        assert_eq!(blocks, vec![(2, 1), (4, 0)], "{body}");
        assert!(system);
        assert_eq!(tools, vec![1]);
        assert!(blocks.len() + usize::from(system) + tools.len() <= 4);
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );

        // A summary request on the same prefix: the instruction joins the last user turn, and
        // the breakpoint stays on what the last request ended with.
        let mut summary = messages.clone();
        summary.push(Message::User { images: Vec::new(),
            text: "summarize".into(),
        });
        let request = ModelRequest {
            messages: summary.into(),
            tools: vec![tool("a")],
            cached_prefix: Some(7),
            ..ModelRequest::default()
        };
        let (blocks, _, _) = breakpoints(&Anthropic::body(&config, &request));
        assert_eq!(blocks, vec![(4, 0), (4, 1)]);

        config.cache_ttl = CacheTtl::OneHour;
        let body = Anthropic::body(&config, &request);
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        config.cache_ttl = CacheTtl::Off;
        let body = Anthropic::body(&config, &request);
        assert_eq!(breakpoints(&body), (Vec::new(), false, Vec::new()));
        assert_eq!(body["system"], json!("sys"));
    }
}
