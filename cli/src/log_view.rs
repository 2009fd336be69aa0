//! `paddock log SESSION`: one line per event, what each says in short. Text from the log
//! passes `sanitize` (T3).

use super::style::{self, BOLD, DIM, paint, sanitize};
use paddock::log::{Body, CompactReason, Event};
use paddock::model::Diagnostic;

/// `paddock log SESSION`: one line per event.
pub fn print_log(events: &[Event]) {
    let color = style::color_enabled_stdout();
    for event in events {
        let (kind, text) = describe(&event.body);
        let text = sanitize(&text);
        println!(
            "{} {} {text}",
            paint(color, DIM, &format!("{:>4}", event.seq)),
            paint(color, BOLD, &format!("{kind:<17}"))
        );
    }
}

/// A checkpoint id's first 12 characters (ids are hex; a damaged log's are cut safely).
fn short_id(id: &str) -> String {
    id.chars().take(12).collect()
}

/// An event's kind and what it says in one line. A table, one arm per event kind; an arm
/// that takes more than a line to say is a function below.
fn describe(body: &Body) -> (&'static str, String) {
    match body {
        Body::SessionStart(s) => (
            "session/start",
            format!(
                "{} · preset {} · model {} · cwd {}",
                s.session, s.preset, s.model, s.cwd
            ),
        ),
        Body::UserMessage {
            text,
            source,
            images,
        } => (
            "user/message",
            format!(
                "[{source:?}] {}{}",
                short(text),
                crate::attach::attached(images.len())
            ),
        ),
        Body::TurnStart { turn } => ("turn/start", format!("turn {turn}")),
        Body::AttemptStart { attempt, number } => {
            ("attempt/start", format!("{attempt} (try {number})"))
        }
        Body::AttemptEnd {
            attempt,
            status,
            error,
            ..
        } => (
            "attempt/end",
            format!(
                "{attempt} {status:?}{}",
                if_some(error.as_deref(), |e| format!(": {e}"))
            ),
        ),
        Body::AssistantMessage {
            text,
            tool_calls,
            outcome,
            ..
        } => (
            "assistant/message",
            format!("{outcome:?}, {} call(s): {}", tool_calls.len(), short(text)),
        ),
        Body::ToolCall {
            id,
            name,
            idempotent,
            ..
        } => (
            "tool/call",
            format!(
                "{id} {name}{}",
                if *idempotent { " (idempotent)" } else { "" }
            ),
        ),
        Body::StreamAnomaly { attempt, anomalies } => (
            "stream/anomaly",
            format!("{attempt}: {}", short(&in_one_line(anomalies))),
        ),
        Body::ToolStart { id } => ("tool/start", id.clone()),
        Body::ToolResult {
            id,
            content,
            approval: Some(how),
            ..
        } => (
            "tool/result",
            format!("{id}: {} (approved: {})", short(content), how.as_text()),
        ),
        Body::ToolResult { id, content, .. } => {
            ("tool/result", format!("{id}: {}", short(content)))
        }
        Body::InboxIn { id, lane, text, .. } => {
            ("inbox/in", format!("{id} {lane:?}: {}", short(text)))
        }
        Body::InboxTake { id } => ("inbox/take", id.clone()),
        Body::ContextCompact {
            id,
            upto,
            reason,
            focus,
            window,
        } => (
            "context/compact",
            compact(id, *upto, *reason, focus.as_deref(), *window),
        ),
        Body::ContextCompacted {
            id,
            upto,
            summary,
            rounds,
            ..
        } => ("context/compacted", compacted(id, *upto, summary, *rounds)),
        Body::SessionModel { model, .. } => ("session/model", model.clone()),
        Body::Checkpoint {
            id,
            turn,
            ended,
            call,
            roots,
        } => {
            let at = match call {
                Some(call) => format!("before call {call} of turn {turn} · {}", short_id(id)),
                None => format!(
                    "{} turn {turn} · {}",
                    if *ended { "end of" } else { "start of" },
                    short_id(id)
                ),
            };
            // One root is the project; more are named, so a reader sees what a rewind covers.
            let roots = match roots.as_slice() {
                [] | [_] => String::new(),
                all => format!(" · records {}", all.join(", ")),
            };
            ("checkpoint", format!("{at}{roots}"))
        }
        Body::Rewind {
            turn, to, before, ..
        } => (
            "rewind",
            format!(
                "mounts back to the start of turn {turn} ({}) · before: {}",
                short_id(to),
                short_id(before)
            ),
        ),
        Body::ConversationRewind { turn, from } => (
            "conversation/rewind",
            format!(
                "the conversation goes on from the start of turn {turn}: events {from} to here are no longer in its history"
            ),
        ),
        Body::SubagentEnd {
            call,
            session,
            reason,
            spent,
        } => (
            "subagent/end",
            format!(
                "{session} (task {call}) {} · charged {} requests, {} tokens, ${:.4}",
                reason.as_str(),
                spent.model_requests,
                spent.tokens,
                spent.cost_usd
            ),
        ),
        Body::TurnEnd { reason, detail } => (
            "turn/end",
            format!(
                "{}{}",
                reason.as_str(),
                if_some(detail.as_deref(), |d| format!(" ({d})"))
            ),
        ),
    }
}

/// The first line of `s`, cut to 100 characters; `…` says something was left out.
fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    let cut: String = line.chars().take(100).collect();
    if cut.len() < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// `value` in its `form`, or nothing when there is none.
fn if_some(value: Option<&str>, form: impl FnOnce(&str) -> String) -> String {
    value.map(form).unwrap_or_default()
}

/// A stream's anomalies, one after another.
fn in_one_line(anomalies: &[Diagnostic]) -> String {
    anomalies
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// `context/compact`: what the summary replaces, why, and what it is to keep.
fn compact(
    id: &str,
    upto: u64,
    reason: CompactReason,
    focus: Option<&str>,
    window: Option<u64>,
) -> String {
    format!(
        "{id} ({}): summarizing events 1-{upto}{}{}",
        reason.as_str(),
        window
            .map(|w| format!(", the server's window is {w} tokens"))
            .unwrap_or_default(),
        focus
            .map(|f| format!(", focus: {}", short(f)))
            .unwrap_or_default()
    )
}

/// `context/compacted`: what was summarized, in how many rounds when more than one, and the
/// summary's start.
fn compacted(id: &str, upto: u64, summary: &str, rounds: u32) -> String {
    let rounds = if rounds > 1 {
        format!(" in {rounds} rounds")
    } else {
        String::new()
    };
    format!(
        "{id}: events 1-{upto} summarized{rounds}: {}",
        short(summary)
    )
}
