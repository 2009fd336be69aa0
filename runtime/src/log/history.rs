//! The history is a pure function of the events (L1), and recovery decides what a log that
//! ended abruptly still owes (L2): results for calls that have none, and an end for an open
//! turn.

use std::collections::{HashMap, HashSet};

use super::event::{Body, Event, StopReason};
use crate::model::{Message, ToolCall, ToolResult};

/// The conversation the model sees, in order: user messages (including steering and
/// follow-ups taken from the inbox), committed assistant messages, and tool results.
pub fn derive_history(events: &[Event]) -> Vec<Message> {
    let mut inbox: HashMap<&str, &str> = HashMap::new();
    let mut history = Vec::new();
    for event in events {
        match &event.body {
            Body::UserMessage { text, .. } => history.push(Message::User { text: text.clone() }),
            Body::AssistantMessage {
                text, tool_calls, ..
            } => history.push(Message::Assistant {
                text: text.clone(),
                tool_calls: tool_calls.clone(),
            }),
            Body::ToolResult {
                id,
                content,
                is_error,
                ..
            } => history.push(Message::Tool(ToolResult {
                call_id: id.clone(),
                content: content.clone(),
                is_error: *is_error,
            })),
            Body::InboxIn { id, text, .. } => {
                inbox.insert(id, text);
            }
            Body::InboxTake { id } => {
                if let Some(text) = inbox.get(id.as_str()) {
                    history.push(Message::User {
                        text: (*text).to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    history
}

/// What a log that stopped abruptly still owes, computed from its events alone.
#[derive(Debug, Default, PartialEq)]
pub struct Recovery {
    /// Events to append so the log is whole again: results for calls that never got one, and
    /// the end of an open turn, in that order.
    pub append: Vec<Body>,
    /// Idempotent calls that started and have no result: safe to run again (L2, L4).
    pub rerun: Vec<ToolCall>,
}

/// Code of the result given to a started, non-idempotent call whose result was never written.
pub const OUTCOME_UNKNOWN: &str = "OUTCOME_UNKNOWN";

/// Applies L2: a call with a result is left alone; a started call without one is re-run when
/// its tool is idempotent and otherwise answered `OUTCOME_UNKNOWN`; a call that never started
/// is answered `NOT_EXECUTED`; an open turn gets an `interrupted` end.
pub fn recover(events: &[Event]) -> Recovery {
    // Calls are scoped to the assistant message that made them: the queue, start and result
    // events between one message and the next belong to it, so a provider that reuses ids
    // across responses ("call_0" every time) cannot make one call's result answer another.
    let mut segments: Vec<Segment> = Vec::new();
    let mut open_turn = false;
    for event in events {
        match &event.body {
            Body::AssistantMessage { tool_calls, .. } => segments.push(Segment {
                calls: tool_calls,
                ..Segment::default()
            }),
            Body::ToolCall { id, idempotent, .. } => {
                if let Some(segment) = segments.last_mut() {
                    segment.idempotent.insert(id, *idempotent);
                }
            }
            Body::ToolStart { id } => {
                if let Some(segment) = segments.last_mut() {
                    segment.started.insert(id);
                }
            }
            Body::ToolResult { id, .. } => {
                if let Some(segment) = segments.last_mut() {
                    segment.answered.insert(id);
                }
            }
            Body::TurnStart { .. } => open_turn = true,
            Body::TurnEnd { .. } => open_turn = false,
            _ => {}
        }
    }
    let mut recovery = Recovery::default();
    for segment in &segments {
        for call in segment.calls {
            let (id, name) = (call.id.as_str(), call.name.as_str());
            if segment.answered.contains(id) {
                continue;
            }
            if !segment.started.contains(id) {
                recovery.append.push(Body::ToolResult {
                    id: id.to_string(),
                    content: format!(
                        "error[NOT_EXECUTED]: paddock stopped before `{name}` started; nothing was run. Call it again if it is still needed."
                    ),
                    is_error: true,
                    code: Some("NOT_EXECUTED".into()),
                    args: None,
                    repairs: Vec::new(),
                });
            } else if segment.idempotent.get(id).copied().unwrap_or(false) {
                recovery.rerun.push(call.clone());
            } else {
                recovery.append.push(Body::ToolResult {
                    id: id.to_string(),
                    content: format!(
                        "error[{OUTCOME_UNKNOWN}]: `{name}` started but paddock stopped before its result was recorded, so whether it took effect is unknown. It was not run again because it is not idempotent: check its effect (for example, read the file it changed) before calling it again."
                    ),
                    is_error: true,
                    code: Some(OUTCOME_UNKNOWN.into()),
                    args: None,
                    repairs: Vec::new(),
                });
            }
        }
    }
    if open_turn {
        recovery.append.push(Body::TurnEnd {
            reason: StopReason::Interrupted,
            detail: Some(
                "paddock stopped during this turn; the log was recovered on resume".into(),
            ),
        });
    }
    recovery
}

/// One assistant message's calls and what the log says happened to each.
#[derive(Default)]
struct Segment<'e> {
    calls: &'e [ToolCall],
    idempotent: HashMap<&'e str, bool>,
    started: HashSet<&'e str>,
    answered: HashSet<&'e str>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::event::Source;
    use crate::model::{Finish, Outcome};

    fn events(bodies: Vec<Body>) -> Vec<Event> {
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

    fn assistant(calls: &[(&str, &str)]) -> Body {
        Body::AssistantMessage {
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

    fn queued(id: &str, idempotent: bool) -> Body {
        Body::ToolCall {
            id: id.into(),
            name: "t".into(),
            tool: Some("t".into()),
            idempotent,
        }
    }

    fn result(id: &str) -> Body {
        Body::ToolResult {
            id: id.into(),
            content: "ok".into(),
            is_error: false,
            code: None,
            args: None,
            repairs: Vec::new(),
        }
    }

    #[test]
    fn history_is_derived_in_order_with_steering_from_the_inbox() {
        let log = events(vec![
            Body::UserMessage {
                text: "task".into(),
                source: Source::User,
            },
            assistant(&[("c1", "read_file")]),
            queued("c1", true),
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
        assert!(matches!(&history[0], Message::User { text } if text == "task"));
        assert!(matches!(&history[2], Message::Tool(r) if r.call_id == "c1"));
        assert!(matches!(&history[3], Message::User { text } if text == "also check docs"));
    }

    #[test]
    fn recovery_follows_l2_call_by_call() {
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
            Body::ToolStart { id: "done".into() },
            Body::ToolStart { id: "idem".into() },
            Body::ToolStart { id: "risky".into() },
            result("done"),
        ]);
        let recovery = recover(&log);
        let rerun: Vec<&str> = recovery.rerun.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(rerun, ["idem"]);
        let codes: Vec<(&str, &str)> = recovery
            .append
            .iter()
            .filter_map(|b| match b {
                Body::ToolResult { id, code, .. } => Some((id.as_str(), code.as_deref()?)),
                _ => None,
            })
            .collect();
        assert_eq!(
            codes,
            [
                ("risky", OUTCOME_UNKNOWN),
                ("queued", "NOT_EXECUTED"),
                ("never_queued", "NOT_EXECUTED")
            ]
        );
        assert!(matches!(
            recovery.append.last(),
            Some(Body::TurnEnd {
                reason: StopReason::Interrupted,
                ..
            })
        ));
    }

    #[test]
    fn a_reused_call_id_is_scoped_to_its_own_message() {
        let log = events(vec![
            Body::TurnStart { turn: 1 },
            assistant(&[("call_0", "read_file")]),
            queued("call_0", true),
            Body::ToolStart {
                id: "call_0".into(),
            },
            result("call_0"),
            assistant(&[("call_0", "edit_file")]),
            queued("call_0", false),
        ]);
        let recovery = recover(&log);
        assert!(recovery.rerun.is_empty());
        assert!(matches!(
            &recovery.append[0],
            Body::ToolResult { id, code: Some(code), .. } if id == "call_0" && code == "NOT_EXECUTED"
        ));
    }

    #[test]
    fn a_whole_log_owes_nothing() {
        let log = events(vec![
            Body::TurnStart { turn: 1 },
            assistant(&[("c1", "read_file")]),
            queued("c1", true),
            Body::ToolStart { id: "c1".into() },
            result("c1"),
            Body::TurnEnd {
                reason: StopReason::Completed,
                detail: None,
            },
        ]);
        assert_eq!(recover(&log), Recovery::default());
    }
}
