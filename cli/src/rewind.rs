//! `paddock rewind` and `paddock diff`: a recorded session's mounts put back as they were when
//! a turn began, and what the session (or one turn) changed, as a unified diff. Both reopen
//! the session (one writer at a time, its recovery settled) and go through
//! `Session::rewind` and `Session::diff`; this file only turns flags into those calls and
//! prints the answer.

use clap::Args;

use super::Exit;
use super::report::{CommandResult, Failure};
use super::resume::{options, reopen, settle};
use super::session_view::Printer;
use crate::approver::TerminalApprover;
use paddock::session::ModelMove;

#[derive(Args)]
pub struct RewindArgs {
    /// The session id (`paddock log --list` shows them).
    session: String,
    /// The turn whose start to go back to (turns count from 1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    to: u64,
    /// Put the mounts' files back (the default; the conversation is not rewound yet).
    #[arg(long)]
    code: bool,
    /// Restore files changed outside the session since its last checkpoint too (they are
    /// kept, with a warning, without it).
    #[arg(long)]
    force: bool,
    /// When another paddock process has the session, wait for it to end instead of refusing.
    #[arg(long)]
    wait: bool,
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
    let _ = args.code;
    let session = open(&args.session, args.wait).await?;
    let done = session
        .rewind(args.to, args.force)
        .map_err(|e| Failure::new("REWIND_FAILED", e, Exit::Failed))?;
    let clean = paddock_types::text::sanitize;
    for note in &done.notes {
        println!("note: {note}");
    }
    let mut kept_outside = false;
    for (host, restored) in &done.mounts {
        println!(
            "{}: {} written, {} removed, as at the start of turn {}",
            clean(host),
            restored.written.len(),
            restored.removed.len(),
            args.to
        );
        for (rel, why) in &restored.kept {
            kept_outside |= *why == paddock::rewind::Kept::ChangedOutside;
            println!(
                "  kept {}: {}",
                clean(&rel.display().to_string()),
                why.describe()
            );
        }
    }
    for (host, excluded) in &done.excluded {
        for (rel, why) in excluded {
            println!(
                "  not in the checkpoint {}/{}: {why}",
                clean(host),
                clean(rel)
            );
        }
    }
    println!(
        "undo this rewind: the mounts just before it are checkpoint {} (logged as `rewind`)",
        done.before
    );
    if kept_outside {
        println!("files changed outside the session were kept; --force restores them too");
    }
    Ok(Exit::Ok)
}

/// `paddock diff SESSION [--turn N]`.
#[allow(clippy::print_stdout)] // the command's answer
pub async fn diff(args: DiffArgs) -> CommandResult {
    let session = open(&args.session, args.wait).await?;
    let text = session
        .diff(args.turn)
        .map_err(|e| Failure::new("DIFF_FAILED", e, Exit::Failed))?;
    print!("{}", paddock_types::text::sanitize(&text));
    Ok(Exit::Ok)
}
