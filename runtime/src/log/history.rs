//! The history is a pure function of the events (L1): what the model is sent, rebuilt from the
//! log before every request. Results are logged as each call ends (L8), so they may sit in the
//! log in completion order; the history puts them in the order of the calls in the assistant
//! message that made them, so every request shows the model its own order.

use std::collections::HashMap;

use super::event::{Body, Event};
use crate::model::{Message, ToolCall, ToolResult};

/// The conversation the model sees, in order: user messages (including steering and
/// follow-ups taken from the inbox), committed assistant messages, and tool results in their
/// calls' order.
pub fn derive_history(events: &[Event]) -> Vec<Message> {
    let mut inbox: HashMap<&str, &str> = HashMap::new();
    let mut history = Vec::new();
    // The calls of the latest assistant message, and the results they got so far.
    let mut calls: &[ToolCall] = &[];
    let mut results: HashMap<&str, ToolResult> = HashMap::new();
    for event in events {
        match &event.body {
            Body::UserMessage { text, .. } => {
                flush(&mut history, calls, &mut results);
                history.push(Message::User { text: text.clone() });
            }
            Body::AssistantMessage {
                text, tool_calls, ..
            } => {
                flush(&mut history, calls, &mut results);
                history.push(Message::Assistant {
                    text: text.clone(),
                    tool_calls: tool_calls.clone(),
                });
                calls = tool_calls;
            }
            Body::ToolResult {
                id,
                content,
                is_error,
                ..
            } => {
                results.insert(
                    id,
                    ToolResult {
                        call_id: id.clone(),
                        content: content.clone(),
                        is_error: *is_error,
                    },
                );
            }
            Body::InboxIn { id, text, .. } => {
                inbox.insert(id, text);
            }
            Body::InboxTake { id } => {
                if let Some(text) = inbox.get(id.as_str()) {
                    flush(&mut history, calls, &mut results);
                    history.push(Message::User {
                        text: (*text).to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    flush(&mut history, calls, &mut results);
    history
}

/// Whether the history holds a message from the user (the task, a follow-up or steering):
/// without one there is nothing to work on, and no turn runs (issue 12, item 4).
pub fn has_task(events: &[Event]) -> bool {
    events.iter().any(|e| match &e.body {
        Body::UserMessage { source, .. } => *source == super::event::Source::User,
        Body::InboxTake { .. } => true,
        _ => false,
    })
}

/// Appends the results gathered so far in the order of `calls`.
fn flush<'e>(
    history: &mut Vec<Message>,
    calls: &'e [ToolCall],
    results: &mut HashMap<&'e str, ToolResult>,
) {
    for call in calls {
        if let Some(result) = results.remove(call.id.as_str()) {
            history.push(Message::Tool(result));
        }
    }
    results.clear();
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

    fn assistant(ids: &[&str]) -> Body {
        Body::AssistantMessage {
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
        Body::ToolResult {
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
            Body::UserMessage {
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
        assert!(matches!(&history[0], Message::User { text } if text == "task"));
        assert!(matches!(&history[2], Message::Tool(r) if r.call_id == "c1"));
        assert!(matches!(&history[3], Message::User { text } if text == "also check docs"));
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
}
