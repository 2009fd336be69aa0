//! Tests of the log-to-ATIF mapping's edge cases; whole sessions through the binary, checked by
//! Harbor's and the `atif` package's validators, are in `tests/tests/suite/atif.rs`.

use super::*;
use crate::log::event::test_start;
use crate::model::{Finish, Outcome};

fn at(bodies: Vec<Body>) -> Vec<Event> {
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| Event {
            seq: i as u64 + 1,
            ts_ms: 1_767_225_600_000 + i as u64 * 1500,
            body,
        })
        .collect()
}

fn user(text: &str) -> Body {
    Body::UserMessage { images: Vec::new(),
        text: text.into(),
        source: Source::User,
    }
}

fn assistant(text: &str, calls: &[(&str, &str)], usage: Option<Usage>) -> Body {
    Body::AssistantMessage { reasoning: Vec::new(),
        attempt: "a1".into(),
        text: text.into(),
        tool_calls: calls
            .iter()
            .map(|(id, arguments)| crate::model::ToolCall {
                id: (*id).into(),
                name: "read_file".into(),
                arguments: (*arguments).into(),
            })
            .collect(),
        finish: Finish::ToolCalls,
        outcome: Outcome::ToolCalls,
        usage,
        cost_usd: usage.map(|_| 0.25),
    }
}

fn result(id: &str, args: Option<Value>) -> Body {
    Body::ToolResult { images: Vec::new(),
        id: id.into(),
        content: format!("content of {id}"),
        is_error: false,
        code: None,
        args,
        repairs: Vec::new(),
        approval: None,
    }
}

fn end(reason: StopReason) -> Body {
    Body::TurnEnd {
        reason,
        detail: None,
    }
}

fn with_system(system: &str) -> Body {
    let Body::SessionStart(mut start) = test_start() else {
        unreachable!()
    };
    start.system = system.into();
    Body::SessionStart(start)
}

/// Each `source_call_id` names a call of its own step, every call has exactly one result, and
/// steps are numbered 1, 2, ... — what both validators check.
fn assert_pairs(t: &Trajectory) {
    for (i, step) in t.steps.iter().enumerate() {
        assert_eq!(step.step_id, i as u64 + 1);
        let ids: Vec<&str> = step
            .tool_calls
            .iter()
            .flatten()
            .map(|c| c.tool_call_id.as_str())
            .collect();
        let results: Vec<&str> = step
            .observation
            .iter()
            .flat_map(|o| &o.results)
            .filter_map(|r| r.source_call_id.as_deref())
            .collect();
        let mut sorted = results.clone();
        sorted.sort_unstable();
        let mut calls = ids.clone();
        calls.sort_unstable();
        assert_eq!(sorted, calls, "step {}", step.step_id);
    }
}

#[test]
fn arguments_that_are_not_an_object_become_an_empty_object_with_the_raw_text_kept() {
    let events = at(vec![
        with_system("be brief"),
        user("read"),
        assistant(
            "",
            &[("c1", r#"["a.txt"]"#), ("c2", "not json"), ("c3", "7")],
            None,
        ),
        result("c1", None),
        result("c2", None),
        result("c3", Some(json!({"path": "b.txt"}))),
        end(StopReason::Completed),
    ]);
    let t = trajectory(&events);
    assert_pairs(&t);
    let calls = t.steps[2].tool_calls.as_ref().unwrap();
    assert!(calls[0].arguments.is_empty());
    assert_eq!(
        calls[0].extra.as_ref().unwrap()["raw_arguments"],
        r#"["a.txt"]"#
    );
    assert!(calls[1].arguments.is_empty());
    assert_eq!(
        calls[1].extra.as_ref().unwrap()["raw_arguments"],
        "not json"
    );
    // What the tool ran with wins over the model's text, which is kept.
    assert_eq!(
        Value::Object(calls[2].arguments.clone()),
        json!({"path": "b.txt"})
    );
    assert_eq!(calls[2].extra.as_ref().unwrap()["raw_arguments"], "7");
    // No `null` anywhere: the schema's validators refuse unknown keys and most nulls.
    let text = serde_json::to_string(&t).unwrap();
    assert!(!text.contains("null"), "{text}");
}

#[test]
fn a_call_without_a_result_is_given_one_that_says_whether_it_started() {
    let events = at(vec![
        with_system("s"),
        user("go"),
        assistant("", &[("c1", "{}"), ("c2", "{}"), ("c3", "{}")], None),
        Body::ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            tool: None,
            idempotent: true,
            touches: None,
        },
        Body::ToolStart { id: "c1".into() },
        result("c1", None),
        Body::ToolStart { id: "c2".into() },
    ]);
    let t = trajectory(&events);
    assert_pairs(&t);
    let results = &t.steps[2].observation.as_ref().unwrap().results;
    let status = |id: &str| {
        let r = results
            .iter()
            .find(|r| r.source_call_id.as_deref() == Some(id))
            .unwrap();
        r.extra.as_ref().unwrap().get("status").cloned()
    };
    assert_eq!(status("c1"), None, "a real result");
    assert_eq!(status("c2"), Some(json!("outcome_unknown")));
    assert_eq!(status("c3"), Some(json!("not_run")));
    let root = t.extra.as_ref().unwrap();
    assert_eq!(root["stop_reason"], Value::Null);
    assert_eq!(root["log_ends_without_stop"], true);
    let notes = t.notes.unwrap();
    assert!(notes.contains("ends without a stop"), "{notes}");
    assert!(notes.contains("2 call(s) have no result"), "{notes}");
}

#[test]
fn a_session_without_any_assistant_message_still_has_a_step_and_its_stop() {
    let events = at(vec![
        with_system(""),
        user("hello"),
        Body::TurnStart { turn: 1 },
        Body::TurnEnd {
            reason: StopReason::ModelError,
            detail: Some("HTTP 500".into()),
        },
    ]);
    let t = trajectory(&events);
    assert_eq!(t.steps.len(), 1);
    assert_eq!(t.steps[0].source, StepSource::User);
    assert_eq!(
        t.steps[0].timestamp.as_deref(),
        Some("2026-01-01T00:00:01.500Z")
    );
    assert_eq!(t.extra.as_ref().unwrap()["stop_reason"], "model_error");
    assert_eq!(t.extra.as_ref().unwrap()["stop_detail"], "HTTP 500");
    let totals = t.final_metrics.unwrap();
    assert_eq!(totals.total_steps, Some(1));
    assert_eq!(totals.total_prompt_tokens, Some(0));
    assert_eq!(totals.total_cost_usd, None, "nothing was priced");

    // Not even a system prompt: one step saying so.
    let bare = trajectory(&at(vec![with_system("")]));
    assert_eq!(bare.steps.len(), 1);
    assert!(bare.steps[0].message.contains("no message"));
    assert!(trajectory(&[]).steps.len() == 1);
}

#[test]
fn usage_maps_to_metrics_and_the_totals_count_compactions_too() {
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 7,
        cache_read_tokens: 60,
        cache_write_tokens: 30,
    };
    let events = at(vec![
        with_system("s"),
        user("go"),
        assistant("one", &[("c1", "{}")], Some(usage)),
        result("c1", None),
        Body::ContextCompact {
            id: "k1".into(),
            upto: 4,
            reason: CompactReason::Requested,
            focus: Some("the bug".into()),
            window: None,
        },
        Body::ContextCompacted {
            id: "k1".into(),
            upto: 4,
            summary: "we read c1".into(),
            attempt: "k1a".into(),
            rounds: 2,
            usage: Some(usage),
            cost_usd: Some(0.5),
        },
        end(StopReason::MaxTurns),
    ]);
    let t = trajectory(&events);
    let m = t.steps[2].metrics.as_ref().unwrap();
    assert_eq!(
        m.prompt_tokens,
        Some(100),
        "input already counts cache reads and writes"
    );
    assert_eq!(m.cached_tokens, Some(60));
    assert_eq!(m.completion_tokens, Some(7));
    assert_eq!(m.cost_usd, Some(0.25));
    assert_eq!(m.extra.as_ref().unwrap()["cache_write_tokens"], 30);
    let summary = &t.steps[3];
    assert_eq!(summary.source, StepSource::Agent);
    assert_eq!(summary.message, "we read c1");
    assert_eq!(summary.llm_call_count, Some(2));
    assert_eq!(
        summary.extra.as_ref().unwrap()["compaction"],
        json!({"upto_seq": 4, "reason": "requested", "focus": "the bug"})
    );
    let totals = t.final_metrics.unwrap();
    assert_eq!(totals.total_prompt_tokens, Some(200));
    assert_eq!(totals.total_completion_tokens, Some(14));
    assert_eq!(totals.total_cached_tokens, Some(120));
    assert_eq!(totals.total_cost_usd, Some(0.75));
    assert_eq!(totals.total_steps, Some(4));
    assert_eq!(t.extra.unwrap()["stop_reason"], "max_turns");
}

#[test]
fn steering_and_follow_ups_are_user_steps_when_taken_and_a_moved_model_names_later_steps() {
    let events = at(vec![
        with_system("s"),
        user("go"),
        Body::InboxIn {
            id: "i1".into(),
            source: Source::User,
            lane: Lane::NextStep,
            text: "also check b".into(),
        },
        Body::InboxIn {
            id: "i2".into(),
            source: Source::User,
            lane: Lane::NextTurn,
            text: "never taken".into(),
        },
        Body::InboxTake { id: "i1".into() },
        Body::SessionModel {
            model: "openai/other".into(),
            model_config: Box::new(
                serde_json::from_value(json!({"provider": "openai", "model": "other"})).unwrap(),
            ),
        },
        assistant("ok", &[], None),
        end(StopReason::Completed),
    ]);
    let t = trajectory(&events);
    let messages: Vec<&str> = t.steps.iter().map(|s| s.message.as_str()).collect();
    assert_eq!(messages, ["s", "go", "also check b", "ok"]);
    assert_eq!(t.steps[2].extra.as_ref().unwrap()["lane"], "next-step");
    assert_eq!(t.agent.model_name.as_deref(), Some("m"));
    assert_eq!(t.steps[3].model_name.as_deref(), Some("openai/other"));
    assert!(t.steps[3].tool_calls.is_none());
}

#[test]
fn write_trajectory_writes_one_private_document_that_reads_back_and_notes_a_torn_line() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join(crate::log::LOG_FILE);
    let (writer, first) = crate::log::LogWriter::start(&log, with_system("s")).unwrap();
    let session = crate::log::SessionLog::new(writer, vec![first]);
    session.append(user("go")).unwrap();
    session.append(Body::TurnStart { turn: 1 }).unwrap();
    drop(session);
    // A crash mid-write leaves half a line.
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(br#"{"seq":4,"ts_ms":1,"type":"turn/e"#);
    std::fs::write(&log, bytes).unwrap();

    let out = dir.path().join("trajectory.json");
    write_trajectory(&log, &out).unwrap();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let read: Trajectory = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(read, trajectory_of_log(&log).unwrap());
    assert_eq!(read.steps.len(), 2);
    let notes = read.notes.unwrap();
    assert!(notes.contains("turn 1 has no turn/end"), "{notes}");
    assert!(notes.contains("last line is torn"), "{notes}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        3,
        "the log, its index and the trajectory: {leftovers:?}"
    );

    // Nowhere to write: the error names the path.
    let refused = write_trajectory(&log, &dir.path().join("missing/t.json")).unwrap_err();
    assert!(refused.to_string().contains("missing/t.json"), "{refused}");
}

#[test]
fn the_tools_the_session_offered_are_the_agents_tool_definitions() {
    let Body::SessionStart(mut start) = test_start() else {
        unreachable!()
    };
    start.tools = vec![crate::model::ToolDef {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let t = trajectory(&at(vec![Body::SessionStart(start), user("hi")]));
    assert_eq!(
        serde_json::to_value(&t.agent.tool_definitions).unwrap(),
        json!([{"type": "function", "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }}])
    );
    // A log that names no tools (written before session/start kept them) gives none.
    let none = trajectory(&at(vec![test_start(), user("hi")]));
    assert!(none.agent.tool_definitions.is_none());
}
