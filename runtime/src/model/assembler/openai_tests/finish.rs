//! How an OpenAI stream ends: finish reasons, outcomes, errors and noise (V1, V2, B2).

use super::*;
use crate::model::error::ModelError;
use crate::model::types::*;

#[test]
fn no_finish_reason_with_unparsable_last_call_counts_as_truncated() {
    let m = assemble(&[&chunk(
        &call(
            r#""index":0,"#,
            r#""c1""#,
            r#""write""#,
            r#""{\"text\": \"abc""#,
        ),
        "",
    )]);
    assert!(m.finish_inferred);
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
fn no_finish_reason_with_text_only_is_stop() {
    let m = assemble(&[&chunk(r#"{"content":"All done."}"#, "")]);
    assert_eq!(
        (m.finish.clone(), m.outcome, m.finish_inferred),
        (Finish::Stop, Outcome::Completed, true)
    );
    assert!(m.diagnostics.contains(&Diagnostic::MissingEndMarker));
}

#[test]
fn length_cut_calls_are_not_executed_however_parsable() {
    let m = assemble(&[&chunk(
        &call(
            r#""index":0,"#,
            r#""c1""#,
            r#""ls""#,
            r#""{\"path\":\".\"}""#,
        ),
        "length",
    )]);
    assert_eq!(m.outcome, Outcome::Truncated);
    assert!(m.calls[0].parsed.is_some());
    assert_eq!(
        m.calls[0].not_executable.as_deref(),
        Some(TRUNCATED_CALL_ERROR)
    );
}

#[test]
fn content_filter_and_refusal_stop_the_calls() {
    let m = assemble(&[&chunk(
        &call(r#""index":0,"#, r#""c1""#, r#""ls""#, r#""{}""#),
        "content_filter",
    )]);
    assert_eq!(m.outcome, Outcome::ContentFiltered);
    assert!(m.calls[0].not_executable.is_some());
    let m = assemble(&[
        &chunk(r#"{"refusal":"I can't help with that."}"#, ""),
        &chunk("{}", "stop"),
    ]);
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::Refusal, Outcome::Refused)
    );
    assert_eq!(m.text, "I can't help with that.");
}

#[test]
fn calls_with_finish_stop_still_count_as_calls() {
    let m = assemble(&[&chunk(
        &call(r#""index":0,"#, r#""c1""#, r#""ls""#, r#""{}""#),
        "stop",
    )]);
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::Stop, Outcome::ToolCalls)
    );
}

#[test]
fn announced_but_missing_calls_are_a_dropped_tool_call() {
    let m = assemble(&[
        &chunk(r#"{"content":"Let me read the file:"}"#, ""),
        &chunk("{}", "stop"),
    ]);
    assert_eq!(m.outcome, Outcome::DroppedToolCall);
    let m = assemble(&[
        &chunk(r#"{"content":"Working."}"#, ""),
        &chunk("{}", "tool_calls"),
    ]);
    assert_eq!(m.outcome, Outcome::DroppedToolCall);
    let m = assemble(&[
        &chunk(r#"{"content":"It works."}"#, ""),
        &chunk("{}", "weird_reason"),
    ]);
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::Unknown("weird_reason".into()), Outcome::Completed)
    );
}

#[test]
fn error_objects_mid_stream_fail_the_attempt_with_their_class() {
    let server =
        r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#;
    let err = try_assemble(&[&chunk(r#"{"content":"Hi"}"#, ""), server]).err();
    assert!(
        matches!(&err, Some(ModelError::Provider { retryable: true, kind, .. }) if kind == "server_error"),
        "{err:?}"
    );
    let bad = r#"{"error":{"message":"Invalid schema","type":"invalid_request_error"}}"#;
    assert!(matches!(
        try_assemble(&[bad]),
        Err(ModelError::Provider {
            retryable: false,
            ..
        })
    ));
    let vllm = r#"{"object":"error","message":"Too long","type":"BadRequestError","code":400}"#;
    assert!(matches!(
        try_assemble(&[vllm]),
        Err(ModelError::Provider {
            retryable: false,
            ..
        })
    ));
}

#[test]
fn data_that_is_not_json_is_skipped_and_recorded() {
    let m = assemble(&[
        &chunk(r#"{"content":"a"}"#, ""),
        "this is not json",
        r#"{"choices": 5}"#,
        &chunk(r#"{"content":"b"}"#, "stop"),
    ]);
    assert_eq!(m.text, "ab");
    assert!(m.diagnostics.contains(&Diagnostic::NonJsonData {
        line: Some(3),
        sample: "this is not json".into()
    }));
    assert!(
        m.diagnostics
            .iter()
            .any(|d| matches!(d, Diagnostic::UnexpectedShape { .. }))
    );
}

#[test]
fn invalid_utf8_is_replaced_and_recorded() {
    let mut bytes = body(&[&chunk(r#"{"content":"caf"}"#, "")]).into_bytes();
    bytes.extend_from_slice(
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff!\"}}]}\n\n",
    );
    bytes.extend_from_slice(body(&[&chunk("{}", "stop")]).as_bytes());
    let m = replay(
        OpenAiAssembler::new(AttemptId(ATTEMPT.into())),
        [Bytes::from(bytes)],
    )
    .expect("assembles");
    assert_eq!(m.text, "caf\u{FFFD}!");
    assert!(
        m.diagnostics
            .contains(&Diagnostic::InvalidUtf8 { bytes_replaced: 1 })
    );
}

#[test]
fn comments_crlf_and_a_last_event_without_blank_line_are_read() {
    let text = format!(
        ": keep-alive\r\ndata: {}\r\n\r\ndata: {}",
        chunk(r#"{"content":"x"}"#, ""),
        chunk("{}", "stop")
    );
    let m = replay(
        OpenAiAssembler::new(AttemptId(ATTEMPT.into())),
        [Bytes::from(text)],
    )
    .expect("assembles");
    assert_eq!((m.text.as_str(), m.finish.clone()), ("x", Finish::Stop));
}

#[test]
fn a_stream_with_no_chunk_at_all_is_an_error() {
    assert!(matches!(try_assemble(&[]), Err(ModelError::EmptyStream)));
    // Data that is not JSON is named, not an empty stream.
    assert!(matches!(
        try_assemble(&["garbage"]),
        Err(ModelError::Protocol { retry: false, .. })
    ));
}
