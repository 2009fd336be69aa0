//! The legacy `function_call` delta: a call of its own when it comes alone, and the same call
//! (never a second one) when a server mirrors `tool_calls` in it, as llama-cpp-python's
//! `chatml-function-calling` does (V2; issue: every tool call ran twice).

use super::*;
use crate::model::types::*;

/// A delta carrying `tool_calls[0]` and its legacy copy, the way llama-cpp-python streams.
fn both(id: &str, name: &str, args: &str) -> String {
    let args = serde_json::to_string(args).unwrap_or_default();
    format!(
        r#"{{"role":null,"content":null,"function_call":{{"name":"{name}","arguments":{args}}},"tool_calls":[{{"index":0,"id":"{id}","type":"function","function":{{"name":"{name}","arguments":{args}}}}}]}}"#
    )
}

fn legacy(name: Option<&str>, args: &str) -> String {
    let args = serde_json::to_string(args).unwrap_or_default();
    match name {
        Some(name) => format!(r#"{{"function_call":{{"name":"{name}","arguments":{args}}}}}"#),
        None => format!(r#"{{"function_call":{{"arguments":{args}}}}}"#),
    }
}

fn tool(id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let q = |v: Option<&str>| v.map_or("null".to_owned(), |v| format!("\"{v}\""));
    let args = serde_json::to_string(args).unwrap_or_default();
    call(r#""index":0,"#, &q(id), &q(name), &args)
}

fn one_call(m: &AssistantMessage) -> &AssembledCall {
    assert_eq!(m.calls.len(), 1, "{:#?}", m.calls);
    &m.calls[0]
}

#[test]
fn both_fields_in_every_chunk_are_one_call_with_the_servers_id() {
    let m = assemble(&[
        &chunk(ROLE, ""),
        &chunk(&both("call_x1", "read_file", ""), ""),
        &chunk(&both("call_x1", "read_file", r#"{"path": "#), ""),
        &chunk(&both("call_x1", "read_file", r#""notes.txt"}"#), ""),
        &chunk("{}", "tool_calls"),
        "[DONE]",
    ]);
    let c = one_call(&m);
    assert_eq!((c.call.id.as_str(), c.generated_id), ("call_x1", false));
    assert_eq!(c.call.name, "read_file");
    assert_eq!(c.parsed, Some(serde_json::json!({"path": "notes.txt"})));
    assert_eq!(m.outcome, Outcome::ToolCalls);
    assert!(m.diagnostics.contains(&Diagnostic::MirroredFunctionCall {
        id: "call_x1".into()
    }));
}

#[test]
fn a_mirror_in_its_own_chunks_after_the_call_is_the_same_call() {
    let m = assemble(&[
        &chunk(&tool(Some("c1"), Some("ls"), r#"{"path":"."}"#), ""),
        &chunk(&legacy(Some("ls"), r#"{"path":"."}"#), ""),
        &chunk("{}", "tool_calls"),
    ]);
    assert_eq!(one_call(&m).call.id, "c1");
    assert_eq!(one_call(&m).call.arguments, r#"{"path":"."}"#);
}

#[test]
fn a_mirror_that_arrives_before_the_call_is_the_same_call() {
    let m = assemble(&[
        &chunk(&legacy(Some("ls"), r#"{"pa"#), ""),
        &chunk(&tool(Some("c1"), Some("ls"), r#"{"path":"."}"#), ""),
        &chunk(&legacy(None, r#"th":"."}"#), "tool_calls"),
    ]);
    let c = one_call(&m);
    assert_eq!((c.call.id.as_str(), c.call.name.as_str()), ("c1", "ls"));
    assert_eq!(c.parsed, Some(serde_json::json!({"path": "."})));
}

#[test]
fn a_mirror_split_at_other_points_is_not_appended_to_the_call() {
    let m = assemble(&[
        &chunk(&tool(Some("c1"), Some("grep"), ""), ""),
        &chunk(&legacy(Some("grep"), r#"{"pattern":"#), ""),
        &chunk(&tool(None, None, r#"{"pat"#), ""),
        &chunk(&legacy(None, r#" "fn"}"#), ""),
        &chunk(&tool(None, None, r#"tern": "fn"}"#), ""),
        &chunk("{}", "tool_calls"),
    ]);
    let c = one_call(&m);
    assert_eq!(c.call.arguments, r#"{"pattern": "fn"}"#);
    assert_eq!(c.parsed, Some(serde_json::json!({"pattern": "fn"})));
}

#[test]
fn a_mirror_fills_a_name_the_call_lacks_but_never_overrides_it() {
    let m = assemble(&[
        &chunk(&tool(Some("c1"), None, r#"{"path":"a"}"#), ""),
        &chunk(&legacy(Some("read_file"), r#"{"path":"a"}"#), "tool_calls"),
    ]);
    let c = one_call(&m);
    assert_eq!(c.call.name, "read_file");
    assert!(!c.missing_name);

    let m = assemble(&[&chunk(
        r#"{"function_call":{"name":"write_file","arguments":"{}"},"tool_calls":[{"index":0,"id":"c1","function":{"name":"read_file","arguments":"{}"}}]}"#,
        "tool_calls",
    )]);
    assert_eq!(one_call(&m).call.name, "read_file");
}

#[test]
fn parallel_calls_with_a_mirror_of_the_first_stay_two_calls() {
    let m = assemble(&[
        &chunk(&both("c1", "ls", r#"{"path":"a"}"#), ""),
        &chunk(
            &call(
                r#""index":1,"#,
                r#""c2""#,
                r#""ls""#,
                r#""{\"path\":\"b\"}""#,
            ),
            "",
        ),
        &chunk(&legacy(Some("ls"), r#"{"path":"a"}"#), "tool_calls"),
    ]);
    let ids: Vec<_> = m.calls.iter().map(|c| c.call.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
}

#[test]
fn a_legacy_call_alone_is_one_call_split_across_chunks() {
    let m = assemble(&[
        &chunk(ROLE, ""),
        &chunk(&legacy(Some("read_file"), ""), ""),
        &chunk(&legacy(None, r#"{"path":"#), ""),
        &chunk(&legacy(None, r#" "a.txt"}"#), ""),
        &chunk("{}", "function_call"),
        "[DONE]",
    ]);
    let c = one_call(&m);
    assert_eq!(c.call.name, "read_file");
    assert!(c.generated_id);
    assert_eq!(c.parsed, Some(serde_json::json!({"path": "a.txt"})));
    assert_eq!(m.outcome, Outcome::ToolCalls);
    assert!(
        !m.diagnostics
            .iter()
            .any(|d| matches!(d, Diagnostic::MirroredFunctionCall { .. }))
    );
}

#[test]
fn an_interrupted_legacy_call_shows_in_the_partial_output() {
    use crate::model::assembler::WireAssembler;
    let mut assembler = OpenAiAssembler::new(AttemptId(ATTEMPT.into()));
    let mut out = Vec::new();
    let data = chunk(&legacy(Some("ls"), r#"{"pa"#), "");
    assert!(assembler.on_event("", &data, &mut out).is_ok());
    let partial = assembler.partial();
    assert_eq!(partial.calls.len(), 1);
    assert_eq!(
        (
            partial.calls[0].name.as_str(),
            partial.calls[0].arguments.as_str()
        ),
        ("ls", r#"{"pa"#)
    );
}
