//! `paddock log SESSION`: one line per event, what each says in short. Text from the log
//! passes `sanitize` (T3).

use super::style::{self, BOLD, DIM, paint, sanitize};
use paddock::log::{Body, Event};

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

fn describe(body: &Body) -> (&'static str, String) {
    let short = |s: &str| -> String {
        let line = s.lines().next().unwrap_or("");
        let cut: String = line.chars().take(100).collect();
        if cut.len() < s.len() {
            format!("{cut}…")
        } else {
            cut
        }
    };
    match body {
        Body::SessionStart(s) => (
            "session/start",
            format!(
                "{} · preset {} · model {} · cwd {}",
                s.session, s.preset, s.model, s.cwd
            ),
        ),
        Body::UserMessage { text, source } => {
            ("user/message", format!("[{source:?}] {}", short(text)))
        }
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
                error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
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
            format!(
                "{attempt}: {}",
                short(
                    &anomalies
                        .iter()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            ),
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
            format!(
                "{id} ({}): summarizing events 1-{upto}{}{}",
                reason.as_str(),
                window
                    .map(|w| format!(", the server's window is {w} tokens"))
                    .unwrap_or_default(),
                focus
                    .as_deref()
                    .map(|f| format!(", focus: {}", short(f)))
                    .unwrap_or_default()
            ),
        ),
        Body::ContextCompacted {
            id,
            upto,
            summary,
            rounds,
            ..
        } => (
            "context/compacted",
            format!(
                "{id}: events 1-{upto} summarized{}: {}",
                if *rounds > 1 {
                    format!(" in {rounds} rounds")
                } else {
                    String::new()
                },
                short(summary)
            ),
        ),
        Body::SessionModel { model, .. } => ("session/model", model.clone()),
        Body::TurnEnd { reason, detail } => (
            "turn/end",
            format!(
                "{}{}",
                reason.as_str(),
                detail
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ),
        ),
    }
}
