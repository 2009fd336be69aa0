//! `paddock chat` (M2, I1, I2, L5): an interactive session. A line typed while paddock is idle
//! is the next message; a line typed while it works is steering that enters before its next
//! model request; `/next TEXT` queues a follow-up; `/compact [FOCUS]` (between turns)
//! summarizes the history now; `/rewind` (between turns) lists the turns with what each
//! changed and goes back to one, `/fork N` forks the session at turn N; `/stop` or Ctrl-C interrupts the turn;
//! `/quit`, Ctrl-D, or Ctrl-C while idle leaves. Every line is logged before it is
//! acknowledged. `--continue` and `--resume ID` reopen a session with its end shown briefly.
//!
//! On a terminal the input is a line editor that keeps working while the agent does
//! (`input.rs`), and output, progress and approval questions are drawn above it
//! (`render.rs`, `progress.rs`); commands are one table (`commands.rs`); `/rewind` and
//! `/fork` are read, and the turns listed, by `rewind.rs`. Otherwise lines are
//! read from standard input and the view is plain text.

mod commands;
mod input;
mod progress;
mod render;
mod rewind;

use std::io::IsTerminal;
use std::sync::Arc;

use clap::Args;

use super::Exit;
use super::out::{Out, Stdout};
use super::report::{CommandResult, Failure};
use super::resume::{options, reopen, settle};
use super::run::{SessionArgs, start_session};
use super::session_view::Printer;
use super::style::{self, sanitize};
use crate::approver::{ChatQuestions, Presenter};
use commands::{Action, Typed as Line, classify};
use input::{Input, Typed};
use paddock::agent::Entry;
use paddock::log::{Body, Source, StopReason};
use paddock::session::{Interrupter, Session, latest_in};
use render::Screen;

#[derive(Args)]
pub struct ChatArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Reopen the last session started in this directory.
    #[arg(long = "continue", conflicts_with = "resume")]
    continue_last: bool,
    /// Reopen session ID (`paddock log --list`); --base-url, --model and --provider move it
    /// to another server (recorded in its log).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
}

/// Messages of a reopened session shown when it opens.
const RECAP_LINES: usize = 8;

pub async fn chat(args: ChatArgs) -> CommandResult {
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let color = style::color_enabled_stdout();
    let screen = terminal.then(|| Arc::new(Screen::new(color)));
    let questions = match &screen {
        Some(screen) => ChatQuestions::with_presenter(presenter(Arc::clone(screen))),
        None => ChatQuestions::default(),
    };
    let out: Arc<dyn Out> = match &screen {
        Some(screen) => Arc::clone(screen) as Arc<dyn Out>,
        None => Arc::new(Stdout),
    };
    let printer = Printer::with_out(out, color, true);
    let opened = open(&args, &questions, &printer).await?;
    let input = match &screen {
        Some(screen) => {
            let history = opened.data_dir().join("chat-history");
            Input::terminal(Arc::clone(screen), &history, color)
        }
        None => Input::piped(),
    };
    printer.notice(
        "type a task. While it works, a line steers it, /next TEXT queues a follow-up, /stop or Ctrl-C interrupts; /help for more; /quit or Ctrl-D leaves",
    );
    let mut chat = Chat {
        session: &opened,
        printer: &printer,
        questions,
        entries: std::cell::Cell::new(0),
        images: std::cell::RefCell::new(Vec::new()),
        input,
    };
    let exit = chat.run().await;
    chat.input.close();
    if let Some(screen) = &screen {
        screen.finish();
    }
    printer.footer_chat(opened.id());
    Ok(exit)
}

/// Approval questions drawn above the input line, whose prompt then asks for the answer.
fn presenter(screen: Arc<Screen>) -> Presenter {
    Arc::new(move |question| match question {
        Some(q) => {
            screen.write(&q.body());
            screen.set_asking(true);
        }
        None => screen.set_asking(false),
    })
}

/// A new session, or the one `--continue`/`--resume` names, with its header shown (and, when
/// reopened, the end of its history and what recovery settled).
async fn open(
    args: &ChatArgs,
    questions: &ChatQuestions,
    printer: &Printer,
) -> Result<Session, Failure> {
    let id = if args.continue_last {
        let env = super::Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
        match latest_in(&env.store.root().join("sessions"), &env.cwd) {
            Some(id) => Some(id),
            None => {
                return Err(Failure::usage(format!(
                    "no session was started in {}; start one with paddock chat",
                    env.cwd.display()
                )));
            }
        }
    } else {
        args.resume.clone()
    };
    let approver = Box::new(questions.clone());
    let Some(id) = id else {
        let session = start_session(&args.session, approver, None, None).await?;
        printer.header(session.record(), session.log_path());
        return Ok(session);
    };
    let options = options(
        false,
        None,
        args.session.model_move(),
        approver,
        args.session.max_turns,
    );
    let reopened = reopen(&id, options).await?;
    let last_turn = reopened.last_turn();
    printer.header(reopened.session().record(), reopened.session().log_path());
    for line in render::recap(reopened.session().log_path(), RECAP_LINES, printer_width()) {
        printer.plain(&line);
    }
    let session = settle(reopened, printer).await?;
    if let Some(reason) = last_turn.filter(|r| *r != StopReason::Completed) {
        printer.notice(&format!(
            "the last turn stopped ({}); send a message to go on",
            reason.as_str()
        ));
    }
    Ok(session)
}

fn printer_width() -> usize {
    super::out::terminal_width().unwrap_or(100)
}

struct Chat<'a> {
    session: &'a Session,
    printer: &'a Printer,
    questions: ChatQuestions,
    entries: std::cell::Cell<u64>,
    input: Input,
    /// Images attached with `/image`, for the next message.
    images: std::cell::RefCell<Vec<paddock::model::ImagePart>>,
}

impl Chat<'_> {
    /// Reads lines until the user leaves; the exit code is the last turn's.
    async fn run(&mut self) -> Exit {
        let mut last: Option<StopReason> = None;
        loop {
            let typed = tokio::select! {
                typed = self.input.next() => typed,
                _ = tokio::signal::ctrl_c() => Some(Typed::Interrupt),
            };
            let line = match typed {
                None | Some(Typed::End) => break,
                Some(Typed::Interrupt) => return Exit::Interrupted,
                Some(Typed::Line(line)) => line,
            };
            match classify(&line) {
                Line::Blank => {}
                Line::Message(text) => {
                    self.input.resume();
                    let (reason, leave) = self.turn(&text).await;
                    last = Some(reason);
                    if leave {
                        break;
                    }
                    continue;
                }
                Line::Command(Action::Quit, _) => break,
                Line::Command(Action::Compact, focus) => self.compact(&focus).await,
                Line::Command(Action::Rewind, arg) => self.rewind(&arg),
                Line::Command(Action::Fork, arg) => self.fork(&arg).await,
                Line::Command(action, arg) => self.command(action, &arg, false),
                Line::Unknown(message) => self.printer.notice(&message),
            }
            self.input.resume();
        }
        last.map_or(Exit::Ok, Exit::of_stop)
    }

    /// A command that needs no turn (or, for `/stop` and `/next`, one that is not running).
    fn command(&self, action: Action, arg: &str, busy: bool) {
        match action {
            Action::Show => self.show(arg),
            Action::Help => self.printer.plain(&commands::help()),
            Action::Stop | Action::Next if !busy => self
                .printer
                .notice("nothing is running: type a message, or /quit"),
            Action::Compact | Action::Rewind | Action::Fork if busy => self.printer.notice(
                "/compact, /rewind and /fork work between turns: type it when this one ends",
            ),
            Action::Image => self.attach(arg),
            Action::Stop
            | Action::Next
            | Action::Quit
            | Action::Compact
            | Action::Rewind
            | Action::Fork => {}
        }
    }

    /// `/image PATH`: read and checked now, sent with the next message.
    fn attach(&self, path: &str) {
        match crate::attach::read_image(std::path::Path::new(path)) {
            Ok(image) => {
                self.printer.notice(&format!(
                    "attached {} ({}); it goes with your next message",
                    sanitize(path),
                    image.describe()
                ));
                self.images.borrow_mut().push(image);
            }
            Err(e) => self.printer.notice(&e),
        }
    }

    /// `/compact [FOCUS]` between turns.
    async fn compact(&self, focus: &str) {
        let focus = (!focus.is_empty()).then_some(focus);
        match self.session.compact(focus, self.printer).await {
            Ok(Some(_)) => {}
            Ok(None) => self.printer.notice("nothing to compact yet"),
            Err(e) => self.printer.notice(&format!("compaction failed: {e}")),
        }
    }

    /// `/rewind`: the turns and what each changed; `/rewind N [code|conversation|both]
    /// [force]`: back to where turn N began; `/rewind call ID [force]`: the files as they
    /// were just before that call.
    fn rewind(&self, arg: &str) {
        let asked = match rewind::rewind(arg) {
            Ok(asked) => asked,
            Err(line) => return self.printer.notice(&line),
        };
        match asked {
            rewind::Rewind::List => {
                let turns = self.session.turn_list();
                if turns.is_empty() {
                    self.printer.notice("no turn yet: nothing to rewind");
                } else {
                    self.printer.plain(&rewind::turn_list(&turns));
                }
            }
            rewind::Rewind::Call { id, force } => match self.session.rewind_to_call(id, force) {
                Ok(done) => {
                    let at = format!("just before call {}", sanitize(id));
                    self.printer
                        .plain(crate::rewind::describe_at(&done, &at).trim_end());
                }
                Err(e) => self.printer.notice(&format!("rewind failed: {e}")),
            },
            rewind::Rewind::Turn { to, scope, force } => {
                match self.session.rewind(to, scope, force) {
                    Ok(done) => {
                        self.printer
                            .plain(crate::rewind::describe(&done, to).trim_end());
                        if let Some(conversation) = &done.conversation {
                            let prompt =
                                conversation.prompt.as_deref().map_or(String::new(), |p| {
                                    format!("; its message was: {}", sanitize(p))
                                });
                            self.printer.notice(&format!(
                                "the conversation goes on from the start of turn {}{prompt}",
                                conversation.turn
                            ));
                        }
                    }
                    Err(e) => self.printer.notice(&format!("rewind failed: {e}")),
                }
            }
        }
    }

    /// `/fork N [keep-files] [force]`: a new session from this one's history before turn N;
    /// `/fork call ID [keep-files] [force]`: from just before call ID.
    async fn fork(&self, arg: &str) {
        let (at, keep_files, force) = match rewind::fork(arg) {
            Ok(asked) => asked,
            Err(line) => return self.printer.notice(&line),
        };
        let options = paddock::session::ForkOptions {
            at: at.clone(),
            files: !keep_files,
            force,
            approver: Box::new(self.questions.clone()),
        };
        match self.session.fork_here(options, self.printer).await {
            Ok(forked) => {
                let id = forked.session.id().to_string();
                self.printer
                    .plain(crate::rewind::describe_at(&forked.rewound, &at.describe()).trim_end());
                if let paddock::ForkAt::Call(_) = at {
                    self.printer
                        .plain(crate::rewind::fork_next(&at, None).trim_end());
                }
                self.printer.notice(&format!(
                    "forked {} as {id}; this chat stays on {}; `paddock chat --resume {id}` goes \
                     on with the fork",
                    at.describe(),
                    self.session.id()
                ));
            }
            Err(e) => self.printer.notice(&format!("fork failed: {e}")),
        }
    }

    /// `/show ID`: the whole result of a call, as logged.
    fn show(&self, id: &str) {
        let mut found = None;
        render::each_event(self.session.log_path(), |event| {
            if let Body::ToolResult {
                id: got, content, ..
            } = event.body
                && got == id
            {
                found = Some(content);
            }
        });
        match found {
            Some(content) => self.printer.plain(&format!(
                "── result of {} ({} lines) ──\n{}\n── end of {} ──",
                sanitize(id),
                content.lines().count(),
                sanitize(content.trim_end()),
                sanitize(id)
            )),
            None => self.printer.notice(&format!(
                "no result for `{id}` in this session; results are labelled with their call (c1, ...)"
            )),
        }
    }

    fn next_id(&self) -> String {
        self.entries.set(self.entries.get() + 1);
        format!("in-{}", self.entries.get())
    }

    /// Runs a turn on `message` while taking typed lines; returns how it ended and whether
    /// the user asked to leave.
    async fn turn(&mut self, message: &str) -> (StopReason, bool) {
        let cancel = self.session.interrupter();
        let images = self.images.take();
        let turn = self
            .session
            .send_with_images(message, &images, self.printer);
        tokio::pin!(turn);
        let mut input_open = true;
        let mut leave = false;
        let end = loop {
            tokio::select! {
                end = &mut turn => break end,
                typed = self.input.next(), if input_open => {
                    let line = match typed {
                        None | Some(Typed::End) => {
                            input_open = false;
                            leave = true;
                            self.questions.close();
                            self.printer.notice("leaving when this turn ends (Ctrl-C stops it now)");
                            self.input.resume();
                            continue;
                        }
                        Some(Typed::Interrupt) => {
                            self.printer.notice("interrupting");
                            cancel.interrupt();
                            self.input.resume();
                            continue;
                        }
                        Some(Typed::Line(line)) => line,
                    };
                    leave |= self.busy_line(&line, &cancel);
                    self.input.resume();
                }
                _ = tokio::signal::ctrl_c() => {
                    self.printer.notice("interrupting");
                    cancel.interrupt();
                }
            }
        };
        (end.reason, leave)
    }

    /// A line typed while a turn runs: an approval answer, steering, a follow-up, a command.
    /// True when the user asked to leave.
    fn busy_line(&self, line: &str, cancel: &Interrupter) -> bool {
        // A question from approval waits for this line.
        if self.questions.answer(line) {
            return false;
        }
        let (lane, text) = match classify(line) {
            Line::Blank => return false,
            Line::Message(text) => (paddock::log::Lane::NextStep, text),
            Line::Unknown(message) => {
                self.printer.notice(&message);
                return false;
            }
            Line::Command(Action::Quit, _) => {
                self.printer.notice("interrupting, then leaving");
                cancel.interrupt();
                return true;
            }
            Line::Command(action, arg) => match commands::lane(action) {
                Some(lane) if lane == paddock::log::Lane::Interrupt => (lane, "/stop".to_string()),
                Some(lane) => (lane, arg),
                None => {
                    self.command(action, &arg, true);
                    return false;
                }
            },
        };
        let entry = Entry {
            id: self.next_id(),
            source: Source::User,
            lane,
            text,
        };
        if let Err(e) = self.session.accept(entry) {
            self.printer
                .notice(&format!("cannot log that input ({e}); stopping the turn"));
            cancel.interrupt();
            return false;
        }
        match lane {
            paddock::log::Lane::Interrupt => {
                self.printer.notice("interrupting");
                cancel.interrupt();
            }
            paddock::log::Lane::NextStep => self
                .printer
                .notice("noted: it goes in before the next model request"),
            paddock::log::Lane::NextTurn => self
                .printer
                .notice("queued as a follow-up for when this turn ends"),
        }
        false
    }
}
