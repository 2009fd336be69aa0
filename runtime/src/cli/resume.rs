//! `paddock resume` (L2, L5, M2): recover a session from its log (drop a torn tail, settle
//! what a crash left open, refuse changed plugins) and continue it. The log is streamed: a
//! long session is resumed holding what the model will be sent, not every event (issue 13).

use std::path::PathBuf;

use clap::Args;

use super::run::{agent, exit_of, fail, plugin_hashes};
use super::session_view::Printer;
use super::tool::{cancel_on_ctrl_c, load_preset, setup_error};
use super::{Env, Exit};
use crate::agent::Agent;
use crate::agent::NO_TASK;
use crate::agent::scripted::ScriptedProvider;
use crate::exec::RawCall;
use crate::hooks::TerminalApprover;
use crate::log::{
    Body, LOG_FILE, LogWriter, PluginHash, SessionLock, SessionLog, Settle, StopReason, Wait,
    recover_tail, stream_log,
};
use crate::model::connect;
use crate::preset;

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
}

/// `paddock resume`: take the session (L6), recover the log (L2, L8), then continue (L5).
pub async fn resume(args: ResumeArgs) -> Exit {
    let env = match Env::open() {
        Ok(env) => env,
        Err(e) => return fail(&format!("{e:#}")),
    };
    let path = env.store.session_dir(&args.session).join(LOG_FILE);
    if !path.is_file() {
        return fail(&format!(
            "no session `{}` (looked for {}); `paddock log --list` shows the sessions",
            args.session,
            path.display()
        ));
    }
    // One writer: the lock is taken before the log is read, so no other process can append
    // between what recovery reads and what it writes.
    let wait = if args.wait { Wait::Yes } else { Wait::No };
    let dir = path.parent().unwrap_or(&path).to_path_buf();
    let _lock = match tokio::task::spawn_blocking(move || SessionLock::acquire(&dir, wait)).await {
        Ok(Ok(lock)) => lock,
        Ok(Err(e)) => return fail(&e.to_string()),
        Err(e) => return fail(&format!("waiting for the session lock failed: {e}")),
    };
    // Streamed: the state the loop needs and the events recovery needs, not every event.
    let read = match stream_log(&path) {
        Ok(read) => read,
        Err(e) => return fail(&e.to_string()),
    };
    if args.message.is_none() && !read.state.has_task {
        return fail(&format!(
            "{NO_TASK}: paddock resume {} \"...\"",
            args.session
        ));
    }
    let start = read.start.clone();
    let file = match preset::parse(&start.preset_origin, &start.preset_text) {
        Ok(file) => file,
        Err(e) => {
            return fail(&format!(
                "the session's recorded preset no longer parses: {e}"
            ));
        }
    };
    let mut env = env;
    env.cwd = PathBuf::from(&start.cwd);
    let approver = Box::new(TerminalApprover::new());
    let loaded = match load_preset(env, file, &start.preset, &[], &start.session, approver).await {
        Ok(loaded) => loaded,
        Err((code, message)) => return setup_error(false, &code, &message),
    };
    if let Err(message) = same_plugins(&start.plugins, &plugin_hashes(&loaded)) {
        return fail(&message);
    }
    let provider: Box<dyn crate::model::Provider> = match &start.model_config {
        None => {
            let demo = ScriptedProvider::demo();
            let tally = &read.state.tally;
            demo.skip((tally.model_requests - tally.compactions) as usize);
            Box::new(demo)
        }
        Some(config) => match connect(with_limit(config, args.max_output_tokens)) {
            Ok(provider) => provider,
            Err(e) => return fail(&e.to_string()),
        },
    };
    let printer = Printer::new();
    if let Some(torn) = &read.torn {
        printer.notice(&format!(
            "dropped a torn last line ({} bytes) left by a crash",
            torn.len()
        ));
    }
    let writer = match LogWriter::reopen_streamed(&path, &read) {
        Ok(writer) => writer,
        Err(e) => return fail(&format!("cannot reopen {}: {e}", path.display())),
    };
    let recovery = recover_tail(&read.tail, read.tail_opens_in_turn);
    // How the last turn ended, counting the end recovery is about to write.
    let last_turn = recovery
        .steps
        .iter()
        .rev()
        .find_map(|step| match step {
            Settle::Append(Body::TurnEnd { reason, .. }) => Some(*reason),
            _ => None,
        })
        .or(read.state.last_stop);
    let log = SessionLog::from_state(writer, read.state);
    printer.header(&start, &path);
    cancel_on_ctrl_c(&loaded.cancel);
    let agent = agent(&loaded, provider.as_ref(), &log, &printer, args.max_turns);
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
                start.session
            ));
            return Exit::Ok;
        }
        (None, _) => agent.run_turns().await,
    };
    printer.footer(&start.session);
    exit_of(&end)
}

/// The recorded model configuration, with --max-output-tokens applied.
fn with_limit(
    config: &crate::model::ProviderConfig,
    limit: Option<u32>,
) -> crate::model::ProviderConfig {
    let mut config = config.clone();
    if let Some(limit) = limit {
        config.max_output_tokens = Some(limit);
    }
    config
}

/// Settles what recovery found, in the calls' order: synthesized results are appended,
/// idempotent calls are run again one at a time (each result logged as it ends), and the
/// open turn is ended last.
async fn repair(
    agent: &Agent<'_>,
    printer: &Printer,
    recovery: crate::log::Recovery,
) -> std::io::Result<()> {
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

/// Resume runs the plugins the session ran with, or refuses (P1).
fn same_plugins(then: &[PluginHash], now: &[PluginHash]) -> Result<(), String> {
    for old in then {
        match now.iter().find(|p| p.name == old.name) {
            Some(new) if new.sha256 != old.sha256 => {
                return Err(format!(
                    "plugin `{}` changed since the session started (sha256 {} then, {} now); resuming would run different code. Start a new session",
                    old.name, old.sha256, new.sha256
                ));
            }
            None => {
                return Err(format!(
                    "plugin `{}` (sha256 {}) that the session ran with is no longer available; reinstall it or start a new session",
                    old.name, old.sha256
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
