//! Property: however the network splits a valid stream (even inside a UTF-8 character or a
//! `data:` line), the assembled message is the same (V2).

use super::{AnthropicAssembler, OpenAiAssembler};
use crate::model::sse::replay;
use crate::model::types::AttemptId;
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::json;

fn piece() -> impl Strategy<Value = String> {
    let chars = vec!['a', 'z', ' ', 'é', '☃', '𝄞', '"', '\\', '\n', '{', '}', ':'];
    prop::collection::vec(prop::sample::select(chars), 1..12).prop_map(String::from_iter)
}

/// A response: text pieces, then calls whose argument text is split into pieces. Arguments
/// start with an unclosed `[`, so no prefix is complete JSON and no piece can look like a
/// provider repeating a whole call.
fn response() -> impl Strategy<Value = (Vec<String>, Vec<Vec<String>>)> {
    let arguments = prop::collection::vec(piece(), 1..5).prop_map(|mut pieces| {
        pieces[0].insert(0, '[');
        pieces
    });
    (
        prop::collection::vec(piece(), 0..6),
        prop::collection::vec(arguments, 0..3),
    )
}

fn openai_sse(text: &[String], calls: &[Vec<String>]) -> String {
    let mut out = String::new();
    let mut data = |v: serde_json::Value| out.push_str(&format!("data: {v}\n\n"));
    for t in text {
        data(json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]}));
    }
    for (i, pieces) in calls.iter().enumerate() {
        let start = json!({"index": i, "id": format!("call_{i}"), "type": "function",
            "function": {"name": "tool", "arguments": ""}});
        data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [start]}}]}));
        for p in pieces {
            let more = json!({"index": i, "function": {"arguments": p}});
            data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [more]}}]}));
        }
    }
    data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    data(json!({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}));
    out.push_str("data: [DONE]\n\n");
    out
}

fn anthropic_sse(text: &[String], calls: &[Vec<String>]) -> String {
    let mut out = String::new();
    let mut event =
        |name: &str, v: serde_json::Value| out.push_str(&format!("event: {name}\ndata: {v}\n\n"));
    event(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
    );
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for t in text {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
        );
    }
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    for (i, pieces) in calls.iter().enumerate() {
        let index = i + 1;
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": "tool", "input": {}}}),
        );
        for p in pieces {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": p}}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

/// `body` cut at the given points (which may fall anywhere, even inside a character).
fn split(body: &[u8], cuts: &[prop::sample::Index]) -> Vec<Bytes> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut from = 0;
    for p in points.into_iter().chain([body.len()]) {
        chunks.push(Bytes::copy_from_slice(&body[from..p]));
        from = p;
    }
    chunks
}

fn attempt() -> AttemptId {
    AttemptId("att_prop".into())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn openai_random_chunking_gives_the_same_message(
        (text, calls) in response(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let body = openai_sse(&text, &calls);
        let whole = replay(OpenAiAssembler::new(attempt()), [Bytes::from(body.clone())]);
        let chunked = replay(OpenAiAssembler::new(attempt()), split(body.as_bytes(), &cuts));
        let whole = whole.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(whole.text.clone(), text.concat());
        prop_assert_eq!(whole.calls.len(), calls.len());
        for (call, pieces) in whole.calls.iter().zip(&calls) {
            prop_assert_eq!(&call.call.arguments, &pieces.concat());
        }
        prop_assert_eq!(chunked.ok(), Some(whole));
    }

    #[test]
    fn anthropic_random_chunking_gives_the_same_message(
        (text, calls) in response(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
    ) {
        let body = anthropic_sse(&text, &calls);
        let whole = replay(AnthropicAssembler::new(attempt()), [Bytes::from(body.clone())]);
        let chunked = replay(AnthropicAssembler::new(attempt()), split(body.as_bytes(), &cuts));
        let whole = whole.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(whole.text.clone(), text.concat());
        prop_assert_eq!(whole.calls.len(), calls.len());
        prop_assert_eq!(chunked.ok(), Some(whole));
    }
}
