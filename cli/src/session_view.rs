//! How a session looks in the terminal: the live view of `run` and `resume` (an `Observer`),
//! and the event listing of `paddock log`. Respects NO_COLOR. Everything from a model, a tool,
//! a hook or the log passes `style::sanitize` before it is printed (T3).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::out::{Out, Progress, Stdout};
use super::results;
use super::style::{self, BOLD, DIM, YELLOW, paint, sanitize};
use paddock::agent::{Compaction, Observer, TurnEnd};
use paddock::log::{SessionStart, StopReason};
use paddock::model::{AssistantMessage, Delta, ModelEvent, shorten};
use paddock::pipeline::CallSummary;
use paddock::preset::Origin;
use paddock_types::text::elide_middle;

/// How much of a stop reason's detail the final line shows; the log keeps all of it.
const DETAIL_CHARS: usize = 300;

pub struct Printer {
    color: bool,
    /// Streamed text is on the current line.
    mid_line: AtomicBool,
    out: Arc<dyn Out>,
    /// Where a result's hidden lines can be seen: `/show ID` in chat.
    show_command: bool,
    /// Tool names by call id, from the committed message (for progress).
    names: Mutex<HashMap<String, String>>,
    /// The session the header named: where a result's whole text is (`paddock log ID`).
    session: Mutex<Option<String>>,
}

impl Printer {
    pub fn new() -> Printer {
        Printer::with_out(Arc::new(Stdout), style::color_enabled_stdout(), false)
    }

    /// A printer writing to `out`; with `show_command`, results point at `/show ID`.
    pub fn with_out(out: Arc<dyn Out>, color: bool, show_command: bool) -> Printer {
        Printer {
            color,
            mid_line: AtomicBool::new(false),
            out,
            show_command,
            names: Mutex::new(HashMap::new()),
            session: Mutex::new(None),
        }
    }

    fn line(&self, text: &str) {
        self.out.write(&format!("{text}\n"));
    }

    pub fn header(&self, start: &SessionStart, log: &Path) {
        if let Ok(mut session) = self.session.lock() {
            *session = Some(start.session.clone());
        }
        self.line(&paint(
            self.color,
            DIM,
            &format!(
                "paddock session {} · preset {} ({}) · model {} · log {}",
                start.session,
                sanitize(&start.preset),
                sanitize(&preset_origin(start)),
                sanitize(&start.model),
                log.display()
            ),
        ));
        // Which directory the preset's relative mounts (`host = "."`) take, and the project
        // whose presets and instruction files were looked for, when it lies above.
        let cwd = std::path::Path::new(&start.cwd);
        let root = paddock::preset::project_root(cwd);
        let above = match root.as_path() == cwd {
            true => String::new(),
            false => format!(" · project root {}", sanitize(&root.display().to_string())),
        };
        self.line(&paint(
            self.color,
            DIM,
            &format!(
                "mounted: {} (what `host = \".\"` in the preset means){above}",
                sanitize(&start.cwd),
            ),
        ));
        if let Some(line) = layers_line(&start.layers) {
            self.line(&paint(self.color, DIM, &line));
        }
        if !start.instructions.is_empty() {
            let files: Vec<String> = start
                .instructions
                .iter()
                .map(|f| {
                    format!(
                        "{} ({} bytes, sha256 {})",
                        f.file,
                        f.bytes,
                        &f.sha256[..12.min(f.sha256.len())]
                    )
                })
                .collect();
            self.line(&paint(
                self.color,
                DIM,
                &format!("project instructions: {}", sanitize(&files.join(", "))),
            ));
        }
    }

    pub fn user(&self, text: &str) {
        self.line(&format!(
            "{} {}",
            paint(self.color, BOLD, "you:"),
            sanitize(text)
        ));
    }

    pub fn notice(&self, text: &str) {
        // Notices carry text from elsewhere too (a server's retry reason, a log error).
        self.end_line();
        let text = sanitize(text);
        self.line(&paint(self.color, YELLOW, &format!("paddock: {text}")));
    }

    /// Text paddock wrote, as is (a listing, help).
    pub fn plain(&self, text: &str) {
        self.end_line();
        self.line(text);
    }

    pub fn footer(&self, session: &str) {
        self.line(&paint(
            self.color,
            DIM,
            &format!("inspect: paddock log {session} · continue: paddock resume {session} \"...\""),
        ));
    }

    /// The chat's last line: how to come back.
    pub fn footer_chat(&self, session: &str) {
        self.line(&paint(
            self.color,
            DIM,
            &format!("inspect: paddock log {session} · continue: paddock chat --continue (here) or --resume {session}"),
        ));
    }

    fn end_line(&self) {
        if self.mid_line.swap(false, Ordering::Relaxed) {
            self.out.write("\n");
        }
    }

    pub fn result_line(&self, call: &CallSummary) {
        self.end_line();
        let more = if self.show_command {
            format!("/show {}", sanitize(&call.id))
        } else {
            let session = self.session.lock().ok().and_then(|s| s.clone());
            match session {
                Some(id) => format!("all of it: paddock log {} --json", sanitize(&id)),
                None => "all of it: paddock log --list, then paddock log ID --json".to_string(),
            }
        };
        self.out
            .write(&results::render(call, self.out.width(), self.color, &more));
    }
}

impl Default for Printer {
    fn default() -> Printer {
        Printer::new()
    }
}

impl Observer for Printer {
    /// On a terminal, a running command's output as it comes, each line dimmed behind a
    /// bar (the result still shows what the model reads).
    fn live_tap(&self) -> Option<paddock::pipeline::LiveTap> {
        super::out::terminal_width()?;
        let out = self.out.clone();
        let color = self.color;
        let partial: Mutex<HashMap<String, String>> = Mutex::new(HashMap::new());
        Some(Arc::new(move |call_id: &str, text: &str| {
            let mut partial = partial.lock().unwrap_or_else(PoisonError::into_inner);
            let pending = partial.entry(call_id.to_string()).or_default();
            pending.push_str(text);
            while let Some(end) = pending.find('\n') {
                let line: String = pending.drain(..=end).collect();
                out.write(&format!(
                    "  {} {}\n",
                    paint(color, DIM, "│"),
                    paint(color, DIM, &sanitize(line.trim_end_matches(['\n', '\r'])))
                ));
            }
        }))
    }

    fn notice(&self, text: &str) {
        Printer::notice(self, text);
    }

    fn model_event(&self, event: &ModelEvent) {
        match event {
            ModelEvent::AttemptStarted { .. } => self.out.progress(Progress::Waiting),
            ModelEvent::Delta {
                delta: Delta::Text { text },
                ..
            } => {
                self.out.progress(Progress::Streaming);
                let mut piece = String::new();
                if !self.mid_line.swap(true, Ordering::Relaxed) {
                    piece.push_str(&format!("{} ", paint(self.color, BOLD, "agent:")));
                }
                piece.push_str(&sanitize(text));
                self.out.write(&piece);
            }
            ModelEvent::RetryScheduled { delay, reason, .. } => {
                self.notice(&format!(
                    "{reason}; retrying in {:.1} s",
                    delay.as_secs_f64()
                ));
                self.out.progress(Progress::Retry {
                    delay: *delay,
                    reason: reason.clone(),
                });
            }
            _ => {}
        }
    }

    fn assistant(&self, message: &AssistantMessage) {
        self.end_line();
        for anomaly in &message.diagnostics {
            self.line(&format!(
                "  {}",
                paint(self.color, YELLOW, &sanitize(&format!("stream: {anomaly}")))
            ));
        }
        let mut names = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        for call in &message.calls {
            names.insert(call.call.id.clone(), call.call.name.clone());
            let args = elide_middle(
                &call.call.arguments,
                self.out.width().saturating_sub(20).max(40),
                |_| "…".to_string(),
            );
            self.line(&format!(
                "  {} {} {} {}",
                paint(self.color, BOLD, "→"),
                paint(self.color, DIM, &sanitize(&call.call.id)),
                sanitize(&call.call.name),
                paint(self.color, DIM, &sanitize(&args))
            ));
        }
        if !message.calls.is_empty() {
            self.out.progress(Progress::Calls);
        }
    }

    fn tool_started(&self, id: &str) {
        let name = self
            .names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .unwrap_or_default();
        self.out.progress(Progress::ToolStarted {
            id: id.to_string(),
            name,
        });
    }

    fn result(&self, call: &CallSummary) {
        self.out.progress(Progress::ToolEnded {
            id: call.id.clone(),
        });
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
        self.out.progress(Progress::Idle);
        let spent = &end.spent;
        let line = format!(
            "stopped: {}{} · {} model request(s) · {} tokens{} · ${:.4} · {:.1} s · context {}% of {}k{}",
            end.reason.as_str(),
            end.detail
                .as_deref()
                .map(|d| format!(" ({})", shorten(d, DETAIL_CHARS)))
                .unwrap_or_default(),
            spent.model_requests,
            spent.tokens,
            cached_input(spent),
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
        self.line(&paint(self.color, tone, &sanitize(&line)));
    }
}

/// How much of the input the provider's prompt cache served, when it served or kept any:
/// ` (input: 1200 uncached, 30000 cached, 500 written to the cache)`.
fn cached_input(spent: &paddock::agent::Spent) -> String {
    if spent.cache_read_tokens == 0 && spent.cache_write_tokens == 0 {
        return String::new();
    }
    let uncached = spent
        .input_tokens
        .saturating_sub(spent.cache_read_tokens + spent.cache_write_tokens);
    let written = if spent.cache_write_tokens > 0 {
        format!(", {} written to the cache", spent.cache_write_tokens)
    } else {
        String::new()
    };
    format!(
        " (input: {uncached} uncached, {} cached{written})",
        spent.cache_read_tokens
    )
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

/// The banner's line of sandbox layers: those in force, and each missing one with why (the
/// facts `session/start` records and `paddock doctor` shows). `None` for a log written before
/// layers were recorded.
fn layers_line(layers: &[paddock::log::LayerRecord]) -> Option<String> {
    if layers.is_empty() {
        return None;
    }
    let held: Vec<&str> = layers
        .iter()
        .filter(|l| l.in_force)
        .map(|l| l.name.as_str())
        .collect();
    let missing: Vec<String> = layers
        .iter()
        .filter(|l| !l.in_force)
        .map(|l| format!("{} ({})", l.name, sanitize(&l.detail)))
        .collect();
    Some(match missing.is_empty() {
        true => format!("sandbox: {} in force", held.join(", ")),
        false => format!(
            "sandbox: {} in force; MISSING {} (paddock doctor says what that means)",
            held.join(", "),
            missing.join("; ")
        ),
    })
}
