//! `paddock resume` and `paddock log` (L2, L5, M2): recover a session from its log (drop a
//! torn tail, settle what a crash left open, refuse changed plugins) and continue it; show or
//! list sessions.

use std::path::PathBuf;

use clap::Args;

use super::run::{agent, exit_of, fail, plugin_hashes};
use super::session_view::{Printer, print_log};
use super::tool::{cancel_on_ctrl_c, load_preset, setup_error};
use super::{Env, Exit};
use crate::agent::Agent;
use crate::agent::NO_TASK;
use crate::agent::scripted::ScriptedProvider;
use crate::exec::RawCall;
use crate::hooks::TerminalApprover;
use crate::log::{
    Body, Event, LOG_FILE, LogWriter, PluginHash, SessionLock, SessionLog, Settle, StopReason,
    Wait, has_task, read_log, recover,
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

#[derive(Args)]
pub struct LogArgs {
    /// The session id; omit it with --list.
    session: Option<String>,
    /// Print the events as they are stored (JSON lines).
    #[arg(long)]
    json: bool,
    /// List the sessions, newest last.
    #[arg(long)]
    list: bool,
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
    let read = match read_log(&path) {
        Ok(read) => read,
        Err(e) => return fail(&e.to_string()),
    };
    if args.message.is_none() && !has_task(&read.events) {
        return fail(&format!(
            "{NO_TASK}: paddock resume {} \"...\"",
            args.session
        ));
    }
    let Some(Body::SessionStart(start)) = read.events.first().map(|e| e.body.clone()) else {
        return fail("the log does not start with session/start");
    };
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
            demo.skip(count(&read.events, |b| {
                matches!(b, Body::AssistantMessage { .. })
            }));
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
    let writer = match LogWriter::reopen(&path, &read) {
        Ok(writer) => writer,
        Err(e) => return fail(&format!("cannot reopen {}: {e}", path.display())),
    };
    let recovery = recover(&read.events);
    // How the last turn ended, counting the end recovery is about to write.
    let last_turn = recovery
        .steps
        .iter()
        .rev()
        .find_map(|step| match step {
            Settle::Append(Body::TurnEnd { reason, .. }) => Some(*reason),
            _ => None,
        })
        .or_else(|| last_stop(&read.events));
    let log = SessionLog::new(writer, read.events);
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

/// `paddock log`.
pub async fn log(args: LogArgs) -> Exit {
    let env = match Env::open() {
        Ok(env) => env,
        Err(e) => return fail(&format!("{e:#}")),
    };
    let sessions = env.store.root().join("sessions");
    if args.list {
        let mut found = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&sessions) {
            for entry in entries.flatten() {
                let path = entry.path().join(LOG_FILE);
                if let Ok(read) = read_log(&path) {
                    found.push((entry.file_name().to_string_lossy().into_owned(), read));
                }
            }
        }
        found.sort_by_key(|(_, read)| read.events.first().map_or(0, |e| e.ts_ms));
        for (id, read) in found {
            let stop = last_stop(&read.events).map_or("open", |r| r.as_str());
            let task = read.events.iter().find_map(|e| match &e.body {
                Body::UserMessage { text, .. } => Some(text.clone()),
                _ => None,
            });
            println!(
                "{id}  {stop:<17}  {}",
                super::style::sanitize(
                    &task
                        .unwrap_or_default()
                        .chars()
                        .take(70)
                        .collect::<String>()
                )
            );
        }
        return Exit::Ok;
    }
    let Some(session) = args.session else {
        return fail("give a session id, or --list to see them");
    };
    let path = sessions.join(&session).join(LOG_FILE);
    if args.json {
        return match std::fs::read_to_string(&path) {
            Ok(text) => {
                print!("{}", super::style::json_for_terminal(&text));
                Exit::Ok
            }
            Err(e) => fail(&format!("cannot read {}: {e}", path.display())),
        };
    }
    match read_log(&path) {
        Ok(read) => {
            print_log(&read.events);
            if read.torn.is_some() {
                println!("(the last line is torn; `paddock resume {session}` drops it)");
            }
            Exit::Ok
        }
        Err(e) => fail(&e.to_string()),
    }
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

fn count(events: &[Event], pick: impl Fn(&Body) -> bool) -> usize {
    events.iter().filter(|e| pick(&e.body)).count()
}

fn last_stop(events: &[Event]) -> Option<StopReason> {
    events.iter().rev().find_map(|e| match &e.body {
        Body::TurnEnd { reason, .. } => Some(*reason),
        Body::TurnStart { .. } => Some(StopReason::Interrupted),
        _ => None,
    })
}
