//! `paddock tool list`, `paddock tool call` and `paddock tool batch`, through the preset's
//! tool selection, aliases, hooks and approval (P1, H1, H2, C2, X1).

use clap::{Args, Subcommand};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::report::{CommandResult, Failure, Form, print_finding};
use super::signals::cancel_on_ctrl_c;
use super::style::{self, BOLD, DIM, json_for_terminal, paint, sanitize};
use super::trust::TerminalTrust;
use super::{Env, Exit};
use crate::approver::TerminalApprover;
use paddock::pipeline::{RawCall, parse_batch, records_json};
use paddock::preset;
use paddock::session::{LoadFor, Loaded, Session, load_preset};

#[derive(Subcommand)]
pub enum ToolCommand {
    /// List the tools the preset loads.
    List {
        #[command(flatten)]
        preset: PresetArg,
        /// Print JSON: one object per tool, with its schema and metadata.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool with JSON arguments, e.g. `paddock tool call read_file '{"path":"README.md"}'`.
    Call {
        /// Tool name.
        name: String,
        /// Arguments as a JSON object.
        #[arg(default_value = "{}")]
        args: String,
        /// Mount HOST at GUEST (mode rw unless `:ro`), replacing the preset's mounts. Without
        /// it, the preset decides; the default preset mounts the current directory read-only
        /// at /workspace, where relative paths resolve (use `--preset coding` to write).
        #[arg(long = "mount", value_name = "HOST:GUEST[:ro|rw]")]
        mounts: Vec<String>,
        #[command(flatten)]
        preset: PresetArg,
        /// Print exactly one JSON object: {"ok":true,"content",...} or {"ok":false,"error":{...}}.
        #[arg(long)]
        json: bool,
    },
    /// Run a batch of raw model calls through the whole pipeline (repair, validation,
    /// scheduler) and print one JSON result per call id, in order. FILE holds
    /// `[{"id": "1", "name": "read_file", "arguments": "{\"path\": \"README.md\"}"}]`.
    Batch {
        /// The batch file; `-` or nothing reads standard input.
        file: Option<std::path::PathBuf>,
        /// At most this many concurrency-safe calls run at once; default: the preset's
        /// `limits.max_parallel_tool_calls`.
        #[arg(long = "max-parallel", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_parallel: Option<u64>,
        /// Mount HOST at GUEST (mode rw unless `:ro`), replacing the preset's mounts.
        #[arg(long = "mount", value_name = "HOST:GUEST[:ro|rw]")]
        mounts: Vec<String>,
        #[command(flatten)]
        preset: PresetArg,
    },
}

#[derive(Args)]
pub struct PresetArg {
    /// Preset name (found in ./.paddock/presets once you trust the directory, then
    /// $XDG_CONFIG_HOME/paddock/presets, then the shipped default, coding, review, untrusted)
    /// or path to a .toml file.
    #[arg(long, default_value = "default")]
    preset: String,
}

impl ToolCommand {
    /// `tool batch`, and `tool call` and `tool list` with `--json`, answer failures in JSON.
    pub(super) fn failure_form(&self) -> Form {
        match self {
            ToolCommand::List { json: true, .. }
            | ToolCommand::Call { json: true, .. }
            | ToolCommand::Batch { .. } => Form::Object,
            _ => Form::Text,
        }
    }
}

pub async fn run(cmd: ToolCommand) -> CommandResult {
    match cmd {
        ToolCommand::List { preset, json } => list(&preset.preset, json).await,
        ToolCommand::Call {
            name,
            args,
            mounts,
            preset,
            json,
        } => call(&name, &args, &mounts, &preset.preset, json).await,
        ToolCommand::Batch {
            file,
            max_parallel,
            mounts,
            preset,
        } => batch(file.as_deref(), max_parallel, &mounts, &preset.preset).await,
    }
}

/// Loads `preset_name` to list its tools, its warnings printed once.
async fn load(preset_name: &str) -> Result<Loaded, Failure> {
    let env = Env::open().map_err(|e| Failure::host(format!("{e:#}")))?;
    let project = super::trust::project_trusted_for(&env, preset_name);
    let found = preset::find_written(preset_name, &env.cwd, project).map_err(Failure::usage)?;
    let approver = Box::new(TerminalApprover::new());
    // Nothing runs, so nothing spills: no session directory is made.
    let loaded = load_preset(env, &found, preset_name, &[], LoadFor::Listing, approver).await?;
    if let Some(note) = &loaded.lock_ignored {
        super::trust::notice(note);
    }
    for warning in &loaded.warnings {
        print_finding(warning);
    }
    Ok(loaded)
}

async fn list(preset_name: &str, json: bool) -> CommandResult {
    let loaded = load(preset_name).await?;
    if json {
        let tools: Vec<_> = loaded
            .registry
            .tools()
            .map(|t| {
                let mut value = serde_json::to_value(&t.spec).unwrap_or_default();
                value["plugin"] = json!(t.owner());
                value
            })
            .collect();
        let text = serde_json::to_string_pretty(&tools).unwrap_or_default();
        println!("{}", json_for_terminal(&text));
        return Ok(Exit::Ok);
    }
    let color = style::color_enabled_stdout();
    for t in loaded.registry.tools() {
        let meta = &t.spec.meta;
        let mut flags = vec![format!("risk {:?}", meta.effective_risk()).to_lowercase()];
        if meta.is_read_only() {
            flags.push("read-only".into());
        }
        if meta.is_concurrency_safe() {
            flags.push("parallel".into());
        }
        let summary = t.spec.description.lines().next().unwrap_or("");
        println!(
            "{}  {}  {}",
            paint(color, BOLD, &format!("{:<12}", sanitize(&t.spec.name))),
            paint(
                color,
                DIM,
                &format!("[{}: {}]", sanitize(&t.owner()), flags.join(", "))
            ),
            sanitize(summary)
        );
    }
    Ok(Exit::Ok)
}

/// Starts a session whose calls come from this command (logged like a model's: `paddock log`
/// shows them), its preset's warnings printed once.
async fn client_session(preset_name: &str, mounts: &[String]) -> Result<Session, Failure> {
    let env = Env::open().map_err(|e| Failure::host(format!("{e:#}")))?;
    let session = Session::builder(env)
        .preset(preset_name)
        .trust(Box::new(TerminalTrust { may_ask: true }))
        .approver(Box::new(TerminalApprover::new()))
        .mounts(mounts.to_vec())
        .client("tool-call")
        .start()
        .await?;
    for warning in session.warnings() {
        print_finding(warning);
    }
    Ok(session)
}

async fn call(
    name: &str,
    args: &str,
    mounts: &[String],
    preset_name: &str,
    json: bool,
) -> CommandResult {
    let session = client_session(preset_name, mounts).await?;
    let cancel = CancellationToken::new();
    cancel_on_ctrl_c(&cancel);
    let call = RawCall {
        id: "call-1".into(),
        name: name.to_string(),
        arguments: args.to_string(),
    };
    let mut record = session
        .call(call, cancel)
        .await
        .map_err(|e| log_failed(&session, &e))?;
    if let Err(error) = &mut record.result
        && error.code == paddock_types::contract::ErrorCode::UnknownTool
        && let Some(message) = where_the_tool_is(&session, name)
    {
        // The model is never told about tools its preset hides; the person at the terminal is.
        error.message = message;
    }
    Ok(super::tool_print::print_result(
        &record.result,
        &record.context,
        json,
    ))
}

/// For a person who called `name` by hand and got "unknown tool": the plugin that has it, and
/// how to get it into the session, when the preset hides it (its `[tools]` lists) or does not
/// load the installed plugin that provides it.
fn where_the_tool_is(session: &Session, name: &str) -> Option<String> {
    let preset = session.preset_name();
    if let Some(plugin) = session.left_out(name) {
        let built_in = paddock_sandbox::builtin::builtin_names().contains(&plugin);
        return Some(format!(
            "`{name}` is a tool of plugin `{plugin}`, which preset `{preset}` loads but leaves \
             out (its `[tools]` enable and disable lists); list `{name}` in the preset's \
             `tools.enable` (a preset that extends another keeps the base's list whole unless \
             it writes its own){}",
            match built_in {
                true => ", or use a preset that keeps it, e.g. `--preset coding`",
                false => "",
            }
        ));
    }
    let env = Env::open().ok()?;
    let installed = env.store.list().ok()?;
    let owner = installed
        .iter()
        .find(|plugin| plugin.tools.iter().any(|tool| tool == name))?;
    Some(format!(
        "`{name}` is a tool of installed plugin `{plugin}`, which preset `{preset}` does not \
         load; add it to a preset (`[plugins.{plugin}]` with `source = \"{plugin}\"` and the \
         mounts it needs, and `{name}` in `tools.enable` if the preset lists tools: \
         docs/presets.md) and pass that preset with --preset",
        plugin = owner.name
    ))
}

fn log_failed(session: &Session, e: &std::io::Error) -> Failure {
    Failure::host(format!(
        "cannot write the session log {}: {e}",
        session.log_path().display()
    ))
}

async fn batch(
    file: Option<&std::path::Path>,
    max_parallel: Option<u64>,
    mounts: &[String],
    preset_name: &str,
) -> CommandResult {
    let text = match file {
        Some(path) if path != std::path::Path::new("-") => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        _ => std::io::read_to_string(std::io::stdin())
            .map_err(|e| format!("cannot read standard input: {e}")),
    };
    let calls = parse_batch(&text.map_err(Failure::usage)?).map_err(Failure::usage)?;
    let session = client_session(preset_name, mounts).await?;
    let cancel = CancellationToken::new();
    cancel_on_ctrl_c(&cancel);
    let max_parallel = max_parallel.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let records = session
        .call_batch(calls, max_parallel, cancel)
        .await
        .map_err(|e| log_failed(&session, &e))?;
    let text = serde_json::to_string_pretty(&records_json(&records)).unwrap_or_default();
    println!("{}", json_for_terminal(&text));
    Ok(if records.iter().all(|r| r.result.is_ok()) {
        Exit::Ok
    } else {
        Exit::Failed
    })
}
