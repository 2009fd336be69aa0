//! `paddock run`, `paddock resume` and `paddock log` (M2, L1, L2, L5): a session is a
//! directory under the data dir holding `events.jsonl`; `run` starts one, `resume` recovers
//! and continues one, `log` shows one.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::session_view::{Printer, print_log};
use super::tool::{Loaded, cancel_on_ctrl_c, load_preset, setup_error};
use super::{Env, Exit};
use crate::agent::scripted::ScriptedProvider;
use crate::agent::{Agent, DEFAULT_SYSTEM, TurnEnd};
use crate::exec::RawCall;
use crate::hooks::{Approver, TerminalApprover};
use crate::log::{
    Body, Event, LOG_FILE, LogWriter, PluginHash, SessionLog, SessionStart, StopReason, read_log,
    recover,
};
use crate::model::{ProviderConfig, ProviderKind, ToolDef, connect};
use crate::preset;

/// The task the demo works on when none is given.
const DEMO_TASK: &str = "Show me around this project, and show what the sandbox refuses.";

#[derive(Args)]
pub struct RunArgs {
    /// What the agent should do. Optional with --demo.
    task: Option<String>,
    #[command(flatten)]
    session: SessionArgs,
}

/// How a new session is set up: preset and model (shared by `run` and `chat`).
#[derive(Args)]
pub struct SessionArgs {
    /// Preset name or path to a .toml file (see `paddock preset list`).
    #[arg(long, default_value = "default")]
    preset: String,
    /// Run the scripted demo model: no network, no API key; everything else is real.
    #[arg(long)]
    demo: bool,
    /// An OpenAI-compatible (or, with --provider anthropic, Anthropic) server, instead of the
    /// preset's [model]. The API key, if the server needs one, is read from PADDOCK_API_KEY.
    #[arg(long, env = "PADDOCK_BASE_URL")]
    base_url: Option<String>,
    /// The model name to request (with --base-url; default: the preset's, else "default").
    #[arg(long, env = "PADDOCK_MODEL")]
    model: Option<String>,
    /// Wire format for --base-url: openai or anthropic.
    #[arg(long, default_value = "openai")]
    provider: String,
    /// Override the preset's limits.max_turns (model requests per session).
    #[arg(long)]
    pub(super) max_turns: Option<u64>,
}

#[derive(Args)]
pub struct ResumeArgs {
    /// The session id (`paddock log --list` shows them).
    session: String,
    /// A new message; without one, an interrupted or budget-stopped turn continues.
    message: Option<String>,
    /// Override the preset's limits.max_turns (model requests per session).
    #[arg(long)]
    max_turns: Option<u64>,
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

pub(super) fn fail(message: &str) -> Exit {
    setup_error(false, "USAGE_ERROR", message)
}

/// A new session, ready to run: its preset loaded, its model connected, its log started.
pub(super) struct Started {
    pub loaded: Loaded,
    pub provider: Box<dyn crate::model::Provider>,
    pub log: SessionLog,
    pub start: SessionStart,
    pub path: PathBuf,
}

/// Loads the preset, chooses the model, and writes `session/start` (synced).
pub(super) async fn start_session(
    args: &SessionArgs,
    approver: Box<dyn Approver>,
) -> Result<Started, Exit> {
    let env = Env::open().map_err(|e| fail(&format!("{e:#}")))?;
    let (origin, text) =
        preset::source_in(&args.preset, &env.cwd).map_err(|e| fail(&e.to_string()))?;
    let file = preset::parse(&origin, &text).map_err(|e| fail(&e.to_string()))?;
    let model_config = choose_model(args, file.model.clone()).map_err(|m| fail(&m))?;
    let session = new_session_id();
    let cwd = env.cwd.clone();
    let path = env.store.session_dir(&session).join(LOG_FILE);
    let loaded = load_preset(env, file, &args.preset, &[], &session, approver)
        .await
        .map_err(|(code, message)| setup_error(false, &code, &message))?;
    let provider: Box<dyn crate::model::Provider> = match &model_config {
        None => Box::new(ScriptedProvider::demo()),
        Some(config) => connect(config.clone()).map_err(|e| fail(&e.to_string()))?,
    };
    let start = SessionStart {
        session,
        preset: loaded.preset.clone(),
        preset_origin: origin,
        preset_text: text,
        cwd: cwd.display().to_string(),
        plugins: plugin_hashes(&loaded),
        model: model_config
            .as_ref()
            .map_or("scripted-demo".to_string(), |c| c.model.clone()),
        model_config,
        system: DEFAULT_SYSTEM.to_string(),
    };
    let log = LogWriter::create(&path)
        .and_then(|mut writer| {
            let event = writer.append(Body::SessionStart(Box::new(start.clone())))?;
            writer.sync()?;
            Ok(SessionLog::new(writer, vec![event]))
        })
        .map_err(|e| {
            fail(&format!(
                "cannot create the session log {}: {e}",
                path.display()
            ))
        })?;
    Ok(Started {
        loaded,
        provider,
        log,
        start,
        path,
    })
}

/// `paddock run`.
pub async fn run(args: RunArgs) -> Exit {
    let task = match (&args.task, args.session.demo) {
        (Some(task), _) => task.clone(),
        (None, true) => DEMO_TASK.to_string(),
        (None, false) => {
            return fail(
                "give a task, e.g. paddock run \"explain src/main.rs\", or run the scripted demo with --demo",
            );
        }
    };
    let started = match start_session(&args.session, Box::new(TerminalApprover::new())).await {
        Ok(started) => started,
        Err(exit) => return exit,
    };
    let printer = Printer::new();
    printer.header(&started.start, &started.path);
    printer.user(&task);
    cancel_on_ctrl_c(&started.loaded.cancel);
    let agent = agent(
        &started.loaded,
        started.provider.as_ref(),
        &started.log,
        &printer,
        args.session.max_turns,
    );
    let end = agent.send(&task).await;
    printer.footer(&started.start.session);
    exit_of(&end)
}

/// `paddock resume`: recover the log (L2), then continue (L5).
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
    let read = match read_log(&path) {
        Ok(read) => read,
        Err(e) => return fail(&e.to_string()),
    };
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
        Some(config) => match connect(config.clone()) {
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
    let last_turn = last_stop(&read.events);
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

/// Appends what recovery owes: synthesized results, re-run idempotent calls, then the end of
/// the open turn.
async fn repair(
    agent: &Agent<'_>,
    printer: &Printer,
    recovery: crate::log::Recovery,
) -> std::io::Result<()> {
    let (ends, results): (Vec<Body>, Vec<Body>) = recovery
        .append
        .into_iter()
        .partition(|b| matches!(b, Body::TurnEnd { .. }));
    for body in results {
        if let Body::ToolResult { id, code, .. } = &body {
            printer.notice(&format!(
                "call {id}: {} (recorded on resume)",
                code.as_deref().unwrap_or("")
            ));
        }
        agent.log.append(body)?;
    }
    if !recovery.rerun.is_empty() {
        let calls: Vec<RawCall> = recovery
            .rerun
            .iter()
            .map(|c| RawCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        printer.notice(&format!(
            "running again {} idempotent call(s) whose results were lost",
            calls.len()
        ));
        for record in agent.execute(&calls).await {
            agent.record(&crate::agent::summarize(&record), Some(&record))?;
        }
    }
    for body in ends {
        agent.log.append(body)?;
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
                task.unwrap_or_default()
                    .chars()
                    .take(70)
                    .collect::<String>()
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
                print!("{text}");
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

pub(super) fn agent<'a>(
    loaded: &'a Loaded,
    provider: &'a dyn crate::model::Provider,
    log: &'a SessionLog,
    printer: &'a Printer,
    max_turns: Option<u64>,
) -> Agent<'a> {
    let mut budgets = loaded.resolved.limits.clone();
    if let Some(n) = max_turns {
        budgets.max_turns = n;
    }
    Agent {
        provider,
        calls: loaded.context(),
        max_parallel: usize::try_from(loaded.max_parallel).unwrap_or(usize::MAX),
        tools: loaded
            .registry
            .tools()
            .map(|t| ToolDef {
                name: t.spec.name.clone(),
                description: t.spec.description.clone(),
                parameters: t.spec.parameters.clone(),
            })
            .collect(),
        system: DEFAULT_SYSTEM.to_string(),
        budgets,
        log,
        inbox: None,
        observer: printer,
        started: Instant::now(),
    }
}

/// The model: the demo (`None`), --base-url, or the preset's [model].
fn choose_model(
    args: &SessionArgs,
    from_preset: Option<ProviderConfig>,
) -> Result<Option<ProviderConfig>, String> {
    if args.demo {
        return Ok(None);
    }
    if let Some(url) = &args.base_url {
        let kind = match args.provider.as_str() {
            "openai" => ProviderKind::Openai,
            "anthropic" => ProviderKind::Anthropic,
            other => {
                return Err(format!(
                    "--provider {other}: use openai (also for vLLM, llama.cpp, Ollama) or anthropic"
                ));
            }
        };
        let model = args
            .model
            .clone()
            .or_else(|| from_preset.as_ref().map(|c| c.model.clone()))
            .unwrap_or_else(|| "default".into());
        let mut config = ProviderConfig::new(kind, &model, Some(url));
        if std::env::var_os("PADDOCK_API_KEY").is_some() {
            config.api_key_env = Some("PADDOCK_API_KEY".into());
        }
        return Ok(Some(config));
    }
    match from_preset {
        Some(mut config) => {
            if let Some(model) = &args.model {
                config.model = model.clone();
            }
            Ok(Some(config))
        }
        None => Err(format!(
            "the preset `{}` has no [model]. Use --demo for the scripted demo, --base-url URL (with PADDOCK_API_KEY if the server needs a key) for a real model, or a preset with a [model] section such as --preset coding (docs/providers.md)",
            args.preset
        )),
    }
}

fn plugin_hashes(loaded: &Loaded) -> Vec<PluginHash> {
    loaded
        .registry
        .plugins()
        .iter()
        .map(|p| PluginHash {
            name: p.name.clone(),
            sha256: p.sha256.clone(),
        })
        .collect()
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

pub(super) fn exit_of(end: &TurnEnd) -> Exit {
    match end.reason {
        StopReason::Completed => Exit::Ok,
        _ => Exit::Failed,
    }
}

/// A sortable, unique-enough id: seconds since the epoch and a few bits of the clock's
/// nanoseconds and the process id.
fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{:04x}",
        now.as_secs(),
        (now.subsec_nanos() ^ std::process::id()) & 0xffff
    )
}
