//! A session for tests of what is derived and sent from a log: steps with calls,
//! results large and small (some arriving out of order), usage on some steps and not on
//! others, steering taken from the inbox, and a compaction (a crashed one first) part-way.

use super::event::{Body, Event, Source};
use crate::model::{Finish, Outcome, ToolCall, Usage};

fn assistant(step: usize, ids: &[String], usage: bool) -> Body {
    Body::AssistantMessage { reasoning: Vec::new(),
        attempt: format!("a{step}"),
        text: format!("step {step}: \"reading\"\n"),
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: format!(r#"{{"path":"f{step}.txt"}}"#),
            })
            .collect(),
        finish: Finish::ToolCalls,
        outcome: Outcome::ToolCalls,
        usage: usage.then_some(Usage {
            input_tokens: 1000 + step as u64,
            output_tokens: 10,
            ..Usage::default()
        }),
        cost_usd: None,
    }
}

fn result(id: &str, bytes: usize) -> Body {
    Body::ToolResult { images: Vec::new(),
        id: id.into(),
        content: "é line of a file\n".repeat(bytes / 17 + 1),
        is_error: bytes % 2 == 1,
        code: None,
        args: None,
        repairs: Vec::new(),
        approval: None,
    }
}

/// `steps` steps of the session above; the compaction covers the first third of it.
pub(crate) fn session(steps: usize) -> Vec<Event> {
    let mut bodies = vec![Body::UserMessage { images: Vec::new(),
        text: "the task".into(),
        source: Source::User,
    }];
    let mut compact_at = None;
    for step in 0..steps {
        let ids: Vec<String> = (0..1 + step % 3).map(|c| format!("c{step}_{c}")).collect();
        bodies.push(assistant(step, &ids, step % 4 != 3));
        // Results end out of order when there are several; every fifth step's first is large.
        for (c, id) in ids.iter().enumerate().rev() {
            let bytes = if c == 0 && step % 5 == 0 {
                3000
            } else {
                40 + c
            };
            bodies.push(result(id, bytes));
        }
        if step % 7 == 6 {
            bodies.push(Body::InboxIn {
                id: format!("i{step}"),
                source: Source::User,
                lane: super::event::Lane::NextStep,
                text: format!("steer {step}"),
            });
            bodies.push(Body::InboxTake {
                id: format!("i{step}"),
            });
        }
        if step == steps / 3 {
            compact_at = Some(bodies.len() as u64);
        }
        if step == steps / 2
            && let Some(upto) = compact_at
        {
            for summary in [None, Some("the first part, summarized")] {
                bodies.push(Body::ContextCompact {
                    id: "k".into(),
                    upto,
                    reason: super::event::CompactReason::Threshold,
                    focus: None,
                    window: None,
                });
                if let Some(summary) = summary {
                    bodies.push(Body::ContextCompacted {
                        id: "k".into(),
                        upto,
                        summary: summary.into(),
                        attempt: "s".into(),
                        rounds: 1,
                        usage: None,
                        cost_usd: None,
                    });
                }
            }
        }
    }
    numbered(bodies)
}

/// Events with these bodies, numbered from 1 as a log numbers them (the tests of the log's
/// modules build their sessions with it).
pub(crate) fn numbered(bodies: impl IntoIterator<Item = Body>) -> Vec<Event> {
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| Event {
            seq: i as u64 + 1,
            ts_ms: 0,
            body,
        })
        .collect()
}

/// A `session/start` for tests outside the log.
pub(crate) fn start() -> Body {
    super::event::test_start()
}
