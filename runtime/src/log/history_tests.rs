//! Tests of the derived history: order, compaction, ageing (L1).

use super::*;
use crate::model::context::Ageing;
use crate::log::event::{CompactReason, Source};
use crate::model::{Finish, Outcome, ToolCall};

use crate::log::test_session::numbered as events;

fn assistant(ids: &[&str]) -> Body {
    Body::AssistantMessage { reasoning: Vec::new(),
        attempt: "a1".into(),
        text: "working".into(),
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "read_file".into(),
                arguments: "{}".into(),
            })
            .collect(),
        finish: Finish::ToolCalls,
        outcome: Outcome::ToolCalls,
        usage: None,
        cost_usd: None,
    }
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

#[test]
fn history_is_derived_in_order_with_steering_from_the_inbox() {
    let log = events(vec![
        Body::UserMessage { images: Vec::new(),
            text: "task".into(),
            source: Source::User,
        },
        assistant(&["c1"]),
        Body::InboxIn {
            id: "i1".into(),
            source: Source::User,
            lane: crate::log::Lane::NextStep,
            text: "also check docs".into(),
        },
        result("c1"),
        Body::InboxTake { id: "i1".into() },
    ]);
    let history = derive_history(&log);
    assert_eq!(history.len(), 4);
    assert!(matches!(&history[0], Message::User { text, .. } if text == "task"));
    assert!(matches!(&history[2], Message::Tool(r) if r.call_id == "c1"));
    assert!(matches!(&history[3], Message::User { text, .. } if text == "also check docs"));
}

#[test]
fn results_logged_as_calls_end_are_sent_in_the_calls_order() {
    let log = events(vec![
        assistant(&["a", "b", "c"]),
        result("c"),
        result("a"),
        result("b"),
        assistant(&[]),
    ]);
    let history = derive_history(&log);
    let ids: Vec<&str> = history
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

fn user(text: &str) -> Body {
    Body::UserMessage { images: Vec::new(),
        text: text.into(),
        source: Source::User,
    }
}

fn compacted(upto: u64, summary: &str) -> Body {
    Body::ContextCompacted {
        id: "k1".into(),
        upto,
        summary: summary.into(),
        attempt: "a".into(),
        rounds: 1,
        usage: None,
        cost_usd: None,
    }
}

fn texts(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .map(|m| match m {
            Message::User { text, .. } => format!("user:{text}"),
            Message::Assistant { tool_calls, .. } => format!("assistant:{}", tool_calls.len()),
            Message::Tool(r) => format!("tool:{}", r.call_id),
            Message::System { text } => format!("system:{text}"),
        })
        .collect()
}

#[test]
fn a_compaction_replaces_what_it_covers_and_keeps_the_task_and_the_rest() {
    let log = events(vec![
        user("the task"),  // 1
        assistant(&["a"]), // 2
        result("a"),       // 3
        assistant(&["b"]), // 4
        result("b"),       // 5
        Body::ContextCompact {
            id: "k1".into(),
            upto: 3,
            reason: CompactReason::Threshold,
            focus: None,
            window: None,
        }, // 6
        compacted(3, "did a"), // 7
        assistant(&[]),    // 8
    ]);
    let history = derive_history(&log);
    let shown = texts(&history);
    assert_eq!(shown.len(), 5, "{shown:?}");
    assert!(
        shown[0].starts_with("user:[paddock: the earlier part"),
        "{shown:?}"
    );
    assert!(shown[0].ends_with("did a"), "{shown:?}");
    assert!(shown[1].contains(TASK_HEADER) && shown[1].ends_with("the task"));
    assert_eq!(shown[2..], ["assistant:1", "tool:b", "assistant:0"]);
}

#[test]
fn a_half_written_compaction_changes_nothing() {
    let mut bodies = vec![user("t"), assistant(&["a"]), result("a"), assistant(&[])];
    let before = derive_history(&events(bodies.clone()));
    bodies.push(Body::ContextCompact {
        id: "k1".into(),
        upto: 3,
        reason: CompactReason::Overflow,
        focus: None,
        window: Some(3000),
    });
    bodies.push(Body::AttemptStart {
        attempt: "x".into(),
        number: 1,
    });
    assert_eq!(derive_history(&events(bodies)), before);
}

#[test]
fn a_cut_inside_a_batch_never_leaves_a_result_without_its_call() {
    // The cut falls after the call and one of its results: the whole batch goes.
    let log = events(vec![
        user("t"),
        assistant(&["a", "b"]),
        result("b"),
        compacted(3, "s"),
        result("a"),
        assistant(&[]),
    ]);
    let shown = texts(&derive_history(&log));
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert_eq!(shown[2], "assistant:0");
}

#[test]
fn large_old_results_age_out_to_a_stub_that_names_the_spill_file() {
    let big = Body::ToolResult { images: Vec::new(),
        id: "c/1".into(),
        content: "x".repeat(5000),
        is_error: false,
        code: None,
        args: None,
        repairs: Vec::new(),
        approval: None,
    };
    let mut bodies = vec![user("t"), assistant(&["c/1"]), big];
    for _ in 0..3 {
        bodies.push(assistant(&[]));
    }
    let history = History::of(&events(bodies));
    let ageing = Ageing {
        after_steps: 3,
        bytes: 1000,
    };
    let rendered = history.render(Some(ageing));
    let stub = rendered.get(2).expect("a third message");
    let Message::Tool(stub) = stub.message.as_ref() else {
        panic!("{stub:?}");
    };
    assert!(
        stub.content.contains("/spill/2-c_1.result.txt"),
        "{}",
        stub.content
    );
    assert!(stub.content.len() < 400);
    assert_ne!(
        rendered.keys()[2],
        history.entries()[2].key,
        "a new key for the stub"
    );
    let young = Ageing {
        after_steps: 4,
        bytes: 1000,
    };
    assert!(
        matches!(history.render(Some(young)).to_vec()[2], Message::Tool(ref r) if r.content.len() == 5000)
    );
}

#[test]
fn deriving_event_by_event_equals_deriving_at_once_and_keys_stay_stable() {
    let bodies = vec![
        user("t"),
        assistant(&["a", "b"]),
        result("b"),
        result("a"),
        assistant(&[]),
    ];
    let log = events(bodies);
    let mut history = History::default();
    let mut keys = Vec::new();
    for event in &log {
        history.push(event);
        keys.push(history.render(None).keys());
    }
    assert_eq!(history.render(None).to_vec(), derive_history(&log));
    // What was rendered once keeps its key.
    assert_eq!(keys[1][..2], keys[4][..2]);
}
