//! The `paddock` command line (SPEC M2): `run` a task, `chat` interactively, `resume` a session, show a session's
//! `log`, `tool list|call|batch`, `plugin install|list|inspect|remove`, and
//! `preset list|show|check` (P1), `trust [DIR]` (T1), `mcp serve`. Exit codes
//! (`EXIT_CODES`, shown by `--help`): 0 success, 1 a tool or plugin error or a session that
//! stopped for another reason, 2 a usage or configuration error, 3 a budget stop, 4 a model or
//! protocol error, 5 the user declined a call, 130 interrupted (Ctrl-C).

mod chat;
mod json_events;
mod log;
mod log_view;
mod mcp;
mod mcp_admit;
mod mcp_http;
mod mcp_serve;
mod out;
mod plugin;
mod preset;
mod preset_check;
mod report;
mod results;
mod resume;
mod run;
mod session_view;
mod style;
mod tool;
mod tool_print;
mod trust;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub(crate) use crate::session::Env;

#[derive(Parser)]
#[command(
    name = "paddock",
    version,
    about = "A coding-agent runtime whose tools are sandboxed WebAssembly components",
    after_help = EXIT_CODES
)]
struct Cli {
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
    /// Trust a project directory's own configuration (.paddock/presets): until then paddock
    /// ignores it, since a cloned repository could grant itself tools or pick the model server.
    Trust(trust::TrustArgs),
    /// The Model Context Protocol: `paddock mcp serve` offers the preset's sandboxed tools to
    /// any MCP client (Claude Code, codex, Cursor).
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
}

/// What the exit codes mean, for `--help` (docs/sessions.md repeats it).
pub const EXIT_CODES: &str = "Exit codes: 0 completed · 1 a tool or plugin error, or a session \
that stopped for another reason (truncated, dropped tool call, host error) · 2 a usage or \
configuration error · 3 a budget stopped the session (max_turns, tokens, time, cost) · 4 the \
model or its protocol failed (model_error, protocol_error) · 5 you declined a call (denied) · \
130 interrupted (Ctrl-C)";

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    Failed = 1,
    Usage = 2,
    Budget = 3,
    Model = 4,
    Denied = 5,
    Interrupted = 130,
}

impl Exit {
    /// The exit code of a session that stopped for `reason`.
    pub fn of_stop(reason: crate::log::StopReason) -> Exit {
        use crate::log::StopReason as S;
        match reason {
            S::Completed => Exit::Ok,
            S::MaxTurns | S::TokenBudget | S::TimeBudget | S::CostBudget => Exit::Budget,
            S::ModelError | S::ProtocolError => Exit::Model,
            S::Denied => Exit::Denied,
            S::Interrupted => Exit::Interrupted,
            S::Truncated | S::DroppedToolCall | S::HostError => Exit::Failed,
        }
    }
}

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    restore_sigpipe();
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe { quiet_library_backtraces() };
    let cli = Cli::parse();
    // Warnings (a discarded cache entry, a failing hook let through) are shown by default;
    // `PADDOCK_LOG` (e.g. `debug`, `paddock::sandbox=trace`) changes the level.
    let filter = tracing_subscriber::EnvFilter::builder()
        .with_default_directive(tracing_subscriber::filter::LevelFilter::WARN.into())
        .with_env_var("PADDOCK_LOG")
        .from_env_lossy();
    // Warnings quote plugins, hooks and files: every field passes `sanitize` (T3), whoever
    // wrote the `warn!`.
    use tracing_subscriber::field::MakeExt;
    let fields = tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
        let text = format!("{value:?}");
        let text = crate::terminal::sanitize(&text);
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
    let exit = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(args).await,
            Command::Chat(args) => chat::chat(args).await,
            Command::Resume(args) => resume::resume(args).await,
            Command::Log(args) => log::log(args).await,
            Command::Tool(cmd) => tool::run(cmd).await,
            Command::Plugin(cmd) => plugin::run(cmd).await,
            Command::Preset(cmd) => preset::run(cmd).await,
            Command::Trust(args) => trust::trust(args).await,
            Command::Mcp(cmd) => mcp::run(cmd).await,
        }
    });
    // Everything the session held (MCP servers, mounts) is dropped with the runtime; what
    // finished runs left to the background (namespaces, placeholders) goes before exiting.
    drop(runtime);
    crate::sandbox::settle_finished_runs(std::time::Duration::from_secs(5));
    ExitCode::from(exit as u8)
}

/// Library errors (wasmtime's, wasmtime-wasi's) capture a host backtrace when
/// `RUST_LIB_BACKTRACE`, or failing that `RUST_BACKTRACE`, asks for one. A developer's
/// `RUST_BACKTRACE=1` then made every WASI error a plugin meets (each missing `.gitignore` a
/// walk probes) unwind the host stack: glob spent a third of its time there, and the
/// backtrace reached the model in a crashed call's message. Unless `RUST_LIB_BACKTRACE` is
/// set, it is set to 0; `RUST_BACKTRACE` still governs panics (docs/scale.md). The benches
/// that measure the library call it too, as the binary does.
///
/// # Safety
/// Call it before any other thread exists: it sets an environment variable.
pub unsafe fn quiet_library_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the caller guarantees no other thread exists, so nothing reads the
        // environment concurrently.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
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
