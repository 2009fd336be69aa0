//! `paddock rewind`, `paddock fork` and `paddock diff`: a recorded session put back as it was
//! when a turn began (its mounts, its conversation, or both), a new session from its history
//! before a turn, and what the session (or one turn) changed, as a unified diff. They go
//! through `Session::rewind`, `Session::fork` and `Session::diff` (rewind and diff reopen the
//! session: one writer at a time, its recovery settled); this file only turns flags into those
//! calls and prints the answer (`describe`, which chat's `/rewind` and `/fork` print too).

use clap::Args;

use super::Exit;
use super::report::{CommandResult, Failure};
use super::resume::{options, reopen, settle};
use super::session_view::Printer;
use crate::approver::TerminalApprover;
use paddock::RewindScope;
use paddock::session::ModelMove;

#[derive(Args)]
pub struct RewindArgs {
    /// The session id (`paddock log --list` shows them).
    session: String,
    /// The turn whose start to go back to (turns count from 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), required_unless_present = "call")]
    to: Option<u64>,
    /// Instead of a turn: put the files back as they were just before call ID started (the
    /// checkpoints a preset's `[checkpoints] grain = "call"` takes; `paddock log SESSION`
    /// shows the calls). The files only: the conversation goes on as it is.
    #[arg(long, value_name = "ID", conflicts_with_all = ["to", "conversation", "both"])]
    call: Option<String>,
    /// Put back the mounts' files only; the conversation goes on as it is.
    #[arg(long, group = "scope")]
    code: bool,
    /// Put back the conversation only: the next turn is turn N, on the history as it stood
    /// when turn N began; the files stay as they are.
    #[arg(long, group = "scope")]
    conversation: bool,
    /// Put back both (the default): the files and what the model remembers agree again.
    #[arg(long, group = "scope")]
    both: bool,
    /// Restore files changed outside the session since its last checkpoint too (they are
    /// kept, with a warning, without it).
    #[arg(long)]
    force: bool,
    /// When another paddock process has the session, wait for it to end instead of refusing.
    #[arg(long)]
    wait: bool,
}

#[derive(Args)]
pub struct ForkArgs {
    /// The session to fork (`paddock log --list` shows them).
    session: String,
    /// The turn whose start the fork begins at (turns count from 1): its log holds the
    /// history before that turn's message.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), required_unless_present = "call")]
    at: Option<u64>,
    /// Instead of a turn: fork from just before call ID started (the checkpoints a preset's
    /// `[checkpoints] grain = "call"` takes; `paddock log SESSION` shows the calls). The
    /// fork's log holds the history up to that call, which it answers as not run; the files
    /// are put back as they were just before it.
    #[arg(long, value_name = "ID", conflicts_with = "at")]
    call: Option<String>,
    /// Leave the files as they are: only the conversation forks.
    #[arg(long)]
    keep_files: bool,
    /// Restore files changed since the original's last checkpoint too (they are kept, with a
    /// warning, without it).
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The session id (`paddock log --list` shows them).
    session: String,
    /// Only what turn N changed (from its start to its end); without it, all the session
    /// changed, up to the mounts as they are now.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    turn: Option<u64>,
    /// When another paddock process has the session, wait for it to end instead of refusing.
    #[arg(long)]
    wait: bool,
}

async fn open(id: &str, wait: bool) -> Result<paddock::Session, Failure> {
    let approver = Box::new(TerminalApprover::new());
    let mut options = options(wait, None, ModelMove::default(), approver, None);
    options.without_message = true;
    let reopened = reopen(id, options).await?;
    settle(reopened, &Printer::new()).await
}

/// `paddock rewind SESSION --to N`.
#[allow(clippy::print_stdout)] // the command's answer
pub async fn rewind(args: RewindArgs) -> CommandResult {
    let scope = match (args.code, args.conversation) {
        (true, _) => RewindScope::Code,
        (_, true) => RewindScope::Conversation,
        _ => RewindScope::Both,
    };
    let session = open(&args.session, args.wait).await?;
    let failed = |e| Failure::new("REWIND_FAILED", e, Exit::Failed);
    let (done, at) = match (&args.call, args.to) {
        (Some(call), _) => (
            session.rewind_to_call(call, args.force).map_err(failed)?,
            format!("just before call {}", paddock_types::text::sanitize(call)),
        ),
        (None, Some(to)) => (
            session.rewind(to, scope, args.force).map_err(failed)?,
            format!("at the start of turn {to}"),
        ),
        (None, None) => unreachable!("clap requires --to without --call"),
    };
    print!("{}", describe_at(&done, &at));
    if let Some(conversation) = &done.conversation {
        println!(
            "the conversation goes on from the start of turn {}; paddock resume {} \"...\" runs it{}",
            conversation.turn,
            session.id(),
            conversation
                .prompt
                .as_deref()
                .map_or_else(String::new, |p| format!(
                    " (its message was: {})",
                    paddock_types::text::clip(&paddock_types::text::sanitize(p), 200)
                ))
        );
    }
    Ok(Exit::Ok)
}

/// What a rewind of the code did, in lines for the terminal (`rewind`, `/rewind`, `fork`).
pub fn describe(done: &paddock::Rewound, to: u64) -> String {
    describe_at(done, &format!("at the start of turn {to}"))
}

/// `describe`, the point gone back to in words (`at the start of turn 2`, `just before call
/// c1`).
pub fn describe_at(done: &paddock::Rewound, at: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let clean = paddock_types::text::sanitize;
    for note in &done.notes {
        let _ = writeln!(out, "note: {}", clean(note));
    }
    let mut kept_outside = false;
    for (host, restored) in &done.mounts {
        let _ = writeln!(
            out,
            "{}: {} written, {} removed, as {at}",
            clean(host),
            restored.written.len(),
            restored.removed.len(),
        );
        for (rel, why) in &restored.kept {
            kept_outside |= *why == paddock::rewind::Kept::ChangedOutside;
            let _ = writeln!(
                out,
                "  kept {}: {}",
                clean(&rel.display().to_string()),
                why.describe()
            );
        }
    }
    for (host, excluded) in &done.excluded {
        for (rel, why) in excluded {
            let _ = writeln!(
                out,
                "  not in the checkpoint {}/{}: {why}",
                clean(host),
                clean(rel)
            );
        }
    }
    if !done.before.is_empty() {
        let _ = writeln!(
            out,
            "undo this rewind: the mounts just before it are checkpoint {} (logged as `rewind`)",
            done.before
        );
    }
    if kept_outside {
        let _ = writeln!(
            out,
            "files changed outside the session were kept; --force restores them too"
        );
    }
    out
}

/// `paddock fork SESSION --at N` (or `--call ID`).
#[allow(clippy::print_stdout)] // the command's answer
pub async fn fork(args: ForkArgs) -> CommandResult {
    let env = super::Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    let at = match (args.call, args.at) {
        (Some(call), _) => paddock::ForkAt::Call(call),
        (None, Some(at)) => paddock::ForkAt::Turn(at),
        (None, None) => unreachable!("clap requires --at without --call"),
    };
    let options = paddock::session::ForkOptions {
        at: at.clone(),
        files: !args.keep_files,
        force: args.force,
        approver: Box::new(TerminalApprover::new()),
    };
    let forked = paddock::Session::fork(env, &args.session, options, &Printer::new()).await?;
    let id = forked.session.id();
    println!(
        "forked {} {} as {id}",
        paddock_types::text::sanitize(&args.session),
        at.describe()
    );
    print!("{}", describe_at(&forked.rewound, &at.describe()));
    print!("{}", fork_next(&at, forked.prompt.as_deref()));
    println!("go on: paddock resume {id} \"...\"");
    Ok(Exit::Ok)
}

/// What the fork's next message starts, in lines (`fork`, `/fork`).
pub fn fork_next(at: &paddock::ForkAt, prompt: Option<&str>) -> String {
    match (at, prompt) {
        (paddock::ForkAt::Turn(n), Some(prompt)) => format!(
            "turn {n}'s message was: {}\n",
            paddock_types::text::clip(&paddock_types::text::sanitize(prompt), 200)
        ),
        (paddock::ForkAt::Call(call), _) => format!(
            "the fork's history ends with call {} answered as not run (the files are as they \
             were just before it); its next message starts a new turn\n",
            paddock_types::text::sanitize(call)
        ),
        (paddock::ForkAt::Turn(_), None) => String::new(),
    }
}

/// `paddock diff SESSION [--turn N]`: the diff on stdout; what the checkpoints leave out (so
/// the diff cannot show) on stderr, so the diff stays one a patch tool reads.
#[allow(clippy::print_stdout, clippy::print_stderr)] // the command's answer
pub async fn diff(args: DiffArgs) -> CommandResult {
    let session = open(&args.session, args.wait).await?;
    let diff = session
        .diff(args.turn)
        .map_err(|e| Failure::new("DIFF_FAILED", e, Exit::Failed))?;
    print!("{}", paddock_types::text::sanitize(&diff.text));
    let clean = paddock_types::text::sanitize;
    for note in &diff.notes {
        eprintln!("note: {}", clean(note));
    }
    for (host, excluded) in &diff.excluded {
        for (rel, why) in excluded {
            eprintln!(
                "note: not in the checkpoints, so not in this diff: {}/{}: {why}",
                clean(host),
                clean(rel)
            );
        }
    }
    Ok(Exit::Ok)
}
