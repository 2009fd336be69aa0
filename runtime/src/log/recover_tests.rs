//! Tests of `recover`: L2 call by call, the re-run rule, turn ends.

use super::*;
use crate::model::Finish;

use crate::log::test_session::numbered as events;

fn assistant(calls: &[(&str, &str)]) -> Body {
    Body::AssistantMessage { reasoning: Vec::new(),
        attempt: "a1".into(),
        text: "working".into(),
        tool_calls: calls
            .iter()
            .map(|(id, name)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: "{}".into(),
            })
            .collect(),
        finish: Finish::ToolCalls,
        outcome: Outcome::ToolCalls,
        usage: None,
        cost_usd: None,
    }
}

fn queued_at(id: &str, idempotent: bool, paths: &[&str], writes: bool) -> Body {
    Body::ToolCall {
        id: id.into(),
        name: "t".into(),
        tool: Some("t".into()),
        idempotent,
        touches: Some(Touches {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            writes,
        }),
    }
}

fn queued(id: &str, idempotent: bool) -> Body {
    queued_at(id, idempotent, &[id], !idempotent)
}

fn start(id: &str) -> Body {
    Body::ToolStart { id: id.into() }
}

fn result(id: &str) -> Body {
    Body::ToolResult { images: Vec::new(),
        id: id.into(),
        content: "ok".into(),
        is_error: false,
        code: None,
        args: None,
        repairs: Vec::new(),
        approval: None,
    }
}

/// Each step as (id, what): "rerun", or the synthesized code.
fn steps(recovery: &Recovery) -> Vec<(String, String)> {
    recovery
        .steps
        .iter()
        .map(|step| match step {
            Settle::Rerun(call) => (call.id.clone(), "rerun".into()),
            Settle::Append(Body::ToolResult { id, code, .. }) => {
                (id.clone(), code.clone().unwrap_or_default())
            }
            Settle::Append(Body::TurnEnd { reason, .. }) => ("turn".into(), reason.as_str().into()),
            Settle::Append(other) => ("?".into(), format!("{other:?}")),
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn recovery_follows_l2_call_by_call_in_the_calls_order() {
    let log = events(vec![
        Body::TurnStart { turn: 1 },
        assistant(&[
            ("done", "read_file"),
            ("idem", "read_file"),
            ("risky", "edit_file"),
            ("queued", "write_file"),
            ("never_queued", "grep"),
        ]),
        queued("done", true),
        queued("idem", true),
        queued("risky", false),
        queued("queued", false),
        start("done"),
        start("risky"),
        start("idem"),
        result("done"),
    ]);
    assert_eq!(
        steps(&recover(&log)),
        pairs(&[
            ("idem", "rerun"),
            ("risky", OUTCOME_UNKNOWN),
            ("queued", "NOT_EXECUTED"),
            ("never_queued", "NOT_EXECUTED"),
            ("turn", "interrupted"),
        ])
    );
}

#[test]
fn a_started_idempotent_call_is_not_rerun_after_a_later_call_on_its_paths_started() {
    let log = events(vec![
        Body::TurnStart { turn: 1 },
        assistant(&[("w", "write_file"), ("e", "edit_file"), ("r", "read_file")]),
        queued_at("w", true, &["/p/a.txt"], true),
        queued_at("e", false, &["/p/a.txt"], true),
        queued_at("r", true, &["/p/b.txt"], false),
        start("w"),
        start("e"),
        result("e"),
        start("r"),
    ]);
    let recovery = recover(&log);
    assert_eq!(
        steps(&recovery),
        pairs(&[
            ("w", OUTCOME_UNKNOWN),
            ("r", "rerun"),
            ("turn", "interrupted")
        ])
    );
    let Settle::Append(Body::ToolResult { content, .. }) = &recovery.steps[0] else {
        panic!("{:?}", recovery.steps[0]);
    };
    assert!(content.contains("a later call (`edit_file`)"), "{content}");
}

#[test]
fn reads_do_not_block_reads_and_unknown_reach_blocks_everything() {
    let log = events(vec![
        assistant(&[
            ("r1", "read_file"),
            ("r2", "read_file"),
            ("x", "run_command"),
        ]),
        queued_at("r1", true, &["/p/a"], false),
        queued_at("r2", true, &["/p/a"], false),
        Body::ToolCall {
            id: "x".into(),
            name: "run_command".into(),
            tool: None,
            idempotent: false,
            touches: None,
        },
        start("r1"),
        start("r2"),
    ]);
    assert_eq!(
        steps(&recover(&log)),
        pairs(&[("r1", "rerun"), ("r2", "rerun"), ("x", "NOT_EXECUTED")])
    );
    let mut blocked = log.clone();
    blocked.push(Event {
        seq: 7,
        ts_ms: 0,
        body: start("x"),
    });
    assert_eq!(
        steps(&recover(&blocked)),
        pairs(&[
            ("r1", OUTCOME_UNKNOWN),
            ("r2", OUTCOME_UNKNOWN),
            ("x", OUTCOME_UNKNOWN)
        ])
    );
}

#[test]
fn a_reused_call_id_is_scoped_to_its_own_message() {
    let log = events(vec![
        Body::TurnStart { turn: 1 },
        assistant(&[("call_0", "read_file")]),
        queued("call_0", true),
        start("call_0"),
        result("call_0"),
        assistant(&[("call_0", "edit_file")]),
        queued("call_0", false),
    ]);
    assert_eq!(
        steps(&recover(&log)),
        pairs(&[("call_0", "NOT_EXECUTED"), ("turn", "interrupted")])
    );
}

#[test]
fn a_turn_that_lost_only_its_end_after_the_final_answer_is_completed() {
    let answer = Body::AssistantMessage { reasoning: Vec::new(),
        attempt: "a2".into(),
        text: "done".into(),
        tool_calls: Vec::new(),
        finish: Finish::Stop,
        outcome: Outcome::Completed,
        usage: None,
        cost_usd: None,
    };
    let log = events(vec![
        Body::TurnStart { turn: 1 },
        assistant(&[("c1", "read_file")]),
        queued("c1", true),
        start("c1"),
        result("c1"),
        answer,
    ]);
    assert_eq!(steps(&recover(&log)), pairs(&[("turn", "completed")]));
    let mut asked_again = log.clone();
    asked_again.push(Event {
        seq: 7,
        ts_ms: 0,
        body: Body::AttemptStart {
            attempt: "a3".into(),
            number: 1,
        },
    });
    assert_eq!(
        steps(&recover(&asked_again)),
        pairs(&[("turn", "interrupted")])
    );
}

#[test]
fn a_whole_log_owes_nothing() {
    let log = events(vec![
        Body::TurnStart { turn: 1 },
        assistant(&[("c1", "read_file")]),
        queued("c1", true),
        start("c1"),
        result("c1"),
        Body::TurnEnd {
            reason: StopReason::Completed,
            detail: None,
        },
    ]);
    assert_eq!(recover(&log), Recovery::default());
}

/// A log cut just before call `b` (a fork there): every call of the message without a result
/// is answered, none run again; `b` and the one not started as not run, the one running beside
/// it as interrupted there; the one answered is left alone; the turn ends.
#[test]
fn a_log_cut_before_a_call_answers_every_call_left_without_a_result() {
    let log = events([
        Body::TurnStart { turn: 1 },
        assistant(&[("done", "t"), ("beside", "t"), ("b", "t"), ("later", "t")]),
        queued("done", false),
        queued("beside", true),
        queued("b", false),
        queued("later", false),
        start("done"),
        result("done"),
        start("beside"),
    ]);
    let owed = cut_before_call(&log, "b");
    let said: Vec<(String, String)> = owed
        .iter()
        .map(|body| match body {
            Body::ToolResult { id, content, code, .. } => {
                assert_eq!(code.as_deref(), Some("FORKED"));
                let what = if content.contains("was not run") { "not run" } else { "running" };
                (id.clone(), what.to_string())
            }
            Body::TurnEnd { reason, .. } => ("turn".into(), reason.as_str().into()),
            other => ("?".into(), format!("{other:?}")),
        })
        .collect();
    assert_eq!(
        said,
        pairs(&[
            ("beside", "running"),
            ("b", "not run"),
            ("later", "not run"),
            ("turn", "interrupted"),
        ])
    );
}
