//! `paddock chat` (M2, I1, I2): an interactive session. A line typed while paddock is idle is
//! the next message; a line typed while it works is steering that enters before its next model
//! request; `/next TEXT` queues a follow-up for when the turn would end; `/compact [FOCUS]`
//! (between turns) summarizes the history now (issue 17); `/stop` or Ctrl-C
//! interrupts the turn; `/quit`, Ctrl-D, or Ctrl-C while idle leaves. Every line is logged
//! before it is acknowledged.

use std::io::Write;

use clap::Args;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Exit;
use super::run::{SessionArgs, agent, start_session};
use super::session_view::Printer;
use crate::agent::{Entry, Inbox};
use crate::hooks::ChatQuestions;
use crate::log::{Lane, Source, StopReason};

#[derive(Args)]
pub struct ChatArgs {
    #[command(flatten)]
    session: SessionArgs,
}

/// Standard input, line by line, read on its own thread so a blocked read never holds up the
/// loop. The channel closes at end of input.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// What a line typed while a turn runs asks for.
#[derive(Debug, PartialEq)]
enum Typed {
    /// An inbox entry for `lane`.
    Input(Lane, String),
    /// Interrupt, then leave.
    Quit,
    /// Compact the history now, keeping what concerns the focus (issue 17).
    Compact(Option<String>),
    Unknown(String),
    Blank,
}

fn classify(raw: &str) -> Typed {
    let line = raw.trim();
    if line.is_empty() {
        return Typed::Blank;
    }
    if !raw.starts_with('/') {
        return Typed::Input(Lane::NextStep, line.to_string());
    }
    match line
        .split_once(' ')
        .map_or((line, ""), |(c, r)| (c, r.trim()))
    {
        ("/stop", _) => Typed::Input(Lane::Interrupt, "/stop".into()),
        ("/next", "") => Typed::Unknown("/next needs a message: /next TEXT".into()),
        ("/next", rest) => Typed::Input(Lane::NextTurn, rest.to_string()),
        ("/quit", _) => Typed::Quit,
        ("/compact", rest) => Typed::Compact((!rest.is_empty()).then(|| rest.to_string())),
        (command, _) if command.starts_with('/') => Typed::Unknown(format!(
            "{command} is not a command; use /stop, /next TEXT, /compact [FOCUS] or /quit (start a line with a space to send a slash)"
        )),
        _ => Typed::Input(Lane::NextStep, line.to_string()),
    }
}

pub async fn chat(args: ChatArgs) -> Exit {
    let questions = ChatQuestions::default();
    let started = match start_session(&args.session, Box::new(questions.clone())).await {
        Ok(started) => started,
        Err(exit) => return exit,
    };
    let printer = Printer::new();
    printer.header(&started.start, &started.path);
    printer.notice(
        "type a task. While it works, a line steers it, /next TEXT queues a follow-up, /stop or Ctrl-C interrupts; /quit or Ctrl-D leaves",
    );
    let inbox = Inbox::new();
    let mut lines = stdin_lines();
    let mut entries = 0u64;
    let mut next_id = || {
        entries += 1;
        format!("in-{entries}")
    };
    let mut last = StopReason::Completed;
    loop {
        print!("> ");
        let _ = std::io::stdout().flush();
        let line = tokio::select! {
            line = lines.recv() => line,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else { break };
        let message = match classify(&line) {
            Typed::Blank => continue,
            Typed::Quit => break,
            Typed::Input(Lane::NextStep, text) => text,
            Typed::Compact(focus) => {
                let agent = agent(
                    &started.loaded,
                    started.provider.as_ref(),
                    &started.log,
                    &printer,
                    args.session.max_turns,
                );
                match agent.compact(focus.as_deref()).await {
                    Ok(Some(_)) => {}
                    Ok(None) => printer.notice("nothing to compact yet"),
                    Err(e) => printer.notice(&format!("compaction failed: {e}")),
                }
                continue;
            }
            Typed::Input(..) => {
                printer.notice("nothing is running: type a message, or /quit");
                continue;
            }
            Typed::Unknown(message) => {
                printer.notice(&message);
                continue;
            }
        };
        let cancel = CancellationToken::new();
        let mut agent = agent(
            &started.loaded,
            started.provider.as_ref(),
            &started.log,
            &printer,
            args.session.max_turns,
        );
        agent.calls.cancel = cancel.clone();
        agent.inbox = Some(&inbox);
        let turn = agent.send(&message);
        tokio::pin!(turn);
        let mut input_open = true;
        let mut quit = false;
        let end = loop {
            tokio::select! {
                end = &mut turn => break end,
                line = lines.recv(), if input_open => {
                    let Some(line) = line else {
                        input_open = false;
                        questions.close();
                        continue;
                    };
                    // A question from approval waits for this line.
                    if questions.answer(&line) {
                        continue;
                    }
                    let (lane, text) = match classify(&line) {
                        Typed::Input(lane, text) => (lane, text),
                        Typed::Blank => continue,
                        Typed::Compact(_) => {
                            printer.notice("/compact works between turns: type it when this one ends");
                            continue;
                        }
                        Typed::Unknown(message) => {
                            printer.notice(&message);
                            continue;
                        }
                        Typed::Quit => {
                            printer.notice("interrupting, then leaving");
                            quit = true;
                            cancel.cancel();
                            continue;
                        }
                    };
                    let entry = Entry { id: next_id(), source: Source::User, lane, text };
                    if let Err(e) = inbox.accept(&started.log, entry) {
                        printer.notice(&format!("cannot log that input ({e}); stopping the turn"));
                        cancel.cancel();
                        continue;
                    }
                    match lane {
                        Lane::Interrupt => {
                            printer.notice("interrupting");
                            cancel.cancel();
                        }
                        Lane::NextStep => printer.notice("noted: it goes in before the next model request"),
                        Lane::NextTurn => printer.notice("queued as a follow-up for when this turn ends"),
                    }
                }
                _ = tokio::signal::ctrl_c() => {
                    printer.notice("interrupting");
                    cancel.cancel();
                }
            }
        };
        last = end.reason;
        if quit || !input_open {
            break;
        }
    }
    println!();
    printer.footer(&started.start.session);
    if last == StopReason::Completed {
        Exit::Ok
    } else {
        Exit::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines_map_to_lanes_and_commands() {
        assert_eq!(
            classify("  look at b.rs "),
            Typed::Input(Lane::NextStep, "look at b.rs".into())
        );
        assert_eq!(
            classify("/next then c.rs"),
            Typed::Input(Lane::NextTurn, "then c.rs".into())
        );
        assert_eq!(
            classify("/stop"),
            Typed::Input(Lane::Interrupt, "/stop".into())
        );
        assert_eq!(classify("/quit"), Typed::Quit);
        assert_eq!(classify("   "), Typed::Blank);
        assert_eq!(
            classify(" /usr/bin is odd"),
            Typed::Input(Lane::NextStep, "/usr/bin is odd".into())
        );
        assert!(matches!(classify("/next"), Typed::Unknown(m) if m.contains("/next TEXT")));
        assert!(
            matches!(classify("/help"), Typed::Unknown(m) if m.contains("/help is not a command"))
        );
    }
}
