//! Where the chat's lines come from. On a terminal: reedline on its own thread, always
//! reading, so the user can edit, recall (↑, Ctrl-R; history per user in the data dir, 0600),
//! complete `/` commands (Tab) and write several lines (Alt-Enter, a trailing `\`, a paste)
//! while the agent works; output waits in the screen and is printed above the prompt between
//! keys (`render.rs`). Otherwise: standard input, line by line.
//!
//! After each line the editor waits for `resume` (or `close`), so it never draws a prompt the
//! chat is about to replace, and stops only after every waiting line was printed.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc as std_mpsc};
use std::time::Duration;

use reedline::{
    ColumnarMenu, Completer, CompletionResult, EditCommand, Emacs, ExternalPrinter,
    FileBackedHistory, KeyCode, KeyModifiers, MenuBuilder, Reedline, ReedlineEvent, ReedlineMenu,
    Signal, Span, Suggestion, ValidationResult, Validator, default_emacs_keybindings,
};
use tokio::sync::mpsc;

use super::commands;
use super::render::{ChatPrompt, Screen};

/// Lines kept in the history file.
const HISTORY_LINES: usize = 2000;
/// How often the editor looks for output and redraws the progress line.
const TICK: Duration = Duration::from_millis(100);

/// What the user did.
#[derive(Debug)]
pub enum Typed {
    Line(String),
    /// Ctrl-C.
    Interrupt,
    /// Ctrl-D, or the end of standard input.
    End,
}

pub struct Input {
    rx: mpsc::UnboundedReceiver<Typed>,
    /// The editor's go-ahead after each line: `true` reads on, `false` stops.
    go: Option<std_mpsc::Sender<bool>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Input {
    /// Standard input, line by line (not a terminal).
    pub fn piped() -> Input {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { break };
                if tx.send(Typed::Line(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(Typed::End);
        });
        Input {
            rx,
            go: None,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        }
    }

    /// The line editor on the terminal; `history` is the per-user history file.
    pub fn terminal(screen: Arc<Screen>, history: &Path, color: bool) -> Input {
        let (tx, rx) = mpsc::unbounded_channel();
        let (go, go_rx) = std_mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let editor = editor(Arc::clone(&screen), history, color, Arc::clone(&stop));
        let thread = std::thread::spawn(move || read_lines(editor, screen, tx, go_rx));
        Input {
            rx,
            go: Some(go),
            stop,
            thread: Some(thread),
        }
    }

    /// The next thing typed; `None` when input is gone for good.
    pub async fn next(&mut self) -> Option<Typed> {
        self.rx.recv().await
    }

    /// The editor may read the next line.
    pub fn resume(&self) {
        if let Some(go) = &self.go {
            let _ = go.send(true);
        }
    }

    /// Stops the editor once every waiting line is printed, and waits for it.
    pub fn close(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(go) = self.go.take() {
            let _ = go.send(false);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn read_lines(
    editor: Option<(Reedline, ChatPrompt)>,
    screen: Arc<Screen>,
    tx: mpsc::UnboundedSender<Typed>,
    go: std_mpsc::Receiver<bool>,
) {
    let Some((mut editor, prompt)) = editor else {
        let _ = tx.send(Typed::End);
        return;
    };
    loop {
        screen.set_editor(true);
        let signal = editor.read_line(&prompt);
        screen.set_editor(false);
        let typed = match signal {
            Ok(Signal::Success(line)) => Typed::Line(line.replace("\\\n", "\n")),
            Ok(Signal::CtrlC) => Typed::Interrupt,
            Ok(Signal::CtrlD) => Typed::End,
            Ok(Signal::HostCommand(_)) => continue,
            Ok(Signal::ExternalBreak(_)) => {
                // The prompt the editor left: an empty input line.
                use std::io::Write;
                let mut out = std::io::stdout();
                let _ = out.write_all(b"\r\x1b[2K");
                let _ = out.flush();
                return;
            }
            Ok(_) => continue,
            Err(e) => {
                eprintln!("paddock: the line editor failed ({e}); leaving");
                let _ = tx.send(Typed::End);
                return;
            }
        };
        if tx.send(typed).is_err() || !go.recv().unwrap_or(false) {
            return;
        }
    }
}

/// The editor: emacs keys, history, `/` completion, multi-line input, output printed above
/// the prompt and the progress line redrawn on every tick.
fn editor(
    screen: Arc<Screen>,
    history: &Path,
    color: bool,
    stop: Arc<AtomicBool>,
) -> Option<(Reedline, ChatPrompt)> {
    let history = match open_history(history) {
        Ok(history) => Some(history),
        Err(e) => {
            eprintln!(
                "paddock: no input history this time: {} ({e})",
                history.display()
            );
            None
        }
    };
    let mut keys = default_emacs_keybindings();
    keys.add_binding(
        KeyModifiers::ALT,
        KeyCode::Enter,
        ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
    );
    keys.add_binding(
        KeyModifiers::NONE,
        KeyCode::Tab,
        ReedlineEvent::UntilFound(vec![
            ReedlineEvent::Menu("commands".into()),
            ReedlineEvent::MenuNext,
        ]),
    );
    let printer = ExternalPrinter::<String>::new(1024);
    let sender = printer.sender();
    let mut editor = Reedline::create()
        .with_edit_mode(Box::new(Emacs::new(keys)))
        .with_completer(Box::new(CommandCompleter))
        .with_menu(ReedlineMenu::EngineCompleter(Box::new(
            ColumnarMenu::default().with_name("commands"),
        )))
        .with_validator(Box::new(TrailingBackslash))
        .with_history_exclusion_prefix(Some(" ".into()))
        .with_ansi_colors(color)
        .use_bracketed_paste(true)
        .with_external_printer(printer)
        .with_poll_interval(TICK);
    if let Some(history) = history {
        editor = editor.with_history(history);
    }
    let repaint = editor.repaint_signal();
    let break_now = Arc::new(AtomicBool::new(false));
    let tick_screen = Arc::clone(&screen);
    let tick_break = Arc::clone(&break_now);
    // Runs in the editor's loop just before it prints what the printer holds: lines handed
    // over here are printed in this same round, so stopping only in a round that handed over
    // nothing never loses a line.
    let tick = move || match tick_screen.take_pending() {
        Some(lines) => {
            let _ = sender.send(lines);
        }
        None if stop.load(Ordering::SeqCst) => tick_break.store(true, Ordering::SeqCst),
        None if tick_screen.busy() => repaint.request_repaint(),
        None => {}
    };
    let editor = editor
        .with_idle_callback(Box::new(tick))
        .with_break_signal(break_now);
    Some((editor, ChatPrompt(screen)))
}

/// The history file, created private (0600) before the editor opens it.
fn open_history(path: &Path) -> std::io::Result<Box<FileBackedHistory>> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    FileBackedHistory::with_file(HISTORY_LINES, path.to_path_buf())
        .map(Box::new)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Completes the first word of a line starting with `/` from the command table.
struct CommandCompleter;

impl Completer for CommandCompleter {
    fn complete(&mut self, line: &str, pos: usize) -> CompletionResult {
        let typed = &line[..pos.min(line.len())];
        if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
            return CompletionResult::fresh(Vec::new());
        }
        let suggestions: Vec<Suggestion> = commands::completions(typed)
            .into_iter()
            .map(|c| Suggestion {
                value: c.name.to_string(),
                description: Some(c.help.to_string()),
                span: Span::new(0, typed.len()),
                append_whitespace: c.takes,
                ..Suggestion::default()
            })
            .collect();
        CompletionResult::fresh(suggestions)
    }
}

/// A line ending in `\` goes on: Enter starts a new line instead of sending.
struct TrailingBackslash;

impl Validator for TrailingBackslash {
    fn validate(&self, line: &str) -> ValidationResult {
        if line.ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}
