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
    /// The calls that started and have no result: what the crash interrupted (their
    /// temporary files are removed before anything is settled).
    pub interrupted: Vec<ToolCall>,
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

#[cfg(any(test, feature = "internals"))]
/// Applies the rules in the module doc.
pub fn recover(events: &[Event]) -> Recovery {
    recover_tail(events, false)
}

/// `recover` of the events from the last assistant message on (`stream_log`'s tail): only
/// that message's calls can be owed a result. `turn_open`: a turn was open before them.
pub fn recover_tail(events: &[Event], turn_open: bool) -> Recovery {
    // Calls are scoped to the assistant message that made them, so a provider that reuses ids
    // across responses ("call_0" every time) cannot make one call's result answer another.
    let mut segments: Vec<Segment> = Vec::new();
    let mut open_turn = turn_open;
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
            recovery.interrupted.push(call.clone());
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
#[path = "recover_tests.rs"]
mod tests;
