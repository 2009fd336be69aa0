//! `paddock tool list`, `paddock tool call` and `paddock tool batch`, through the preset's
//! tool selection, aliases, hooks and approval (P1, H1, H2, C2, X1).

use clap::{Args, Subcommand};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::report::{print_finding, setup_error};
use super::style::{self, BOLD, DIM, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use crate::exec::{Scheduler, parse_batch, records_json, run_call};
use crate::hooks::TerminalApprover;
use crate::preset;
use crate::session::{Loaded, Session, load_preset};

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

pub async fn run(cmd: ToolCommand) -> Exit {
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

/// Loads `preset_name` for one command, its warnings printed once; Ctrl-C cancels its calls.
async fn load(preset_name: &str, mounts: &[String], json: bool) -> Result<Loaded, Exit> {
    let env = Env::open().map_err(|e| setup_error(json, "HOST_ERROR", &format!("{e:#}")))?;
    let project = super::trust::project_trusted_for(&env, preset_name);
    let found = preset::find_written(preset_name, &env.cwd, project)
        .map_err(|e| setup_error(json, "USAGE_ERROR", &e.to_string()))?;
    let approver = Box::new(TerminalApprover::new());
    // Each command its own spill directory: one run never reads what another spilled (S5).
    let session = format!("cli-{}", unique_suffix());
    let loaded = match load_preset(env, &found, preset_name, mounts, &session, approver).await {
        Ok(loaded) => loaded,
        Err(e) => {
            // `tool batch` answers in JSON, but a refused preset's findings still go to
            // standard error, as every command shows them.
            for finding in &e.findings {
                print_finding(finding);
            }
            return Err(setup_error(json, e.code, &e.message));
        }
    };
    for warning in &loaded.warnings {
        print_finding(warning);
    }
    cancel_on_ctrl_c(&loaded.cancel);
    Ok(loaded)
}

async fn list(preset_name: &str, json: bool) -> Exit {
    let loaded = match load(preset_name, &[], json).await {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
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
        return Exit::Ok;
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
    Exit::Ok
}

async fn call(name: &str, args: &str, mounts: &[String], preset_name: &str, json: bool) -> Exit {
    let loaded = match load(preset_name, mounts, json).await {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    let cx = loaded.context();
    let call_id = format!("cli-{}", std::process::id());
    let mut executed = run_call(&cx, &call_id, name, args).await;
    if let Err(error) = &mut executed.result
        && error.code == crate::contract::ErrorCode::UnknownTool
        && let Some(plugin) = loaded.registry.left_out(name)
    {
        // The model is never told about tools its preset hides; the person at the terminal is.
        error.message = format!(
            "`{name}` is a tool of plugin `{plugin}`, but preset `{}` leaves it out (its \
             `[tools]` enable/disable); use a preset that keeps it, e.g. `--preset coding`",
            loaded.preset
        );
    }
    super::tool_print::print_result(&executed.result, &executed.context, json)
}

/// Seconds, nanoseconds and the process id: unique enough for one user's commands.
fn unique_suffix() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!(
        "{}-{:09}-{}",
        now.as_secs(),
        now.subsec_nanos(),
        std::process::id()
    )
}

/// Interrupts `session`'s running turn on Ctrl-C (X2).
pub(crate) fn interrupt_on_ctrl_c(session: &Session) {
    let interrupter = session.interrupter();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            interrupter.interrupt();
        }
    });
}

/// Cancels `cancel` on Ctrl-C (X2).
pub(crate) fn cancel_on_ctrl_c(cancel: &CancellationToken) {
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
}

async fn batch(
    file: Option<&std::path::Path>,
    max_parallel: Option<u64>,
    mounts: &[String],
    preset_name: &str,
) -> Exit {
    let text = match file {
        Some(path) if path != std::path::Path::new("-") => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display())),
        _ => std::io::read_to_string(std::io::stdin())
            .map_err(|e| format!("cannot read standard input: {e}")),
    };
    let calls = match text.map(|t| parse_batch(&t).map_err(|e| e.to_string())) {
        Ok(Ok(calls)) => calls,
        Ok(Err(message)) | Err(message) => return setup_error(true, "USAGE_ERROR", &message),
    };
    let loaded = match load(preset_name, mounts, true).await {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    let max_parallel = max_parallel.unwrap_or(loaded.max_parallel);
    let scheduler = Scheduler {
        cx: loaded.context(),
        max_parallel: usize::try_from(max_parallel).unwrap_or(usize::MAX),
        events: None,
        on_start: None,
        on_end: None,
    };
    let records = scheduler.run(&calls).await;
    let text = serde_json::to_string_pretty(&records_json(&records)).unwrap_or_default();
    println!("{}", json_for_terminal(&text));
    if records.iter().all(|r| r.result.is_ok()) {
        Exit::Ok
    } else {
        Exit::Failed
    }
}
