//! Tests of the request body built on the last one (issue 13): byte for byte the body built
//! fresh, whatever changed between requests.

use std::sync::Arc;

use super::*;
use crate::log::{Ageing, History};
use crate::model::ProviderKind;
use crate::model::anthropic::Anthropic;
use crate::model::openai::OpenAi;
use crate::model::types::{Message, ToolCall, ToolDef, ToolResult};

fn config() -> ProviderConfig {
    ProviderConfig::new(ProviderKind::Openai, "m", Some("http://127.0.0.1:1/v1"))
}

fn tool(name: &str) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: "Read".into(),
        parameters: serde_json::json!({"type": "object"}),
    }
}

/// A request as the loop makes one: the system prompt, then the history it shares.
fn request(system: &str, history: Messages, tools: Vec<ToolDef>) -> ModelRequest {
    let mut messages = Messages::from(vec![Message::System {
        text: system.into(),
    }]);
    messages.append(history);
    ModelRequest {
        messages,
        tools,
        max_output_tokens: None,
    }
}

/// The body `cache` builds is the one a new cache builds, which is `W::body` as JSON.
fn check<W: Wire>(cache: &BodyCache, request: &ModelRequest, what: &str) -> Bytes {
    let config = config();
    let body = cache.body::<W>(&config, request).expect("body");
    let fresh = BodyCache::default()
        .body::<W>(&config, request)
        .expect("body");
    assert_eq!(
        String::from_utf8_lossy(&body),
        String::from_utf8_lossy(&fresh),
        "{what}"
    );
    let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(json, W::body(&config, request), "{what}");
    body
}

#[test]
fn a_body_built_on_the_last_one_is_the_body_built_fresh_across_ageing_and_compaction() {
    let events = crate::log::test_session::session(60);
    let ageing = Some(Ageing {
        after_steps: 3,
        bytes: 1000,
    });
    let cache = BodyCache::default();
    let mut history = History::default();
    let mut held: Option<(Bytes, Vec<u8>)> = None;
    for (k, event) in events.iter().enumerate() {
        history.push(event);
        // The system prompt, the tools and the limit change now and then (the head or the
        // first message differs); a previous body is sometimes still held by someone.
        let system = if k % 11 == 0 { "other" } else { "sys" };
        let tools = if k % 13 == 0 {
            vec![tool("read_file"), tool("grep")]
        } else {
            vec![tool("read_file")]
        };
        let mut request = request(system, history.render(ageing), tools);
        if k % 17 == 0 {
            request.max_output_tokens = Some(100);
        }
        let what = format!("event {k}");
        let body = check::<OpenAi>(&cache, &request, &what);
        // A body still held is never written into.
        if let Some((held, copy)) = held.take() {
            assert!(held[..] == copy[..], "{what}: a held body changed");
        }
        held = (k % 7 == 0).then(|| (body.clone(), body.to_vec()));
        // A summary request (no keys) goes whole and leaves the cache as it was.
        if k % 19 == 0 {
            let summary = ModelRequest {
                messages: history.render(ageing).to_vec().into(),
                ..ModelRequest::default()
            };
            check::<OpenAi>(&cache, &summary, &what);
        }
    }
}

#[test]
fn messages_in_place_are_not_serialized_again_and_formats_that_merge_go_whole() {
    let keyed = |key, text: &str| Keyed {
        key,
        message: Arc::new(Message::Assistant {
            text: text.into(),
            tool_calls: vec![ToolCall {
                id: format!("c{key}"),
                name: "read_file".into(),
                arguments: String::new(),
            }],
        }),
    };
    let cache = BodyCache::default();
    let run = Arc::new(vec![keyed(1, "one"), keyed(2, "two \"quoted\"")]);
    let mut history = Messages::default();
    history.push_run(run);
    history.push(Message::Tool(ToolResult {
        call_id: "c2".into(),
        content: "line\n".repeat(3),
        is_error: false,
    }));
    let first = request("sys", history.clone(), vec![tool("read_file")]);
    check::<OpenAi>(&cache, &first, "first");
    // A changed message under a key already sent shows its old bytes (keys are unique per
    // content; this proves the reuse); under a new key, its own.
    let mut changed = Messages::default();
    changed.push_run(Arc::new(vec![keyed(1, "one"), keyed(2, "changed")]));
    let config = config();
    let body = cache
        .body::<OpenAi>(&config, &request("sys", changed.clone(), Vec::new()))
        .expect("body");
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains("quoted") && !text.contains("changed"),
        "{text}"
    );
    let mut renamed = Messages::default();
    renamed.push_run(Arc::new(vec![keyed(1, "one"), keyed(3, "changed")]));
    check::<OpenAi>(&cache, &request("sys", renamed, Vec::new()), "new key");
    // Anthropic merges a turn's messages: its body is serialized whole.
    let body = cache
        .body::<Anthropic>(&config, &first)
        .expect("anthropic body");
    let whole = serde_json::to_vec(&Anthropic::body(&config, &first)).expect("JSON");
    assert_eq!(body, whole);
}
