//! `paddock run` (M2, L1, P1): a session is a directory under the data dir holding
//! `events.jsonl`; `run` starts one (`start_session`, shared with `chat`), `resume` recovers and
//! continues one (`resume.rs`), `log` shows one (`resume.rs`).

use std::path::PathBuf;

use clap::Args;

use super::json_events::{self, JsonMode, JsonObserver};
use super::session_view::Printer;
use super::tool::{Loaded, cancel_on_ctrl_c, load_preset, setup_error};
use super::{Env, Exit};
use crate::agent::scripted::ScriptedProvider;
use crate::agent::{Agent, DEFAULT_SYSTEM, Observer, TurnEnd};
use crate::hooks::{Approver, TerminalApprover};
use crate::log::{
    Body, InstructionRecord, LOG_FILE, LogWriter, PluginHash, SessionLock, SessionLog,
    SessionStart, Tap, Wait,
};
use crate::model::{ProviderConfig, ProviderKind, ToolDef, connect};
use crate::preset;

/// The task the demo works on when none is given.
const DEMO_TASK: &str = "Show me around this project, and show what the sandbox refuses.";

#[derive(Args)]
pub struct RunArgs {
    /// What the agent should do; `-` reads it from standard input. Optional with --demo.
    task: Option<String>,
    /// Print one JSON object per line on standard output for every event, then a `result`
    /// line with the stop reason and totals (docs/json-events.md); `--json=deltas` adds the
    /// streamed message text.
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "events")]
    json: Option<JsonMode>,
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
    /// Wire format for --base-url: openai (the default) or anthropic.
    #[arg(long)]
    provider: Option<String>,
    /// Override the preset's limits.max_turns (model requests per session).
    #[arg(long)]
    pub(super) max_turns: Option<u64>,
    /// Output limit per model response, instead of [model] max_output_tokens (default 8192).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_output_tokens: Option<u32>,
}

impl SessionArgs {
    /// The model flags, as a move of a reopened session (`chat --resume`).
    pub(super) fn move_args(&self) -> super::reopen::MoveArgs {
        super::reopen::MoveArgs {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            provider: self.provider.clone(),
        }
    }
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
    /// Held while the session runs: it has one writer (L6).
    pub _lock: SessionLock,
}

/// Loads the preset, chooses the model, and writes `session/start` (synced).
pub(super) async fn start_session(
    args: &SessionArgs,
    approver: Box<dyn Approver>,
    tap: Option<Tap>,
) -> Result<Started, Exit> {
    let env = Env::open().map_err(|e| fail(&format!("{e:#}")))?;
    let project = project_config_trusted(&env, &args.preset);
    let found = preset::find_written(&args.preset, &env.cwd, project.presets)
        .map_err(|e| fail(&e.to_string()))?;
    let file = found.source.parse().map_err(|e| fail(&e.to_string()))?;
    let base = preset::system_prompt(&file, &found.source.text, &env.cwd)
        .map_err(|e| fail(&e.to_string()))?
        .unwrap_or_else(|| DEFAULT_SYSTEM.to_string());
    let instructions = if project.instructions {
        let (files, notices) = preset::read_instructions(&env.cwd);
        for notice in notices {
            super::trust::notice(&notice);
        }
        files
    } else {
        Vec::new()
    };
    let model_config = choose_model(args, file.model.clone()).map_err(|m| fail(&m))?;
    let session = new_session_id();
    let cwd = env.cwd.clone();
    let path = env.store.session_dir(&session).join(LOG_FILE);
    // The same verdict as `preset check`: a preset it refuses never starts (P1).
    let loaded = load_preset(env, &found, &args.preset, &[], &session, approver)
        .await
        .map_err(|(code, message)| setup_error(false, &code, &message))?;
    loaded.start_compiling();
    let provider: Box<dyn crate::model::Provider> = match &model_config {
        None => Box::new(ScriptedProvider::demo()),
        Some(config) => connect(config.clone()).map_err(|e| fail(&e.to_string()))?,
    };
    let start = SessionStart {
        session,
        preset: loaded.preset.clone(),
        preset_origin: found.source.location.clone(),
        preset_sha256: Some(found.source.sha256()),
        preset_from: Some(found.source.origin),
        preset_text: found.source.text,
        cwd: cwd.display().to_string(),
        plugins: plugin_hashes(&loaded),
        model: model_config
            .as_ref()
            .map_or("scripted-demo".to_string(), |c| c.model.clone()),
        model_config,
        system: preset::with_instructions(&base, &instructions),
        instructions: instructions
            .iter()
            .map(|f| InstructionRecord {
                file: f.name.clone(),
                sha256: f.sha256.clone(),
                bytes: f.text.len() as u64,
            })
            .collect(),
    };
    let (lock, log) = begin_log_with(&path, &start, tap)?;
    Ok(Started {
        loaded,
        provider,
        log,
        start,
        path,
        _lock: lock,
    })
}

/// Takes the new session's lock (L6) and writes its `session/start`, synced.
pub(super) fn begin_log(
    path: &std::path::Path,
    start: &SessionStart,
) -> Result<(SessionLock, SessionLog), Exit> {
    begin_log_with(path, start, None)
}

/// `begin_log`, with every event shown to `tap` as it is written (`run --json`).
fn begin_log_with(
    path: &std::path::Path,
    start: &SessionStart,
    tap: Option<Tap>,
) -> Result<(SessionLock, SessionLog), Exit> {
    let dir = path.parent().unwrap_or(path);
    let lock = SessionLock::acquire(dir, Wait::No).map_err(|e| fail(&e.to_string()))?;
    let log = LogWriter::start(path, Body::SessionStart(Box::new(start.clone())))
        .map(|(writer, event)| {
            let log = SessionLog::new(writer, vec![event.clone()]);
            match tap {
                Some(tap) => {
                    tap(&event);
                    log.with_tap(tap)
                }
                None => log,
            }
        })
        .map_err(|e| {
            fail(&format!(
                "cannot create the session log {}: {e}",
                path.display()
            ))
        })?;
    Ok((lock, log))
}

/// Which parts of the working directory's project configuration this session may use (T1).
struct ProjectUse {
    presets: bool,
    instructions: bool,
}

/// Asks (or gives the one-line notice) at most once: when the preset is looked up by name, or
/// when the project has instruction files. A preset given as a path never needs the project's
/// presets.
fn project_config_trusted(env: &Env, preset: &str) -> ProjectUse {
    let by_name = !(preset.contains('/') || preset.ends_with(".toml"));
    let has_instructions = !preset::instruction_paths(&env.cwd).is_empty();
    if !by_name && !has_instructions {
        return ProjectUse {
            presets: false,
            instructions: false,
        };
    }
    let trusted = super::trust::project_trusted(env);
    ProjectUse {
        presets: trusted && by_name,
        instructions: trusted,
    }
}

/// `paddock run`.
pub async fn run(args: RunArgs) -> Exit {
    let task = match (&args.task, args.session.demo) {
        (Some(dash), _) if dash == "-" => match read_task_from_stdin() {
            Ok(task) => task,
            Err(message) => return fail(&message),
        },
        (Some(task), _) => task.clone(),
        (None, true) => DEMO_TASK.to_string(),
        (None, false) => {
            return fail(
                "give a task, e.g. paddock run \"explain src/main.rs\", or run the scripted demo with --demo",
            );
        }
    };
    let tap = args.json.map(|_| json_events::tap());
    let approver = Box::new(TerminalApprover::new());
    let started = match start_session(&args.session, approver, tap).await {
        Ok(started) => started,
        Err(exit) => return exit,
    };
    if args.json.is_some() {
        for warning in &started.loaded.warnings {
            json_events::preset_warning(warning);
        }
    }
    let printer = Printer::new();
    let json = args.json.map(|mode| JsonObserver { mode });
    let observer: &dyn Observer = match &json {
        Some(json) => json,
        None => {
            printer.header(&started.start, &started.path);
            printer.user(&task);
            &printer
        }
    };
    cancel_on_ctrl_c(&started.loaded.cancel);
    let agent = agent(&started, observer, args.session.max_turns);
    let end = agent.send(&task).await;
    let exit = exit_of(&end);
    match json {
        Some(_) => json_events::result(&started.start.session, &end, exit as i32),
        None => printer.footer(&started.start.session),
    }
    exit
}

/// `paddock run -`: the task is all of standard input.
fn read_task_from_stdin() -> Result<String, String> {
    let mut task = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut task)
        .map_err(|e| format!("cannot read the task from standard input: {e}"))?;
    let task = task.trim().to_string();
    if task.is_empty() {
        return Err("`paddock run -` read an empty task from standard input; pipe the task in, e.g. echo \"explain src/main.rs\" | paddock run -".into());
    }
    Ok(task)
}

pub(super) fn agent<'a>(
    started: &'a Started,
    observer: &'a dyn Observer,
    max_turns: Option<u64>,
) -> Agent<'a> {
    let loaded = &started.loaded;
    let mut budgets = loaded.resolved.limits.clone();
    if let Some(n) = max_turns {
        budgets.max_turns = n;
    }
    Agent {
        provider: started.provider.as_ref(),
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
        system: started.start.system.clone(),
        budgets,
        log: &started.log,
        inbox: None,
        observer,
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
    let mut config = match model_from(args, from_preset)? {
        Some(config) => config,
        None => {
            return Err(format!(
                "the preset `{}` has no [model]. Use --demo for the scripted demo, --base-url URL (with PADDOCK_API_KEY if the server needs a key) for a real model, or a preset with a [model] section such as --preset coding (docs/providers.md)",
                args.preset
            ));
        }
    };
    if let Some(limit) = args.max_output_tokens {
        config.max_output_tokens = Some(limit);
    }
    Ok(Some(config))
}

/// --base-url, else the preset's [model] (with --model applied); `None` if neither.
fn model_from(
    args: &SessionArgs,
    from_preset: Option<ProviderConfig>,
) -> Result<Option<ProviderConfig>, String> {
    if let Some(url) = &args.base_url {
        let kind = match args.provider.as_deref().unwrap_or("openai") {
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
    Ok(from_preset.map(|mut config| {
        if let Some(model) = &args.model {
            config.model = model.clone();
        }
        config
    }))
}

pub(super) fn plugin_hashes(loaded: &Loaded) -> Vec<PluginHash> {
    let tools = loaded.registry.plugins().iter().map(|p| PluginHash {
        name: p.name.clone(),
        sha256: p.sha256.clone(),
    });
    let hooks = loaded
        .chain
        .hashes()
        .into_iter()
        .map(|(name, sha256)| PluginHash { name, sha256 });
    tools.chain(hooks).collect()
}

pub(super) fn exit_of(end: &TurnEnd) -> Exit {
    Exit::of_stop(end.reason)
}

/// A sortable, unique-enough id: seconds since the epoch and a few bits of the clock's
/// nanoseconds and the process id.
pub(super) fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{:04x}",
        now.as_secs(),
        (now.subsec_nanos() ^ std::process::id()) & 0xffff
    )
}
