//! Recovery (L2, L8): what a log that ended abruptly still owes, decided from its events alone,
//! call by call in the calls' order, then the end of an open turn.
//!
//! - a call with a result is left alone (never run again);
//! - a call that never started is answered `NOT_EXECUTED`;
//! - a started call without a result is run again only when its tool is idempotent *and* no
//!   later call that touches the same paths has started (running it again could undo that
//!   call's effect, or read what it wrote); otherwise it is answered `OUTCOME_UNKNOWN`;
//! - an open turn gets an `interrupted` end, or a `completed` one when the log ends with the
//!   model's committed final answer (only the turn's end was lost: asking again would only
//!   repeat the answer).

use std::collections::{HashMap, HashSet};

use super::event::{Body, Event, StopReason, Touches};
use crate::model::{Outcome, ToolCall};

/// One thing recovery does, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Settle {
    /// Append this event (a synthesized result, or the end of the open turn).
    Append(Body),
    /// Run this idempotent call again; its result is logged as it ends.
    Rerun(ToolCall),
}

/// Everything a log owes, in the order it must be settled.
#[derive(Debug, Default, PartialEq)]
pub struct Recovery {
    pub steps: Vec<Settle>,
}

/// Code of the result given to a started call whose result was never written and that is not
/// run again.
pub const OUTCOME_UNKNOWN: &str = "OUTCOME_UNKNOWN";

/// One assistant message's calls and what the log says happened to each.
#[derive(Default)]
struct Segment<'e> {
    calls: &'e [ToolCall],
    queued: HashMap<&'e str, (bool, Option<&'e Touches>)>,
    started: HashSet<&'e str>,
    answered: HashSet<&'e str>,
}

/// Unknown reach: anything, written.
static ANYTHING: Touches = Touches {
    paths: Vec::new(),
    writes: true,
};

/// Applies the rules in the module doc.
pub fn recover(events: &[Event]) -> Recovery {
    // Calls are scoped to the assistant message that made them, so a provider that reuses ids
    // across responses ("call_0" every time) cannot make one call's result answer another.
    let mut segments: Vec<Segment> = Vec::new();
    let mut open_turn = false;
    let mut answered = false;
    for event in events {
        // Does the log end with a committed final answer (and what is said about its stream)?
        answered = match &event.body {
            Body::AssistantMessage { outcome, .. } => *outcome == Outcome::Completed,
            Body::StreamAnomaly { .. } => answered,
            _ => false,
        };
        match &event.body {
            Body::AssistantMessage { tool_calls, .. } => segments.push(Segment {
                calls: tool_calls,
                ..Segment::default()
            }),
            Body::ToolCall {
                id,
                idempotent,
                touches,
                ..
            } => {
                if let Some(segment) = segments.last_mut() {
                    segment.queued.insert(id, (*idempotent, touches.as_ref()));
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
    // Every call that started, in model order, with what it touches.
    let started: Vec<(usize, usize, &Touches)> = segments
        .iter()
        .enumerate()
        .flat_map(|(s, segment)| {
            segment
                .calls
                .iter()
                .enumerate()
                .filter_map(move |(i, call)| {
                    let id = call.id.as_str();
                    segment.started.contains(id).then(|| {
                        let touches = segment.queued.get(id).and_then(|(_, t)| *t);
                        (s, i, touches.unwrap_or(&ANYTHING))
                    })
                })
        })
        .collect();
    let mut recovery = Recovery::default();
    for (s, segment) in segments.iter().enumerate() {
        for (i, call) in segment.calls.iter().enumerate() {
            let (id, name) = (call.id.as_str(), call.name.as_str());
            if segment.answered.contains(id) {
                continue;
            }
            if !segment.started.contains(id) {
                recovery.steps.push(Settle::Append(answer(
                    id,
                    "NOT_EXECUTED",
                    format!(
                        "paddock stopped before `{name}` started; nothing was run. Call it again if it is still needed."
                    ),
                )));
                continue;
            }
            let (idempotent, touches) = segment.queued.get(id).copied().unwrap_or((false, None));
            let touches = touches.unwrap_or(&ANYTHING);
            let later = started
                .iter()
                .find(|(ls, li, other)| (*ls, *li) > (s, i) && touches.overlaps(other))
                .map(|(ls, li, _)| segments[*ls].calls[*li].name.as_str());
            let why = match (idempotent, later) {
                (true, None) => {
                    recovery.steps.push(Settle::Rerun(call.clone()));
                    continue;
                }
                (true, Some(later)) => format!(
                    "It was not run again: a later call (`{later}`) that touches the same paths had already started, and running `{name}` now could undo or misreport what that call did. Check the files it concerns before calling it again."
                ),
                (false, _) => "It was not run again because it is not idempotent: check its effect (for example, read the file it changed) before calling it again.".to_string(),
            };
            recovery.steps.push(Settle::Append(answer(
                id,
                OUTCOME_UNKNOWN,
                format!(
                    "`{name}` started but paddock stopped before its result was recorded, so whether it took effect is unknown. {why}"
                ),
            )));
        }
    }
    if open_turn && answered {
        recovery.steps.push(Settle::Append(Body::TurnEnd {
            reason: StopReason::Completed,
            detail: Some(
                "paddock stopped after the model's final answer was committed; recorded on resume"
                    .into(),
            ),
        }));
    } else if open_turn {
        recovery.steps.push(Settle::Append(Body::TurnEnd {
            reason: StopReason::Interrupted,
            detail: Some(
                "paddock stopped during this turn; the log was recovered on resume".into(),
            ),
        }));
    }
    recovery
}

fn answer(id: &str, code: &str, message: String) -> Body {
    Body::ToolResult {
        id: id.to_string(),
        content: format!("error[{code}]: {message}"),
        is_error: true,
        code: Some(code.into()),
        args: None,
        repairs: Vec::new(),
        approval: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Finish;

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
                Settle::Append(Body::TurnEnd { reason, .. }) => {
                    ("turn".into(), reason.as_str().into())
                }
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
        let answer = Body::AssistantMessage {
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
}
