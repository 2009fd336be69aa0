//! `paddock resume` (L2, L5, M2): recover a session from its log (drop a torn tail, settle
//! what a crash left open, refuse changed plugins) and continue it, on its model or moved to
//! another (`reopen.rs`). The log is streamed: a long session is resumed holding what the
//! model will be sent, not every event (issue 13).

use clap::Args;

use super::Exit;
use super::reopen::{MoveArgs, Reopened, reopen};
use super::run::{agent, exit_of, fail};
use super::session_view::Printer;
use super::tool::cancel_on_ctrl_c;
use crate::agent::Agent;
use crate::agent::NO_TASK;
use crate::exec::RawCall;
use crate::hooks::TerminalApprover;
use crate::log::{Body, Settle, StopReason, Wait};

#[derive(Args)]
pub struct ResumeArgs {
    /// The session id (`paddock log --list` shows them).
    session: String,
    /// A new message; without one, an interrupted or budget-stopped turn continues.
    message: Option<String>,
    /// Override the preset's limits.max_turns (model requests per session).
    #[arg(long)]
    max_turns: Option<u64>,
    /// Output limit per model response from now on, instead of the recorded one.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_output_tokens: Option<u32>,
    /// When another paddock process has the session, wait for it to end instead of refusing.
    #[arg(long)]
    wait: bool,
    #[command(flatten)]
    moved: MoveArgs,
}

/// `paddock resume`: take the session (L6), recover the log (L2, L8), then continue (L5).
pub async fn resume(args: ResumeArgs) -> Exit {
    let wait = if args.wait { Wait::Yes } else { Wait::No };
    let approver = Box::new(TerminalApprover::new());
    let reopened = match reopen(
        &args.session,
        wait,
        args.max_output_tokens,
        &args.moved,
        approver,
    )
    .await
    {
        Ok(reopened) => reopened,
        Err(exit) => return exit,
    };
    let Reopened {
        started,
        recovery,
        last_turn,
        torn,
    } = reopened;
    let has_task = started.log.with_state(|state| state.has_task);
    if args.message.is_none() && !has_task {
        return fail(&format!(
            "{NO_TASK}: paddock resume {} \"...\"",
            args.session
        ));
    }
    let printer = Printer::new();
    if let Some(torn) = torn {
        printer.notice(&format!(
            "dropped a torn last line ({torn} bytes) left by a crash"
        ));
    }
    printer.header(&started.start, &started.path);
    cancel_on_ctrl_c(&started.loaded.cancel);
    let agent = agent(&started, &printer, args.max_turns);
    if let Err(e) = repair(&agent, &printer, recovery).await {
        return fail(&format!("cannot write the session log: {e}"));
    }
    let end = match (&args.message, last_turn) {
        (Some(message), _) => {
            printer.user(message);
            agent.send(message).await
        }
        (None, Some(StopReason::Completed)) => {
            printer.notice(&format!(
                "the session's last turn completed; to go on, give a message: paddock resume {} \"...\"",
                started.start.session
            ));
            return Exit::Ok;
        }
        (None, _) => agent.run_turns().await,
    };
    printer.footer(&started.start.session);
    exit_of(&end)
}

/// Settles what recovery found: the temporary files of writes the crash interrupted are
/// removed first; then, in the calls' order, synthesized results are appended, idempotent
/// calls are run again one at a time (each result logged as it ends), and the open turn is
/// ended last.
pub(super) async fn repair(
    agent: &Agent<'_>,
    printer: &Printer,
    recovery: crate::log::Recovery,
) -> std::io::Result<()> {
    for line in agent.remove_interrupted_temps(&recovery.interrupted) {
        printer.notice(&line);
    }
    for step in recovery.steps {
        match step {
            Settle::Append(body) => {
                if let Body::ToolResult { id, code, .. } = &body {
                    printer.notice(&format!(
                        "call {id}: {} (recorded on resume)",
                        code.as_deref().unwrap_or("")
                    ));
                }
                agent.log.append(body)?;
            }
            Settle::Rerun(call) => {
                printer.notice(&format!(
                    "call {}: running `{}` again (idempotent; its result was lost)",
                    call.id, call.name
                ));
                let call = RawCall {
                    id: call.id,
                    name: call.name,
                    arguments: call.arguments,
                };
                agent.execute(&[call]).await?;
            }
        }
    }
    agent.log.sync()
}
