//! `paddock run --json` (M2): one JSON object per line on standard output for every event the
//! session log records (the log's own vocabulary, `docs/json-events.md`), message deltas too
//! with `--json=deltas`, and a final `result` line with the stop reason and the totals. Nothing
//! else goes to standard output; notices and questions go to standard error.

use std::io::Write;

use clap::ValueEnum;
use serde_json::json;

use paddock::agent::{Observer, TurnEnd};
use paddock::log::{Event, Tap};
use paddock::model::{Delta, ModelEvent};
use paddock_types::text::json_for_terminal;

/// What `--json` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JsonMode {
    /// Every logged event, then the result.
    Events,
    /// Also each piece of streamed message text (`message/delta`).
    Deltas,
}

/// One line on standard output, made safe for a terminal (T3) without changing its meaning.
fn emit(value: &serde_json::Value) {
    let line = format!("{value}\n");
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(json_for_terminal(&line).as_bytes());
    let _ = out.flush();
}

/// The log's tap: each event as it is stored.
pub fn tap() -> Tap {
    Box::new(|event: &Event| {
        if let Ok(value) = serde_json::to_value(event) {
            emit(&value);
        }
    })
}

/// Every subagent's events, as stored, each with `"child": SESSION` (the child's id; its
/// `session/start` names its parent session and call).
pub fn child_tap() -> paddock::session::ChildTap {
    std::sync::Arc::new(|child: &str, event: &Event| {
        if let Ok(mut value) = serde_json::to_value(event) {
            value["child"] = child.into();
            emit(&value);
        }
    })
}

/// The observer of a `--json` run: deltas when asked for, nothing else (the tap has the rest).
pub struct JsonObserver {
    pub mode: JsonMode,
}

impl Observer for JsonObserver {
    /// With `--json=deltas`, a running call's output as it comes (`tool/output_delta`).
    fn live_tap(&self) -> Option<paddock::pipeline::LiveTap> {
        (self.mode == JsonMode::Deltas).then(|| {
            std::sync::Arc::new(|call_id: &str, text: &str| {
                emit(&json!({"type": "tool/output_delta", "data": {"call_id": call_id, "text": text}}));
            }) as paddock::pipeline::LiveTap
        })
    }

    fn model_event(&self, event: &ModelEvent) {
        if self.mode != JsonMode::Deltas {
            return;
        }
        if let ModelEvent::Delta {
            attempt,
            delta: Delta::Text { text },
        } = event
        {
            emit(&json!({"type": "message/delta", "data": {"attempt": attempt, "text": text}}));
        }
    }
}

/// A warning on the session's preset (also printed on standard error): where, what, the fix.
pub fn preset_warning(warning: &paddock::session::verdict::Shown) {
    emit(&json!({"type": "preset/warning", "data": warning}));
}

/// The last line of a run that failed before its session could start (a refused preset, a
/// model that cannot be reached by configuration, an unwritable data directory): no session,
/// nothing spent, stop `setup_error` with the error's code and message.
pub fn setup_failed(code: &str, message: &str, exit: i32) {
    emit(&json!({
        "type": "result",
        "data": {
            "session": null,
            "stop_reason": "setup_error",
            "detail": message,
            "code": code,
            "warning": null,
            "exit_code": exit,
            "model_requests": 0,
            "tool_calls": 0,
            "tokens": 0,
            "input_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "cost_usd": 0.0,
            "denied_calls": 0,
            "wall_ms": 0,
        }
    }));
}

/// Makes sure `run --json` ends with a `result` line even when paddock panics: dropped while
/// unwinding before `done`, it writes one (stop `host_error`, exit 101, what Rust exits with).
pub struct ResultGuard {
    pub session: Option<String>,
    done: bool,
}

impl ResultGuard {
    pub fn new() -> ResultGuard {
        ResultGuard {
            session: None,
            done: false,
        }
    }

    /// The `result` line was written.
    pub fn done(&mut self) {
        self.done = true;
    }
}

impl Drop for ResultGuard {
    fn drop(&mut self) {
        if self.done || !std::thread::panicking() {
            return;
        }
        emit(&json!({
            "type": "result",
            "data": {
                "session": self.session,
                "stop_reason": "host_error",
                "detail": "paddock panicked (a bug; the message is on standard error); the session log is resumable",
                "warning": null,
                "exit_code": crate::Exit::Panicked as i32,
            }
        }));
    }
}

/// The last line: how the run ended and what it spent.
pub fn result(session: &str, end: &TurnEnd, exit: i32) {
    let spent = &end.spent;
    emit(&json!({
        "type": "result",
        "data": {
            "session": session,
            "stop_reason": end.reason.as_str(),
            "detail": end.detail,
            "warning": end.warning,
            "exit_code": exit,
            "model_requests": spent.model_requests,
            "tool_calls": spent.tool_calls,
            "tokens": spent.tokens,
            "input_tokens": spent.input_tokens,
            "cache_read_tokens": spent.cache_read_tokens,
            "cache_write_tokens": spent.cache_write_tokens,
            "cost_usd": spent.cost_usd,
            "denied_calls": spent.denied_calls,
            "wall_ms": u64::try_from(spent.wall.as_millis()).unwrap_or(u64::MAX),
        }
    }));
}
