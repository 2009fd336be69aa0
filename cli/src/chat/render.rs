//! The chat's terminal view: everything paddock prints goes above the input line, never into
//! it. Complete lines wait in `pending` until the line editor prints them above its
//! prompt (`input.rs` hands them over between keys); the line the model is still writing and
//! the progress line are part of the prompt itself, redrawn in place; while the editor is not
//! reading (start, end), lines go straight to standard output.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use reedline::{Prompt, PromptEditMode, PromptHistorySearch, PromptHistorySearchStatus};
use unicode_width::UnicodeWidthStr;

use super::progress::Status;
use crate::out::{Out, Progress};
use crate::style::{DIM, cut_to_width, paint, sanitize};
use paddock::log::{Body, Event, Source};

pub struct Screen {
    state: Mutex<State>,
    color: bool,
}

#[derive(Default)]
struct State {
    /// The editor is reading: complete lines wait for it in `pending`.
    editor: bool,
    pending: Vec<String>,
    /// Text of the line being written (no newline yet).
    partial: String,
    status: Status,
    /// An approval question waits for its answer.
    asking: bool,
    /// Rows the prompt drew above the input line at its last paint.
    drawn_rows: usize,
}

impl Screen {
    pub fn new(color: bool) -> Screen {
        Screen {
            state: Mutex::new(State::default()),
            color,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lines waiting for the editor, joined (the editor prints them above its prompt).
    /// The editor clears only its input line before printing, so the text starts by moving up
    /// over the rows the prompt drew above it (the line being written, the progress line) and
    /// clearing them: they are drawn again below.
    pub fn take_pending(&self) -> Option<String> {
        let mut state = self.state();
        if state.pending.is_empty() {
            return None;
        }
        let lines = std::mem::take(&mut state.pending).join("\n");
        Some(match state.drawn_rows {
            0 => lines,
            rows => format!("\x1b[{rows}A\r\x1b[J{lines}"),
        })
    }

    /// The editor starts (`true`) or stops reading: when it stops, what waited is printed.
    pub fn set_editor(&self, reading: bool) {
        let mut state = self.state();
        state.editor = reading;
        if !reading {
            let lines = std::mem::take(&mut state.pending);
            print_now(&lines);
        }
    }

    /// Ends the view: the unfinished line is printed too.
    pub fn finish(&self) {
        let mut state = self.state();
        state.editor = false;
        let mut lines = std::mem::take(&mut state.pending);
        if !state.partial.is_empty() {
            lines.push(std::mem::take(&mut state.partial));
        }
        print_now(&lines);
    }

    pub fn set_asking(&self, asking: bool) {
        self.state().asking = asking;
    }

    pub fn busy(&self) -> bool {
        self.state().status.busy()
    }

    /// The prompt's first lines: the line being written, then the progress line (each kept
    /// to one row).
    fn above_input(&self) -> String {
        let width = self.width();
        let mut state = self.state();
        let mut text = String::new();
        if !state.partial.is_empty() {
            text.push_str(&state.partial);
            text.push('\n');
        }
        // While a question waits, the prompt asks for the answer: no progress line.
        if let Some(line) = state.status.line(Instant::now()).filter(|_| !state.asking) {
            text.push_str(&paint(
                self.color,
                DIM,
                // The status quotes the model's call ids and the server's errors (T3).
                &cut_to_width(&sanitize(&line), width.saturating_sub(1)),
            ));
            text.push('\n');
        }
        state.drawn_rows = text.matches('\n').count();
        text
    }
}

fn print_now(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        let _ = write!(out, "{line}\r\n");
    }
    let _ = out.flush();
}

impl Out for Screen {
    fn write(&self, text: &str) {
        let width = self.width();
        let mut state = self.state();
        state.partial.push_str(text);
        let mut complete = Vec::new();
        while let Some(at) = state.partial.find('\n') {
            let line: String = state.partial.drain(..=at).collect();
            complete.push(line.trim_end_matches('\n').to_string());
        }
        // A long unfinished line is broken at a space, so it never wraps inside the prompt.
        while state.partial.width() + 2 > width {
            let room = width.saturating_sub(2);
            let mut cut = 0;
            let mut used = 0;
            for (at, c) in state.partial.char_indices() {
                used += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
                if used > room {
                    break;
                }
                if c == ' ' {
                    cut = at;
                }
            }
            if cut == 0 {
                cut = state
                    .partial
                    .char_indices()
                    .nth(room.max(1))
                    .map_or(state.partial.len(), |(at, _)| at);
            }
            let line: String = state.partial.drain(..cut).collect();
            complete.push(line);
            state.partial = state.partial.trim_start_matches(' ').to_string();
        }
        if complete.is_empty() {
            return;
        }
        if state.editor {
            state.pending.extend(complete);
        } else {
            print_now(&complete);
        }
    }

    fn width(&self) -> usize {
        crossterm::terminal::size()
            .map(|(cols, _)| usize::from(cols).max(20))
            .unwrap_or(100)
    }

    fn progress(&self, progress: Progress) {
        self.state().status.apply(progress, Instant::now());
    }
}

/// The editor's prompt, drawn from the screen's state at every repaint.
pub struct ChatPrompt(pub std::sync::Arc<Screen>);

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Owned(self.0.above_input())
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        if self.0.state().asking {
            Cow::Borrowed("allow? [y/a/N] ")
        } else {
            Cow::Borrowed("› ")
        }
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("  ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let failing = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({failing}history search: {}) ", search.term))
    }

    fn get_prompt_color(&self) -> reedline::Color {
        reedline::Color::Default
    }

    fn get_indicator_color(&self) -> reedline::Color {
        reedline::Color::Default
    }
}

/// Each event of the log at `path`, read line by line (a long session is never held whole);
/// a line that does not parse (a torn tail) ends the reading.
pub fn each_event(path: &std::path::Path, mut f: impl FnMut(Event)) {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    for line in std::io::BufReader::new(file).lines() {
        let Ok(event) = line
            .map_err(|_| ())
            .and_then(|l| serde_json::from_str(&l).map_err(|_| ()))
        else {
            return;
        };
        f(event);
    }
}

/// The end of a reopened session's history, one line per message (`chat --resume`,
/// `--continue`): the last `keep` lines, and how many came before.
pub fn recap(path: &std::path::Path, keep: usize, width: usize) -> Vec<String> {
    let mut lines: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut skipped = 0usize;
    each_event(path, |event| {
        let line = match &event.body {
            Body::UserMessage {
                text,
                source: Source::User,
                images,
            } => format!(
                "you: {}{}",
                one_line(text),
                crate::attach::attached(images.len())
            ),
            Body::InboxIn { text, .. } => format!("you (while it worked): {}", one_line(text)),
            Body::AssistantMessage {
                text, tool_calls, ..
            } => {
                let calls = match tool_calls.len() {
                    0 => String::new(),
                    1 => format!(" [1 call: {}]", tool_calls[0].name),
                    n => format!(" [{n} calls]"),
                };
                format!("agent: {}{calls}", one_line(text))
            }
            Body::TurnEnd { reason, .. } => format!("  (turn ended: {})", reason.as_str()),
            _ => return,
        };
        lines.push_back(cut_to_width(&sanitize(&line), width));
        if lines.len() > keep {
            lines.pop_front();
            skipped += 1;
        }
    });
    let mut shown: Vec<String> = lines.into();
    if skipped > 0 {
        shown.insert(
            0,
            format!("… {skipped} earlier lines (paddock log shows all)"),
        );
    }
    shown
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
