//! The Anthropic assembler against hand-written transcripts, one per quirk (SPEC V1, V2, B2).
//! Events are modelled on the Messages streaming reference.

use super::AnthropicAssembler;
use crate::model::error::ModelError;
use crate::model::sse::replay;
use crate::model::types::*;
use bytes::Bytes;
use serde_json::json;

const ATTEMPT: &str = "att_test";

fn body(events: &[(&str, &str)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn try_assemble(events: &[(&str, &str)]) -> Result<AssistantMessage, ModelError> {
    let assembler = AnthropicAssembler::new(AttemptId(ATTEMPT.into()));
    replay(assembler, [Bytes::from(body(events))])
}

fn assemble(events: &[(&str, &str)]) -> AssistantMessage {
    try_assemble(events).expect("transcript assembles")
}

const START: (&str, &str) = (
    "message_start",
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":2}}}"#,
);
const PING: (&str, &str) = ("ping", r#"{"type": "ping"}"#);
const STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

fn text_start(index: u32) -> (&'static str, String) {
    (
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"text","text":""}}}}"#
        ),
    )
}
fn text_delta(index: u32, text: &str) -> (&'static str, String) {
    (
        "content_block_delta",
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"text_delta","text":"{text}"}}}}"#
        ),
    )
}
fn tool_start(index: u32, id: &str, name: &str) -> (&'static str, String) {
    (
        "content_block_start",
        format!(
            r#"{{"type":"content_block_start","index":{index},"content_block":{{"type":"tool_use","id":"{id}","name":"{name}","input":{{}}}}}}"#
        ),
    )
}
fn json_delta(index: u32, partial: &str) -> (&'static str, String) {
    let partial = serde_json::to_string(partial).unwrap_or_default();
    (
        "content_block_delta",
        format!(
            r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"input_json_delta","partial_json":{partial}}}}}"#
        ),
    )
}
fn block_stop(index: u32) -> (&'static str, String) {
    (
        "content_block_stop",
        format!(r#"{{"type":"content_block_stop","index":{index}}}"#),
    )
}
fn message_delta(stop_reason: &str) -> (&'static str, String) {
    (
        "message_delta",
        format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop_reason}","stop_sequence":null}},"usage":{{"output_tokens":89}}}}"#
        ),
    )
}

/// Borrows a transcript built from owned and static events.
fn events<'a>(list: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    list.iter().map(|(n, d)| (*n, d.as_str())).collect()
}

fn owned(e: (&'static str, &'static str)) -> (&'static str, String) {
    (e.0, e.1.to_owned())
}

#[test]
fn text_then_tool_use_with_pings_and_usage() {
    let list = [
        owned(START),
        text_start(0),
        owned(PING),
        text_delta(0, "Okay, checking"),
        text_delta(0, " the weather."),
        block_stop(0),
        tool_start(1, "toolu_01", "get_weather"),
        json_delta(1, ""),
        json_delta(1, "{\"location\":"),
        json_delta(1, " \"San Fra"),
        json_delta(1, "ncisco\"}"),
        block_stop(1),
        message_delta("tool_use"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.text, "Okay, checking the weather.");
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::ToolCalls, Outcome::ToolCalls)
    );
    let c = &m.calls[0];
    assert_eq!(
        (c.call.id.as_str(), c.call.name.as_str()),
        ("toolu_01", "get_weather")
    );
    assert_eq!(c.parsed, Some(json!({"location": "San Francisco"})));
    let usage = Usage {
        input_tokens: 572,
        output_tokens: 89,
        cache_read_tokens: 100,
        cache_write_tokens: 0,
    };
    assert_eq!(m.usage, Some(usage));
    assert!(m.diagnostics.is_empty(), "{:?}", m.diagnostics);
}

#[test]
fn empty_partial_json_means_an_empty_object() {
    let list = [
        owned(START),
        tool_start(0, "toolu_1", "list_dir"),
        json_delta(0, ""),
        block_stop(0),
        message_delta("tool_use"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.calls[0].call.arguments, "{}");
    assert_eq!(m.calls[0].parsed, Some(json!({})));
}

#[test]
fn a_repeated_message_start_is_ignored() {
    let list = [
        owned(START),
        text_start(0),
        text_delta(0, "a"),
        owned(START),
        text_delta(0, "b"),
        block_stop(0),
        message_delta("end_turn"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.text, "ab");
    assert_eq!(m.usage.map(|u| u.input_tokens), Some(572));
    assert!(m.diagnostics.contains(&Diagnostic::RepeatedMessageStart));
}

#[test]
fn max_tokens_blocks_every_call() {
    let list = [
        owned(START),
        tool_start(0, "toolu_1", "write_file"),
        json_delta(0, "{\"path\": \"a\"}"),
        message_delta("max_tokens"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::Length, Outcome::Truncated)
    );
    assert_eq!(
        m.calls[0].not_executable.as_deref(),
        Some(TRUNCATED_CALL_ERROR)
    );
}

#[test]
fn refusal_and_end_turn_map_to_their_outcomes() {
    let list = [
        owned(START),
        text_start(0),
        text_delta(0, "I can't"),
        message_delta("refusal"),
        owned(STOP),
    ];
    assert_eq!(assemble(&events(&list)).outcome, Outcome::Refused);
    let list = [
        owned(START),
        text_start(0),
        text_delta(0, "Done."),
        message_delta("end_turn"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::Stop, Outcome::Completed)
    );
    let list = [
        owned(START),
        text_start(0),
        text_delta(0, "I'll run the tests."),
        message_delta("end_turn"),
        owned(STOP),
    ];
    assert_eq!(assemble(&events(&list)).outcome, Outcome::DroppedToolCall);
}

#[test]
fn deltas_without_a_block_start_create_the_block() {
    let list = [
        owned(START),
        text_delta(0, "hi"),
        json_delta(1, "{\"a\":1}"),
        message_delta("tool_use"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.text, "hi");
    let c = &m.calls[0];
    assert!(c.generated_id && c.missing_name);
    assert_eq!(c.call.id, format!("{ATTEMPT}_call0"));
    assert_eq!(c.parsed, Some(json!({"a": 1})));
}

#[test]
fn deltas_after_a_block_stopped_are_ignored() {
    let list = [
        owned(START),
        tool_start(0, "toolu_1", "ls"),
        json_delta(0, "{}"),
        block_stop(0),
        json_delta(0, "{\"late\":true}"),
        text_start(1),
        text_delta(1, "x"),
        block_stop(1),
        text_delta(1, "late"),
        message_delta("tool_use"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.calls[0].call.arguments, "{}");
    assert_eq!(m.text, "x");
    let late = m
        .diagnostics
        .iter()
        .filter(|d| matches!(d, Diagnostic::LateDelta { .. }))
        .count();
    assert_eq!(late, 2);
}

#[test]
fn a_repeated_tool_use_block_is_kept_once() {
    let list = [
        owned(START),
        tool_start(0, "toolu_1", "ls"),
        json_delta(0, "{\"p\":1}"),
        block_stop(0),
        tool_start(1, "toolu_1", "ls"),
        json_delta(1, "{\"p\":1}"),
        block_stop(1),
        message_delta("tool_use"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.calls.len(), 1);
    assert!(m.diagnostics.contains(&Diagnostic::RepeatedCall {
        id: "toolu_1".into()
    }));
}

#[test]
fn an_error_event_fails_the_attempt_with_its_class() {
    let overloaded = (
        "error",
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let list = [
        owned(START),
        text_start(0),
        text_delta(0, "par"),
        owned(overloaded),
    ];
    let err = try_assemble(&events(&list)).err();
    assert!(
        matches!(&err, Some(ModelError::Provider { retryable: true, kind, .. }) if kind == "overloaded_error"),
        "{err:?}"
    );
    let invalid = (
        "error",
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#,
    );
    assert!(matches!(
        try_assemble(&[START, invalid]),
        Err(ModelError::Provider {
            retryable: false,
            ..
        })
    ));
}

#[test]
fn missing_message_stop_and_missing_stop_reason_are_inferred_and_recorded() {
    let list = [
        owned(START),
        tool_start(0, "toolu_1", "ls"),
        json_delta(0, "{}"),
    ];
    let m = assemble(&events(&list));
    assert!(m.finish_inferred);
    assert_eq!(m.outcome, Outcome::ToolCalls);
    assert!(m.diagnostics.contains(&Diagnostic::MissingEndMarker));
}

#[test]
fn thinking_blocks_stay_out_of_the_text_and_unknown_events_are_recorded() {
    let thinking = (
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
    );
    let thought = (
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
    );
    let novel = ("brand_new_event", r#"{"type":"brand_new_event"}"#);
    let list = [
        owned(START),
        owned(thinking),
        owned(thought),
        block_stop(0),
        text_start(1),
        text_delta(1, "Hi"),
        owned(novel),
        message_delta("end_turn"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.text, "Hi");
    assert!(m.diagnostics.contains(&Diagnostic::UnknownEvent {
        name: "brand_new_event".into()
    }));
}

#[test]
fn complete_input_in_the_block_start_is_used_when_no_delta_comes() {
    let start = (
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"ls","input":{"path":"."}}}"#,
    );
    let list = [
        owned(START),
        owned(start),
        block_stop(0),
        message_delta("tool_use"),
        owned(STOP),
    ];
    assert_eq!(
        assemble(&events(&list)).calls[0].parsed,
        Some(json!({"path": "."}))
    );
}

#[test]
fn data_that_is_not_json_is_skipped_and_recorded() {
    let list = [
        owned(START),
        owned(("message", "not json at all")),
        text_start(0),
        text_delta(0, "ok"),
        message_delta("end_turn"),
        owned(STOP),
    ];
    let m = assemble(&events(&list));
    assert_eq!(m.text, "ok");
    assert!(
        m.diagnostics
            .iter()
            .any(|d| matches!(d, Diagnostic::NonJsonData { .. }))
    );
}
