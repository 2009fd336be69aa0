//! How an Anthropic stream ends: stop reasons, outcomes, errors and noise (V1, V2, B2).

use super::*;
use crate::model::types::*;

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

#[test]
fn invalid_utf8_is_replaced_and_recorded() {
    let mut bytes = body(&events(&[owned(START), text_start(0)])).into_bytes();
    bytes.extend_from_slice(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\xc3\x28\"}}\n\n");
    bytes.extend_from_slice(body(&events(&[message_delta("end_turn"), owned(STOP)])).as_bytes());
    let assembler = AnthropicAssembler::new(AttemptId(ATTEMPT.into()));
    let m = replay(assembler, [Bytes::from(bytes)]).expect("assembles");
    assert_eq!(m.text, "ok\u{FFFD}(");
    assert!(
        m.diagnostics
            .contains(&Diagnostic::InvalidUtf8 { bytes_replaced: 1 })
    );
}
