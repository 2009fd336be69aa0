//! The `paddock` command line (M2): `run` a task, `chat` interactively, `resume` a session, show a session's
//! `log`, `tool list|call|batch`, `plugin install|list|inspect|remove`, and
//! `preset list|show|check` (P1), `trust [DIR]` (T1), `mcp serve`, `lock [accept]`. Exit codes: `EXIT_TABLE`,
//! the one source of `--help`, the README and docs/json-events.md.

// The command line is where paddock prints.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod acp;
mod approver;
mod attach;
mod chat;
mod doctor;
mod elicit;
mod json_events;
mod lock;
mod lock_pin;
mod log;
mod log_view;
mod mcp;
mod mcp_admit;
mod mcp_http;
mod mcp_rounds;
mod mcp_serve;
mod out;
mod plugin;
mod plugin_install;
mod plugin_registry;
mod preset;
mod preset_check;
mod report;
mod results;
mod resume;
mod rewind;
mod run;
mod scaffold;
mod session_view;
mod signals;
mod skill;
mod style;
mod tool;
mod tool_print;
mod trust;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub(crate) use paddock::session::Env;

#[derive(Parser)]
#[command(
    name = "paddock",
    version,
    about = "A coding-agent runtime whose tools are sandboxed WebAssembly components",
    after_help = exit_codes_help()
)]
struct Cli {
    /// The data directory: installed plugins, compiled code, trust, and every session's log
    /// (default `$PADDOCK_HOME`, else `$XDG_DATA_HOME/paddock`). A harness chooses where its
    /// sessions go with it.
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a task with the agent loop: the model proposes calls, paddock runs them sandboxed,
    /// until the task is done or a budget stops it. `--demo` needs no model or key.
    Run(run::RunArgs),
    /// An interactive session: type tasks; typing while it works steers it (next model
    /// request), `/next TEXT` queues a follow-up, `/stop` or Ctrl-C interrupts.
    Chat(chat::ChatArgs),
    /// Recover a session from its log (a crash, Ctrl-C, a budget) and continue it.
    Resume(resume::ResumeArgs),
    /// Show a session's event log, or list the sessions.
    Log(log::LogArgs),
    /// Put a session back as it was when turn N began (turns count from 1): its mounts' files
    /// (every file, mode and symlink; files changed outside the session are kept unless
    /// --force), its conversation, or both (the default).
    Rewind(rewind::RewindArgs),
    /// What a session (or one of its turns) changed in its mounts, as a unified diff.
    Diff(rewind::DiffArgs),
    /// Start a new session from a recorded one's history up to the start of a turn, its
    /// files put back as they were then (the original's log is left as it is).
    Fork(rewind::ForkArgs),
    /// List and call tools directly, without a model.
    #[command(subcommand)]
    Tool(tool::ToolCommand),
    /// Create, install, list, inspect and remove tool plugins and hooks.
    #[command(subcommand)]
    Plugin(plugin::PluginCommand),
    /// List, show and check presets: which plugins, tools, grants, hooks and approval a
    /// session gets.
    #[command(subcommand)]
    Preset(preset::PresetCommand),
    /// List, show and check Agent Skills (folders with a SKILL.md): what a session lists in
    /// its system prompt, and whether each skill's declared needs are within a preset's grants.
    #[command(subcommand)]
    Skill(skill::SkillCommand),
    /// Trust a project directory's own configuration (.paddock/presets): until then paddock
    /// ignores it, since a cloned repository could grant itself tools or pick the model server.
    Trust(trust::TrustArgs),
    /// The Model Context Protocol: `paddock mcp serve` offers the preset's sandboxed tools to
    /// any MCP client (Claude Code, codex, Cursor).
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Which of paddock's sandbox layers are in force on this machine (inside a container some
    /// may not be), each with what it stops.
    Doctor(doctor::DoctorArgs),
    /// What paddock.lock pins (installed plugins' bytes and tools, MCP servers' tools) and
    /// whether it still matches; `lock accept NAME|mcp.NAME` records a change you trust.
    Lock(lock::LockArgs),
    /// The Agent Client Protocol over standard input and output: an editor (Zed, JetBrains)
    /// runs paddock as its agent; each editor mode is a preset (docs/acp.md).
    Acp(acp::AcpArgs),
}

impl Command {
    /// How this command's failure is printed: as its JSON when it speaks JSON, else as text.
    fn failure_form(&self) -> report::Form {
        match self {
            Command::Run(args) => args.failure_form(),
            Command::Tool(cmd) => cmd.failure_form(),
            _ => report::Form::Text,
        }
    }
}

/// How a command ended: the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Failed = 1,
    Usage = 2,
    Budget = 3,
    Model = 4,
    Denied = 5,
    ApprovalRequired = 6,
    /// What a panic exits with (Rust's own code): the `run --json` result line says so.
    Panicked = 101,
    Interrupted = 130,
    Terminated = 143,
}

/// Every exit code, the stop reasons (or failure) that give it, and what it means: the one
/// source that `--help`, the README and docs/json-events.md show (a test keeps the documents
/// equal to it).
pub const EXIT_TABLE: &[(Exit, &str, &str)] = &[
    (
        Exit::Ok,
        "`completed`",
        "the task is done (or the command succeeded)",
    ),
    (
        Exit::Failed,
        "`truncated`, `dropped_tool_call`, `host_error`",
        "a tool or plugin error (`tool call`, `plugin`), or a session that stopped for another reason",
    ),
    (
        Exit::Usage,
        "`setup_error`",
        "a usage or configuration error: nothing ran",
    ),
    (
        Exit::Budget,
        "`max_turns`, `token_budget`, `time_budget`, `cost_budget`",
        "a budget stopped the session (`resume` goes on)",
    ),
    (
        Exit::Model,
        "`model_error`, `protocol_error`",
        "the model or its protocol failed",
    ),
    (Exit::Denied, "`denied`", "you declined a call"),
    (
        Exit::ApprovalRequired,
        "`approval_required`",
        "a call needed approval and `--on-ask fail` stopped the session",
    ),
    (
        Exit::Panicked,
        "`host_error`",
        "paddock panicked (a bug; the log is resumable)",
    ),
    (Exit::Interrupted, "`interrupted`", "Ctrl-C (SIGINT)"),
    (
        Exit::Terminated,
        "`terminated`",
        "SIGTERM or SIGHUP (`timeout`, CI runners, Kubernetes)",
    ),
];

/// The exit codes as `--help` prints them.
fn exit_codes_help() -> String {
    let mut text = String::from("Exit codes:");
    for (exit, stops, meaning) in EXIT_TABLE {
        text.push_str(&format!(
            "\n  {:>3}  {meaning} ({})",
            *exit as i32,
            stops.replace('`', "")
        ));
    }
    text
}

/// The exit codes as the README and docs/json-events.md show them (a Markdown table).
#[cfg(test)]
fn exit_codes_markdown() -> String {
    let mut table =
        String::from("| exit | stop reason (`result` line) | meaning |\n| --- | --- | --- |\n");
    for (exit, stops, meaning) in EXIT_TABLE {
        table.push_str(&format!("| {} | {stops} | {meaning} |\n", *exit as i32));
    }
    table
}

impl Exit {
    /// The exit code of a session that stopped for `reason`.
    pub fn of_stop(reason: paddock::log::StopReason) -> Exit {
        use paddock::log::StopReason as S;
        match reason {
            S::Completed => Exit::Ok,
            S::MaxTurns | S::TokenBudget | S::TimeBudget | S::CostBudget => Exit::Budget,
            S::ModelError | S::ProtocolError => Exit::Model,
            S::Denied => Exit::Denied,
            S::ApprovalRequired => Exit::ApprovalRequired,
            S::Interrupted => Exit::Interrupted,
            S::Terminated => Exit::Terminated,
            S::Truncated | S::DroppedToolCall | S::HostError => Exit::Failed,
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    // First: a signal from here on is counted, not fatal, until the command decides (a
    // `run --json` caller gets its `result` line even for a Ctrl-C during set-up).
    signals::catch_early();
    restore_sigpipe();
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe { paddock::quiet_library_backtraces() };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    if let Some(home) = &cli.home {
        // SAFETY: before any other thread exists (the runtime is not built yet); everything
        // that opens the data directory reads the variable.
        unsafe { std::env::set_var("PADDOCK_HOME", home) };
    }
    // One TLS crypto provider for every HTTP client the process builds, whichever is first.
    paddock::tls::install_crypto_provider();
    if !matches!(cli.command, Command::Run(_) | Command::Resume(_)) {
        // Only a session's commands keep the signals they counted during set-up.
        signals::release_early();
    }
    // Warnings (a discarded cache entry, a failing hook let through) are shown by default;
    // `PADDOCK_LOG` (e.g. `debug`, `paddock_sandbox=trace`) changes the level.
    let filter = tracing_subscriber::EnvFilter::builder()
        .with_default_directive(tracing_subscriber::filter::LevelFilter::WARN.into())
        .with_env_var("PADDOCK_LOG")
        .from_env_lossy();
    // Warnings quote plugins, hooks and files: every field passes `sanitize` (T3), whoever
    // wrote the `warn!`.
    use tracing_subscriber::field::MakeExt;
    let fields = tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        let text = paddock_types::text::sanitize(&text);
        match field.name() {
            "message" => write!(writer, "{text}"),
            name => write!(writer, "{name}={text}"),
        }
    })
    .delimited(" ");
    let _ = tracing_subscriber::fmt()
        .fmt_fields(fields)
        .with_env_filter(filter)
        .without_time()
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(style::color_enabled_stderr())
        .try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("paddock: cannot start the async runtime: {e}");
            return ExitCode::from(Exit::Failed as u8);
        }
    };
    let form = cli.command.failure_form();
    let exit = runtime.block_on(async {
        let outcome = match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Chat(args) => chat::chat(args).await,
            Command::Resume(args) => resume::resume(args).await,
            Command::Log(args) => log::log(args).await,
            Command::Rewind(args) => rewind::rewind(args).await,
            Command::Diff(args) => rewind::diff(args).await,
            Command::Fork(args) => rewind::fork(args).await,
            Command::Tool(cmd) => tool::run(cmd).await,
            Command::Plugin(cmd) => plugin::run(cmd).await,
            Command::Preset(cmd) => preset::run(cmd).await,
            Command::Skill(cmd) => skill::run(cmd).await,
            Command::Trust(args) => trust::trust(args).await,
            Command::Mcp(cmd) => mcp::run(cmd).await,
            Command::Doctor(args) => doctor::doctor(args).await,
            Command::Lock(args) => lock::run(args).await,
            Command::Acp(args) => acp::acp(args).await,
        };
        // Errors are printed once, here, in the form the command line asked for.
        outcome.unwrap_or_else(|failure| report::show(&failure, form))
    });
    // Everything the session held (MCP servers, mounts) is dropped with the runtime; what
    // finished runs left to the background (namespaces, placeholders) goes before exiting.
    drop(runtime);
    paddock_sandbox::settle_finished_runs(std::time::Duration::from_secs(5));
    ExitCode::from(exit as u8)
}

/// A command line clap refused, printed in the form the command asked for: `run --json` gets
/// its `result` line (stop `setup_error`), `tool ... --json` and `tool batch` their JSON
/// object, everyone else clap's own message. `--help` and `--version` print as usual.
fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    signals::release_early();
    let asked = matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let args: Vec<String> = std::env::args().skip(1).collect();
    let form = match asked {
        true => report::Form::Text,
        false => report::Form::of_raw_args(&args),
    };
    if form == report::Form::Text {
        error.exit();
    }
    let message = error.render().to_string();
    let message = message.trim_end().trim_start_matches("error: ");
    let failure = report::Failure::usage(message);
    ExitCode::from(report::show(&failure, form) as u8)
}

/// `paddock tool list | head` should end quietly, as other Unix tools do, instead of panicking
/// on the closed pipe: Rust ignores SIGPIPE by default, so restore the default action.
fn restore_sigpipe() {
    // SAFETY: called first thing in `main`, before any other thread exists; setting a signal's
    // disposition to SIG_DFL has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock::log::StopReason;

    /// The README and docs/json-events.md show `EXIT_TABLE` as it is.
    #[test]
    fn the_documents_show_the_exit_codes_as_the_table_has_them() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let table = exit_codes_markdown();
        for doc in ["README.md", "docs/json-events.md"] {
            let text = std::fs::read_to_string(root.join(doc)).unwrap();
            assert!(
                text.contains(&table),
                "{doc} does not show the exit codes as `EXIT_TABLE` has them; paste this:\n{table}"
            );
        }
        let help = exit_codes_help();
        for (exit, _, meaning) in EXIT_TABLE {
            assert!(
                help.contains(&format!("{:>3}  {meaning}", *exit as i32)),
                "{help}"
            );
        }
    }

    /// Each stop reason's exit code is the row of the table that names it.
    #[test]
    fn every_stop_reason_exits_with_the_code_its_row_names() {
        use StopReason as S;
        let all = [
            S::Completed,
            S::MaxTurns,
            S::TokenBudget,
            S::TimeBudget,
            S::CostBudget,
            S::Interrupted,
            S::Truncated,
            S::DroppedToolCall,
            S::Denied,
            S::ModelError,
            S::ProtocolError,
            S::HostError,
            S::Terminated,
            S::ApprovalRequired,
        ];
        for reason in all {
            let exit = Exit::of_stop(reason);
            let named = format!("`{}`", reason.as_str());
            let row = EXIT_TABLE.iter().find(|(e, _, _)| *e == exit).unwrap();
            assert!(
                row.1.contains(&named),
                "{named} exits {} but its row says {}",
                exit as i32,
                row.1
            );
        }
    }
}
