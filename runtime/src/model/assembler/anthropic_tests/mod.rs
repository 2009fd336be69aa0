//! The Anthropic assembler against hand-written transcripts, one per quirk (V1, V2, B2).
//! Events are modelled on the Messages streaming reference. `blocks`: how content blocks and
//! calls are built; `finish`: how the message ends, errors and noise.

mod blocks;
mod finish;

use super::AnthropicAssembler;
use crate::model::error::ModelError;
use crate::model::sse::replay;
use crate::model::types::*;
use bytes::Bytes;
use serde_json::json;

pub(super) const ATTEMPT: &str = "att_test";

pub(super) fn body(events: &[(&str, &str)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

pub(super) fn try_assemble(events: &[(&str, &str)]) -> Result<AssistantMessage, ModelError> {
    let assembler = AnthropicAssembler::new(AttemptId(ATTEMPT.into()));
    replay(assembler, [Bytes::from(body(events))])
}

pub(super) fn assemble(events: &[(&str, &str)]) -> AssistantMessage {
    try_assemble(events).expect("transcript assembles")
}

pub(super) const START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":2}}}"#,
);
pub(super) const PING: (&str, &str) = ("ping", r#"{"type": "ping"}"#);
pub(super) const STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

pub(super) type Event = (&'static str, String);

/// An event named `name` whose data is `fields` plus `"type": name`, as the API sends them.
pub(super) fn ev(name: &'static str, mut fields: serde_json::Value) -> Event {
    fields["type"] = json!(name);
    (name, fields.to_string())
}
pub(super) fn text_start(index: u32) -> Event {
    let block = json!({"type": "text", "text": ""});
    ev(
        "content_block_start",
        json!({"index": index, "content_block": block}),
    )
}
pub(super) fn text_delta(index: u32, text: &str) -> Event {
    let delta = json!({"type": "text_delta", "text": text});
    ev(
        "content_block_delta",
        json!({"index": index, "delta": delta}),
    )
}
pub(super) fn tool_start(index: u32, id: &str, name: &str) -> Event {
    let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
    ev(
        "content_block_start",
        json!({"index": index, "content_block": block}),
    )
}
pub(super) fn json_delta(index: u32, partial: &str) -> Event {
    let delta = json!({"type": "input_json_delta", "partial_json": partial});
    ev(
        "content_block_delta",
        json!({"index": index, "delta": delta}),
    )
}
pub(super) fn block_stop(index: u32) -> Event {
    ev("content_block_stop", json!({"index": index}))
}
pub(super) fn message_delta(stop_reason: &str) -> Event {
    let delta = json!({"stop_reason": stop_reason, "stop_sequence": null});
    ev(
        "message_delta",
        json!({"delta": delta, "usage": {"output_tokens": 89}}),
    )
}

/// Borrows a transcript built from owned and static events.
pub(super) fn events(list: &[Event]) -> Vec<(&'static str, &str)> {
    list.iter().map(|(n, d)| (*n, d.as_str())).collect()
}

pub(super) fn owned(e: (&'static str, &'static str)) -> Event {
    (e.0, e.1.to_owned())
}
