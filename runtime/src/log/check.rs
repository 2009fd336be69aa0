//! The invariants a log must hold before anything is derived from it (L8): sequence numbers
//! 1, 2, 3 ... without gaps or repeats; `session/start` first and only first; every queue,
//! start and result names a call of the assistant message before it, and each call gets at
//! most one result; no assistant message follows calls still owed a result; no turn starts
//! inside another; an inbox entry is taken only after it arrived; a compaction covers only
//! events before it, and never less than the one before it. A log that breaks one was
//! edited or damaged, and the model would be sent a call answered twice or an orphan result.

use std::collections::HashSet;

use super::event::{Body, Event};

/// The first broken invariant: its line (1-based; line n holds seq n) and what is wrong.
pub(super) fn check(events: &[Event]) -> Result<(), (usize, String)> {
    let mut checker = Checker::default();
    events.iter().try_for_each(|event| checker.push(event))
}

/// The invariants checked one event at a time, as a log is streamed (`stream_log`).
#[derive(Default)]
pub(super) struct Checker {
    line: usize,
    calls: Vec<String>,
    queued: HashSet<String>,
    answered: HashSet<String>,
    inbox: HashSet<String>,
    open_turn: Option<u64>,
    compacted_upto: u64,
}

impl Checker {
    /// Takes the next event; the first broken invariant with its line.
    pub(super) fn push(&mut self, event: &Event) -> Result<(), (usize, String)> {
        self.line += 1;
        let line = self.line;
        let expected = line as u64;
        if event.seq != expected {
            let why = if event.seq < expected {
                "an earlier line repeated (duplicated?)"
            } else {
                "lines missing before it (deleted?)"
            };
            return Err((
                line,
                format!(
                    "sequence number {} where {expected} was expected: {why}",
                    event.seq
                ),
            ));
        }
        let fail = |problem: String| Err((line, problem));
        match &event.body {
            Body::SessionStart(_) if line != 1 => {
                return fail("a second session/start".into());
            }
            Body::SessionStart(_) => {}
            _ if line == 1 => {
                return fail("the log does not start with session/start".into());
            }
            Body::AssistantMessage { tool_calls, .. } => {
                if let Some(owed) = self.calls.iter().find(|id| !self.answered.contains(*id)) {
                    return fail(format!(
                        "an assistant message while call `{owed}` of the one before has no result"
                    ));
                }
                self.calls = tool_calls.iter().map(|c| c.id.clone()).collect();
                self.queued.clear();
                self.answered.clear();
            }
            Body::ToolCall { id, .. } => {
                if !self.calls.contains(id) {
                    return fail(format!(
                        "tool/call `{id}` is not a call of the assistant message before it"
                    ));
                }
                if !self.queued.insert(id.clone()) {
                    return fail(format!("call `{id}` is queued twice"));
                }
            }
            Body::ToolStart { id } => {
                if !self.queued.contains(id) {
                    return fail(format!("call `{id}` starts without being queued"));
                }
                if self.answered.contains(id) {
                    return fail(format!("call `{id}` starts after its result"));
                }
            }
            Body::ToolResult { id, .. } => {
                if !self.calls.contains(id) {
                    return fail(format!(
                        "a result for `{id}`, which is not a call of the assistant message before it"
                    ));
                }
                if !self.answered.insert(id.clone()) {
                    return fail(format!("a second result for call `{id}`"));
                }
            }
            Body::TurnStart { turn } => {
                if let Some(open) = self.open_turn {
                    return fail(format!("turn {turn} starts while turn {open} is open"));
                }
                self.open_turn = Some(*turn);
            }
            Body::TurnEnd { .. } => self.open_turn = None,
            Body::ContextCompacted { upto, .. } => {
                if *upto >= event.seq || *upto < self.compacted_upto {
                    return fail(format!(
                        "context/compacted covers up to event {upto}: not before itself, or less than an earlier compaction ({})",
                        self.compacted_upto
                    ));
                }
                self.compacted_upto = *upto;
            }
            Body::ConversationRewind { from, turn } if *from == 0 || *from >= event.seq || *turn == 0 => {
                return fail(format!(
                    "conversation/rewind to turn {turn} from event {from}: turns count from 1 and it must take out events before itself"
                ));
            }
            Body::InboxIn { id, .. } => {
                self.inbox.insert(id.clone());
            }
            Body::InboxTake { id } if !self.inbox.contains(id) => {
                return fail(format!("inbox entry `{id}` is taken but never arrived"));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::event::Source;
    use crate::model::{Finish, Outcome, ToolCall};

    fn events(bodies: Vec<Body>) -> Vec<Event> {
        let start = crate::log::event::test_start();
        crate::log::test_session::numbered(std::iter::once(start).chain(bodies))
    }

    fn assistant(ids: &[&str]) -> Body {
        Body::AssistantMessage { reasoning: Vec::new(),
            attempt: "a".into(),
            text: String::new(),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                })
                .collect(),
            finish: Finish::ToolCalls,
            outcome: Outcome::ToolCalls,
            usage: None,
            cost_usd: None,
        }
    }

    fn queued(id: &str) -> Body {
        Body::ToolCall {
            id: id.into(),
            name: "t".into(),
            tool: None,
            idempotent: true,
            touches: None,
        }
    }

    fn result(id: &str) -> Body {
        Body::ToolResult { images: Vec::new(),
            id: id.into(),
            content: String::new(),
            is_error: false,
            code: None,
            args: None,
            repairs: Vec::new(),
            approval: None,
        }
    }

    fn problem(bodies: Vec<Body>) -> (usize, String) {
        check(&events(bodies)).unwrap_err()
    }

    #[test]
    fn a_whole_session_passes() {
        let user = Body::UserMessage { images: Vec::new(),
            text: "t".into(),
            source: Source::User,
        };
        let log = events(vec![
            user,
            Body::TurnStart { turn: 1 },
            assistant(&["c1", "c2"]),
            queued("c1"),
            queued("c2"),
            Body::ToolStart { id: "c2".into() },
            result("c2"),
            // A re-run on resume starts a call again before its result.
            Body::ToolStart { id: "c1".into() },
            Body::ToolStart { id: "c1".into() },
            result("c1"),
            assistant(&[]),
        ]);
        assert_eq!(check(&log), Ok(()));
    }

    #[test]
    fn pairing_damage_is_refused_with_its_line() {
        let twice = problem(vec![
            assistant(&["c1"]),
            queued("c1"),
            result("c1"),
            result("c1"),
        ]);
        assert_eq!(twice, (5, "a second result for call `c1`".into()));
        let orphan = problem(vec![assistant(&["c1"]), result("c9")]);
        assert_eq!(orphan.0, 3);
        assert!(
            orphan.1.contains("`c9`, which is not a call"),
            "{}",
            orphan.1
        );
        let owed = problem(vec![assistant(&["c1"]), queued("c1"), assistant(&[])]);
        assert_eq!(owed.0, 4);
        assert!(owed.1.contains("call `c1` of the one before has no result"));
        let unqueued = problem(vec![
            assistant(&["c1"]),
            Body::ToolStart { id: "c1".into() },
        ]);
        assert_eq!(
            unqueued,
            (3, "call `c1` starts without being queued".into())
        );
        let turns = problem(vec![
            Body::TurnStart { turn: 1 },
            Body::TurnStart { turn: 2 },
        ]);
        assert_eq!(turns, (3, "turn 2 starts while turn 1 is open".into()));
        let take = problem(vec![Body::InboxTake { id: "i".into() }]);
        assert_eq!(take.0, 2);
    }
}
