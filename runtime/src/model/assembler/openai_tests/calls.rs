//! How the OpenAI assembler builds calls from quirky deltas (V2).

use super::*;
use crate::model::types::*;

#[test]
fn text_usage_chunk_with_empty_choices_and_done() {
    let m = assemble(&[
        &chunk(ROLE, ""),
        &chunk(r#"{"content":"Hello"}"#, ""),
        &chunk(r#"{"content":", world."}"#, ""),
        &chunk("{}", "stop"),
        USAGE,
        "[DONE]",
    ]);
    assert_eq!(m.text, "Hello, world.");
    assert_eq!(
        (m.finish.clone(), m.outcome, m.finish_inferred),
        (Finish::Stop, Outcome::Completed, false)
    );
    let usage = Usage {
        input_tokens: 50,
        output_tokens: 7,
        cache_read_tokens: 20,
        cache_write_tokens: 0,
    };
    assert_eq!(m.usage, Some(usage));
    assert_eq!(m.attempt.0, ATTEMPT);
    assert!(m.diagnostics.is_empty(), "{:?}", m.diagnostics);
}

#[test]
fn arguments_split_across_chunks_are_parsed_once_complete() {
    let m = assemble(&[
        &chunk(ROLE, ""),
        &chunk(
            &call(r#""index":0,"#, r#""call_a""#, r#""read_file""#, r#""""#),
            "",
        ),
        &chunk(&call(r#""index":0,"#, "null", "null", r#""{\"pa""#), ""),
        &chunk(
            &call(r#""index":0,"#, "null", "null", r#""th\": \"src/ma""#),
            "",
        ),
        &chunk(&call(r#""index":0,"#, "null", "null", r#""in.rs\"}""#), ""),
        &chunk("{}", "tool_calls"),
        "[DONE]",
    ]);
    assert_eq!(m.outcome, Outcome::ToolCalls);
    assert_eq!(m.calls.len(), 1);
    let c = &m.calls[0];
    assert_eq!(
        (c.call.id.as_str(), c.call.name.as_str()),
        ("call_a", "read_file")
    );
    assert_eq!(c.call.arguments, r#"{"path": "src/main.rs"}"#);
    assert_eq!(c.parsed, Some(serde_json::json!({"path": "src/main.rs"})));
    assert_eq!(c.not_executable, None);
}

#[test]
fn index_starting_at_one_gives_calls_in_order() {
    let m = assemble(&[
        &chunk(&call(r#""index":1,"#, r#""c1""#, r#""a""#, r#""{}""#), ""),
        &chunk(
            &call(r#""index":2,"#, r#""c2""#, r#""b""#, r#""{\"x\":1}""#),
            "",
        ),
        &chunk("{}", "tool_calls"),
    ]);
    let ids: Vec<_> = m.calls.iter().map(|c| c.call.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
    assert_eq!(m.calls[1].parsed, Some(serde_json::json!({"x": 1})));
}

#[test]
fn missing_index_uses_the_position_in_the_delta() {
    let both = r#"{"tool_calls":[{"id":"c1","function":{"name":"a","arguments":"{\"p\":"}},{"id":"c2","function":{"name":"b","arguments":"{\"q\":"}}]}"#;
    let rest =
        r#"{"tool_calls":[{"function":{"arguments":"1}"}},{"function":{"arguments":"2}"}}]}"#;
    let m = assemble(&[
        &chunk(both, ""),
        &chunk(rest, ""),
        &chunk("{}", "tool_calls"),
    ]);
    let args: Vec<_> = m.calls.iter().map(|c| c.call.arguments.as_str()).collect();
    assert_eq!(args, [r#"{"p":1}"#, r#"{"q":2}"#]);
}

#[test]
fn a_new_id_on_a_reused_index_is_a_new_call() {
    let m = assemble(&[
        &chunk(&call(r#""index":0,"#, r#""c1""#, r#""a""#, r#""{}""#), ""),
        &chunk(&call(r#""index":0,"#, r#""c2""#, r#""b""#, r#""{}""#), ""),
        &chunk("{}", "tool_calls"),
    ]);
    let names: Vec<_> = m.calls.iter().map(|c| c.call.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn empty_id_and_name_in_later_deltas_keep_the_first() {
    let m = assemble(&[
        &chunk(
            &call(
                r#""index":0,"#,
                r#""c1""#,
                r#""grep""#,
                r#""{\"pattern\":""#,
            ),
            "",
        ),
        &chunk(&call(r#""index":0,"#, r#""""#, r#""""#, r#""\"fn\"}""#), ""),
        &chunk("{}", "tool_calls"),
    ]);
    let c = &m.calls[0];
    assert_eq!((c.call.id.as_str(), c.call.name.as_str()), ("c1", "grep"));
    assert_eq!(c.parsed, Some(serde_json::json!({"pattern": "fn"})));
}

#[test]
fn only_argument_deltas_create_a_call_with_recognisable_defaults() {
    let m = assemble(&[
        &chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}"#,
            "",
        ),
        &chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"true}"}}]}"#,
            "",
        ),
        "[DONE]",
    ]);
    let c = &m.calls[0];
    assert_eq!(c.call.id, format!("{ATTEMPT}_call0"));
    assert_eq!(c.call.name, MISSING_TOOL_NAME);
    assert!(c.generated_id && c.missing_name);
    assert_eq!(c.parsed, Some(serde_json::json!({"a": true})));
    // No finish reason either: decided from the body, and said so.
    assert!(m.finish_inferred);
    assert_eq!(
        (m.finish.clone(), m.outcome),
        (Finish::ToolCalls, Outcome::ToolCalls)
    );
    assert!(m.diagnostics.contains(&Diagnostic::FinishInferred {
        finish: Finish::ToolCalls
    }));
    assert!(m.diagnostics.contains(&Diagnostic::MissingCallName {
        id: c.call.id.clone()
    }));
}

#[test]
fn null_arguments_and_null_tool_calls_are_nothing() {
    let m = assemble(&[
        &chunk(r#"{"content":"Hi","tool_calls":null}"#, ""),
        &chunk(&call(r#""index":0,"#, r#""c1""#, r#""ls""#, "null"), ""),
        &chunk(r#"{"content":null,"tool_calls":null}"#, "tool_calls"),
    ]);
    assert_eq!(m.text, "Hi");
    assert_eq!(m.calls[0].call.arguments, "");
    assert_eq!(m.calls[0].parsed, None);
    assert_eq!(m.outcome, Outcome::ToolCalls);
}

#[test]
fn arguments_sent_as_an_object_are_kept_as_json_text() {
    let m = assemble(&[
        &chunk(
            &call(r#""index":0,"#, r#""c1""#, r#""ls""#, r#"{"path":"."}"#),
            "",
        ),
        &chunk("{}", "tool_calls"),
    ]);
    assert_eq!(m.calls[0].parsed, Some(serde_json::json!({"path": "."})));
}

#[test]
fn only_choice_zero_is_used_when_n_is_greater_than_one() {
    let two = r#"{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":null},{"index":0,"delta":{"content":"mine"},"finish_reason":null}]}"#;
    let m = assemble(&[two, &chunk("{}", "stop")]);
    assert_eq!(m.text, "mine");
}

#[test]
fn deltas_after_the_finish_reason_are_ignored() {
    let m = assemble(&[
        &chunk(
            &call(r#""index":0,"#, r#""c1""#, r#""ls""#, r#""{}""#),
            "tool_calls",
        ),
        &chunk(
            &call(r#""index":0,"#, "null", "null", r#""{\"late\":1}""#),
            "",
        ),
        &chunk(r#"{"content":"late text"}"#, ""),
        "[DONE]",
    ]);
    assert_eq!(m.calls[0].call.arguments, "{}");
    assert_eq!(m.text, "");
    assert!(
        m.diagnostics
            .iter()
            .any(|d| matches!(d, Diagnostic::LateDelta { .. }))
    );
}

#[test]
fn a_repeated_call_is_kept_once() {
    let full = call(
        r#""index":0,"#,
        r#""c1""#,
        r#""ls""#,
        r#""{\"path\":\".\"}""#,
    );
    let again_other_index = call(
        r#""index":1,"#,
        r#""c1""#,
        r#""ls""#,
        r#""{\"path\":\".\"}""#,
    );
    let m = assemble(&[
        &chunk(&full, ""),
        &chunk(&full, ""),
        &chunk(&again_other_index, ""),
        &chunk("{}", "tool_calls"),
    ]);
    assert_eq!(m.calls.len(), 1);
    assert_eq!(m.calls[0].call.arguments, r#"{"path":"."}"#);
    assert!(
        m.diagnostics
            .contains(&Diagnostic::RepeatedCall { id: "c1".into() })
    );
}

#[test]
fn the_deprecated_function_call_delta_becomes_a_call() {
    let m = assemble(&[
        &chunk(
            r#"{"function_call":{"name":"ls","arguments":"{\"p\":"}}"#,
            "",
        ),
        &chunk(r#"{"function_call":{"arguments":"1}"}}"#, "function_call"),
    ]);
    assert_eq!(m.calls[0].call.name, "ls");
    assert_eq!(m.calls[0].parsed, Some(serde_json::json!({"p": 1})));
    assert_eq!(m.outcome, Outcome::ToolCalls);
}
