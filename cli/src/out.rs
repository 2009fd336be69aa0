//! Where the live view of a session goes: standard output for `run` and `resume`, the chat's
//! terminal view (`chat/render.rs`) for `chat`, which also shows progress. Text reaching an
//! `Out` is already sanitized (T3) and styled.

use std::io::Write;
use std::time::Duration;

/// What the session is doing, for a progress display.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A turn started, or a model request began: waiting for the model's first output.
    Waiting,
    /// The model's text is arriving.
    Streaming,
    /// The model's message is complete and its calls are about to run (or be asked about).
    Calls,
    ToolStarted {
        id: String,
        name: String,
    },
    ToolEnded {
        id: String,
    },
    /// A failed request is retried after `delay`.
    Retry {
        delay: Duration,
        reason: String,
    },
    /// The turn ended.
    Idle,
}

pub trait Out: Send + Sync {
    /// Writes `text` (styled, sanitized; may end mid-line).
    fn write(&self, text: &str);
    /// The width lines are wrapped to.
    fn width(&self) -> usize {
        100
    }
    fn progress(&self, _progress: Progress) {}
}

/// Standard output, as is.
pub struct Stdout;

impl Out for Stdout {
    fn write(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    fn width(&self) -> usize {
        terminal_width().unwrap_or(100)
    }
}

/// The terminal's width, when standard output is one.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    crossterm::terminal::size()
        .ok()
        .map(|(cols, _)| usize::from(cols).max(20))
}
