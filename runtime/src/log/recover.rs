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

impl<'e> Segment<'e> {
    /// Whether the call `id` was queued as idempotent, and what it touches (anything, written,
    /// when the log does not say).
    fn queued_as(&self, id: &str) -> (bool, &'e Touches) {
        let (idempotent, touches) = self.queued.get(id).copied().unwrap_or((false, None));
        (idempotent, touches.unwrap_or(&ANYTHING))
    }
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
    let walk = Walk::of(events, turn_open);
    let started = started_calls(&walk.segments);
    let mut recovery = Recovery::default();
    for (s, segment) in walk.segments.iter().enumerate() {
        for (i, call) in segment.calls.iter().enumerate() {
            let id = call.id.as_str();
            if segment.answered.contains(id) {
                continue;
            }
            if !segment.started.contains(id) {
                recovery.steps.push(Settle::Append(never_started(call)));
                continue;
            }
            recovery.interrupted.push(call.clone());
            let (idempotent, touches) = segment.queued_as(id);
            let later = later_overlapping(&walk.segments, &started, (s, i), touches);
            recovery.steps.push(settle_started(call, idempotent, later));
        }
    }
    if let Some(end) = end_of_open_turn(walk.open_turn, walk.answered) {
        recovery.steps.push(Settle::Append(end));
    }
    recovery
}

/// What the walk over the events finds.
struct Walk<'e> {
    /// Calls are scoped to the assistant message that made them, so a provider that reuses
    /// ids across responses ("call_0" every time) cannot make one call's result answer another.
    segments: Vec<Segment<'e>>,
    open_turn: bool,
    /// The log ends with a committed final answer (and what is said about its stream).
    answered: bool,
}

impl<'e> Walk<'e> {
    fn of(events: &'e [Event], turn_open: bool) -> Walk<'e> {
        let mut walk = Walk {
            segments: Vec::new(),
            open_turn: turn_open,
            answered: false,
        };
        for event in events {
            walk.answered = match &event.body {
                Body::AssistantMessage { outcome, .. } => *outcome == Outcome::Completed,
                Body::StreamAnomaly { .. } => walk.answered,
                _ => false,
            };
            match &event.body {
                Body::AssistantMessage { tool_calls, .. } => walk.segments.push(Segment {
                    calls: tool_calls,
                    ..Segment::default()
                }),
                Body::ToolCall {
                    id,
                    idempotent,
                    touches,
                    ..
                } => {
                    if let Some(segment) = walk.segments.last_mut() {
                        segment.queued.insert(id, (*idempotent, touches.as_ref()));
                    }
                }
                Body::ToolStart { id } => {
                    if let Some(segment) = walk.segments.last_mut() {
                        segment.started.insert(id);
                    }
                }
                Body::ToolResult { id, .. } => {
                    if let Some(segment) = walk.segments.last_mut() {
                        segment.answered.insert(id);
                    }
                }
                Body::TurnStart { .. } => walk.open_turn = true,
                Body::TurnEnd { .. } => walk.open_turn = false,
                _ => {}
            }
        }
        walk
    }
}

/// Every call that started, in model order (segment, place), with what it touches.
fn started_calls<'e>(segments: &[Segment<'e>]) -> Vec<(usize, usize, &'e Touches)> {
    segments
        .iter()
        .enumerate()
        .flat_map(|(s, segment)| {
            segment
                .calls
                .iter()
                .enumerate()
                .filter_map(move |(i, call)| {
                    let id = call.id.as_str();
                    segment
                        .started
                        .contains(id)
                        .then(|| (s, i, segment.queued_as(id).1))
                })
        })
        .collect()
}

/// The name of the first call after the one at `at` that started and touches what it touches.
fn later_overlapping<'e>(
    segments: &[Segment<'e>],
    started: &[(usize, usize, &Touches)],
    at: (usize, usize),
    touches: &Touches,
) -> Option<&'e str> {
    started
        .iter()
        .find(|(ls, li, other)| (*ls, *li) > at && touches.overlaps(other))
        .map(|(ls, li, _)| segments[*ls].calls[*li].name.as_str())
}

/// The answer for a call that never started.
fn never_started(call: &ToolCall) -> Body {
    let name = call.name.as_str();
    answer(
        &call.id,
        "NOT_EXECUTED",
        format!(
            "paddock stopped before `{name}` started; nothing was run. Call it again if it is still needed."
        ),
    )
}

/// A started call without a result: run again when it is idempotent and no `later` call that
/// touches the same paths started, else answered `OUTCOME_UNKNOWN` with why.
fn settle_started(call: &ToolCall, idempotent: bool, later: Option<&str>) -> Settle {
    let name = call.name.as_str();
    let why = match (idempotent, later) {
        (true, None) => return Settle::Rerun(call.clone()),
        (true, Some(later)) => format!(
            "It was not run again: a later call (`{later}`) that touches the same paths had already started, and running `{name}` now could undo or misreport what that call did. Check the files it concerns before calling it again."
        ),
        (false, _) => "It was not run again because it is not idempotent: check its effect (for example, read the file it changed) before calling it again.".to_string(),
    };
    Settle::Append(answer(
        &call.id,
        OUTCOME_UNKNOWN,
        format!(
            "`{name}` started but paddock stopped before its result was recorded, so whether it took effect is unknown. {why}"
        ),
    ))
}

/// The answer for a started call of a client's session (`tool call`, `mcp serve`) whose
/// process was killed: no client waits for it any more, so even an idempotent one is not run
/// again.
pub fn client_gone(call: &ToolCall) -> Body {
    let name = call.name.as_str();
    answer(
        &call.id,
        OUTCOME_UNKNOWN,
        format!(
            "`{name}` started but the paddock process of the client that asked for it was killed before its result was recorded, so whether it took effect is unknown. It was not run again: no client is waiting for it."
        ),
    )
}

/// The end an open turn gets: `completed` when the log ends with the model's committed final
/// answer, else `interrupted`.
fn end_of_open_turn(open_turn: bool, answered: bool) -> Option<Body> {
    if !open_turn {
        return None;
    }
    Some(if answered {
        Body::TurnEnd {
            reason: StopReason::Completed,
            detail: Some(
                "paddock stopped after the model's final answer was committed; recorded on resume"
                    .into(),
            ),
        }
    } else {
        Body::TurnEnd {
            reason: StopReason::Interrupted,
            detail: Some(
                "paddock stopped during this turn; the log was recovered on resume".into(),
            ),
        }
    })
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
        images: Vec::new(),
    }
}

/// What a log cut just before call `call` started owes (a fork from that call): the last
/// assistant message's calls without a result are answered, `call` and those that had not
/// started as not run, those that were running beside it as interrupted there (the files hold
/// whatever they had done by then), and the turn ends `interrupted`. Nothing is run again:
/// the files are put back as they were when `call` started, and the model is told so, so no
/// call is left without its result and none claims an effect the files do not have.
pub fn cut_before_call(events: &[Event], call: &str) -> Vec<Body> {
    let walk = Walk::of(events, false);
    let mut owed = Vec::new();
    if let Some(segment) = walk.segments.last() {
        for c in segment.calls {
            let id = c.id.as_str();
            if segment.answered.contains(id) {
                continue;
            }
            let name = c.name.as_str();
            let message = if segment.started.contains(id) && id != call {
                format!(
                    "`{name}` was running when this session was forked from just before call \
                     {call}: its result is not known here, and the files hold whatever it had \
                     done by then. Check the files it concerns before calling it again."
                )
            } else {
                format!(
                    "`{name}` was not run: this session was forked from just before call {call}, \
                     and the files are as they were then. Call it again if it is still needed."
                )
            };
            owed.push(answer(id, "FORKED", message));
        }
    }
    if walk.open_turn {
        owed.push(Body::TurnEnd {
            reason: StopReason::Interrupted,
            detail: Some(format!("forked from just before call {call}")),
        });
    }
    owed
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
