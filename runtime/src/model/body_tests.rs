//! Tests of the request body built on the last one: byte for byte the body built
//! fresh, whatever changed between requests.

use std::sync::Arc;

use super::*;
use crate::model::Keyed;
use crate::log::History;
use crate::model::context::Ageing;
use crate::model::ProviderKind;
use crate::model::anthropic::Anthropic;
use crate::model::openai::OpenAi;
use crate::model::types::{Message, ToolCall, ToolDef, ToolResultMessage};

fn config() -> ProviderConfig {
    ProviderConfig::new(ProviderKind::Openai, "m", Some("http://127.0.0.1:1/v1"))
}

fn config_for<W: Wire>() -> ProviderConfig {
    if W::MERGES {
        let mut config = ProviderConfig::new(ProviderKind::Anthropic, "m", None);
        config.temperature = Some(0.5);
        config
    } else {
        config()
    }
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
        ..ModelRequest::default()
    }
}

/// The body `cache` builds is the one a new cache builds, which is `W::body` as JSON (and, for
/// a format that merges messages, `W::body` serialized whole, byte for byte).
fn check<W: Wire>(cache: &BodyCache, request: &ModelRequest, what: &str) -> Bytes {
    let config = config_for::<W>();
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
    if W::MERGES {
        let whole = serde_json::to_vec(&W::body(&config, request)).expect("JSON");
        assert_eq!(
            String::from_utf8_lossy(&body),
            String::from_utf8_lossy(&whole),
            "{what}"
        );
    }
    body
}

#[test]
fn a_body_built_on_the_last_one_is_the_body_built_fresh_across_ageing_and_compaction() {
    built_on_the_last_one::<OpenAi>();
}

#[test]
fn a_body_of_turns_built_on_the_last_one_is_the_whole_body_byte_for_byte() {
    built_on_the_last_one::<Anthropic>();
}

fn built_on_the_last_one<W: Wire>() {
    let events = crate::log::test_session::session(60);
    let ageing = Some(Ageing {
        after_steps: 3,
        bytes: 1000,
    });
    let cache = BodyCache::default();
    let mut history = History::default();
    let mut held: Option<(Bytes, Vec<u8>)> = None;
    let (mut kept, mut all) = (0, 0);
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
        // As the loop asks: what the request before the last answer sent is read from the
        // cache (a breakpoint that moves with each request); now and then not.
        if k % 5 != 0 {
            request.cached_prefix = (0..request.messages.len()).rev().find(|&i| {
                request
                    .messages
                    .get(i)
                    .is_some_and(|m| matches!(*m.message, Message::Assistant { .. }))
            });
        }
        let what = format!("event {k}");
        let body = check::<W>(&cache, &request, &what);
        if let Some(sent) = cache.turns.lock().expect("turns").as_ref() {
            let (k, a) = sent.kept_and_all();
            (kept, all) = (kept + k, all + a);
        }
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
            check::<W>(&cache, &summary, &what);
        }
    }
    // Turns stay in place: most of each body was the last one's.
    assert!(
        !W::MERGES || kept * 10 > all * 8,
        "{kept} of {all} turns kept"
    );
}

#[test]
fn messages_in_place_are_not_serialized_again_and_turns_are_the_whole_body() {
    let keyed = |key, text: &str| Keyed {
        key,
        message: Arc::new(Message::Assistant { reasoning: Vec::new(),
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
    history.push(Message::Tool(ToolResultMessage { images: Vec::new(),
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
    // Anthropic merges a turn's messages: its body is the whole one, byte for byte.
    check::<Anthropic>(&cache, &first, "anthropic");
}
