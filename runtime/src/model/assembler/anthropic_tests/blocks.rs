//! How the Anthropic assembler builds text and calls from content blocks (V2).

use super::*;
use crate::model::types::*;
use serde_json::json;

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
