//! How a session looks in the terminal: the live view of `run` and `resume` (an `Observer`),
//! and the event listing of `paddock log`. Respects NO_COLOR. Everything from a model, a tool,
//! a hook or the log passes `style::sanitize` before it is printed (T3).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::style::{self, BOLD, DIM, RED, YELLOW, paint, sanitize};
use crate::agent::{CallSummary, Compaction, Observer, TurnEnd};
use crate::log::{Body, Event, SessionStart, StopReason};
use crate::model::{AssistantMessage, Delta, ModelEvent, shorten};
use crate::preset::Origin;

/// How much of a stop reason's detail the final line shows; the log keeps all of it.
const DETAIL_CHARS: usize = 300;

pub struct Printer {
    color: bool,
    /// Streamed text is on the current line.
    mid_line: AtomicBool,
}

impl Printer {
    pub fn new() -> Printer {
        Printer {
            color: style::color_enabled_stdout(),
            mid_line: AtomicBool::new(false),
        }
    }

    pub fn header(&self, start: &SessionStart, log: &Path) {
        println!(
            "{}",
            paint(
                self.color,
                DIM,
                &format!(
                    "paddock session {} · preset {} ({}) · model {} · log {}",
                    start.session,
                    sanitize(&start.preset),
                    sanitize(&preset_origin(start)),
                    sanitize(&start.model),
                    log.display()
                )
            )
        );
    }

    pub fn user(&self, text: &str) {
        println!("{} {}", paint(self.color, BOLD, "you:"), sanitize(text));
    }

    pub fn notice(&self, text: &str) {
        // Notices carry text from elsewhere too (a server's retry reason, a log error).
        let text = sanitize(text);
        println!("{}", paint(self.color, YELLOW, &format!("paddock: {text}")));
    }

    pub fn footer(&self, session: &str) {
        println!(
            "{}",
            paint(
                self.color,
                DIM,
                &format!(
                    "inspect: paddock log {session} · continue: paddock resume {session} \"...\""
                )
            )
        );
    }

    fn end_line(&self) {
        if self.mid_line.swap(false, Ordering::Relaxed) {
            println!();
        }
    }

    pub fn result_line(&self, call: &CallSummary) {
        let lines = call.content.lines().count();
        let first: String = call
            .content
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(110)
            .collect();
        let first = sanitize(&first);
        if call.is_error {
            println!("    {} {first}", paint(self.color, RED, "✗"));
        } else {
            println!(
                "    {} {}",
                paint(self.color, BOLD, "✓"),
                paint(self.color, DIM, &format!("{lines} line(s): {first}"))
            );
        }
    }
}

impl Default for Printer {
    fn default() -> Printer {
        Printer::new()
    }
}

impl Observer for Printer {
    fn model_event(&self, event: &ModelEvent) {
        match event {
            ModelEvent::Delta {
                delta: Delta::Text { text },
                ..
            } => {
                if !self.mid_line.swap(true, Ordering::Relaxed) {
                    print!("{} ", paint(self.color, BOLD, "agent:"));
                }
                print!("{}", sanitize(text));
                let _ = std::io::stdout().flush();
            }
            ModelEvent::RetryScheduled { delay, reason, .. } => {
                self.end_line();
                self.notice(&format!(
                    "{reason}; retrying in {:.1} s",
                    delay.as_secs_f64()
                ));
            }
            _ => {}
        }
    }

    fn assistant(&self, message: &AssistantMessage) {
        self.end_line();
        for anomaly in &message.diagnostics {
            println!(
                "  {}",
                paint(self.color, YELLOW, &sanitize(&format!("stream: {anomaly}")))
            );
        }
        for call in &message.calls {
            let args: String = call.call.arguments.chars().take(100).collect();
            println!(
                "  {} {} {}",
                paint(self.color, BOLD, "→"),
                sanitize(&call.call.name),
                paint(self.color, DIM, &sanitize(&args))
            );
        }
    }

    fn result(&self, call: &CallSummary) {
        self.result_line(call);
    }

    fn compacted(&self, compaction: &Compaction) {
        self.end_line();
        self.notice(&format!(
            "context compacted ({}): ~{} → ~{} tokens of {}; the summary replaces events 1-{} (all of them stay in `paddock log`)",
            compaction.reason.as_str(),
            compaction.before.tokens,
            compaction.after.tokens,
            compaction.after.window,
            compaction.upto
        ));
    }

    fn stopped(&self, end: &TurnEnd) {
        self.end_line();
        let spent = &end.spent;
        let line = format!(
            "stopped: {}{} · {} model request(s) · {} tokens · ${:.4} · {:.1} s · context {}% of {}k{}",
            end.reason.as_str(),
            end.detail
                .as_deref()
                .map(|d| format!(" ({})", shorten(d, DETAIL_CHARS)))
                .unwrap_or_default(),
            spent.model_requests,
            spent.tokens,
            spent.cost_usd,
            spent.wall.as_secs_f64(),
            end.context.percent(),
            end.context.window / 1000,
            end.warning
                .as_deref()
                .map(|w| format!(" · note: {w}"))
                .unwrap_or_default()
        );
        let tone = if end.reason == StopReason::Completed && end.warning.is_none() {
            BOLD
        } else {
            YELLOW
        };
        println!("{}", paint(self.color, tone, &sanitize(&line)));
    }
}

/// Where the session's preset came from and its hash (T1): `shipped, sha256 0123456789ab`,
/// `project .paddock/presets/default.toml, sha256 ...`.
fn preset_origin(start: &SessionStart) -> String {
    let hash = start
        .preset_sha256
        .as_deref()
        .map(|h| format!(", sha256 {}", &h[..12.min(h.len())]))
        .unwrap_or_default();
    match start.preset_from {
        Some(Origin::Shipped) => format!("shipped{hash}"),
        Some(from) => format!("{} {}{hash}", from.as_str(), start.preset_origin),
        None => format!("{}{hash}", start.preset_origin),
    }
}

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
            format!("{id}: {} (approved: {how})", short(content)),
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
        } => (
            "context/compact",
            format!(
                "{id} ({}): summarizing events 1-{upto}{}",
                reason.as_str(),
                focus
                    .as_deref()
                    .map(|f| format!(", focus: {}", short(f)))
                    .unwrap_or_default()
            ),
        ),
        Body::ContextCompacted {
            id, upto, summary, ..
        } => (
            "context/compacted",
            format!("{id}: events 1-{upto} summarized: {}", short(summary)),
        ),
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
