//! `paddock lock` (what `paddock.lock` pins and whether it still matches), `paddock lock accept
//! NAME|mcp.NAME` (record a change the user trusts, showing it first), and the front of
//! `paddock plugin install --locked`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::lock_pin::plugin_now;
use super::plugin_install::{InstallOptions, locked_refusal, render_diff};
use super::report::{CommandResult, Failure};
use super::style::{self, BOLD, paint, sanitize};
use super::{Env, Exit};
use paddock::plugin_store::lock::{LockFile, LockPlace, McpLock, PluginLock, ToolPin, pin};
use paddock::plugin_store::{LockedError, Progress};
use paddock::preset;
use paddock::session::verdict::{Start, judge};

#[derive(Args)]
pub struct LockArgs {
    #[command(subcommand)]
    command: Option<LockCommand>,
    /// The lock file (default: the project's .paddock/paddock.lock when the project has a
    /// .paddock directory, else paddock.lock in the data directory).
    #[arg(long, global = true, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// The preset whose MCP servers `lock` checks and `lock accept mcp.NAME` starts.
    #[arg(long, global = true, default_value = "default")]
    preset: String,
}

#[derive(Subcommand)]
enum LockCommand {
    /// Record the current state of installed plugins (NAME) or MCP servers (mcp.NAME) in the
    /// lock, after showing what changed since it was recorded.
    Accept {
        #[arg(required = true, value_name = "NAME|mcp.NAME")]
        names: Vec<String>,
    },
}

pub async fn run(args: LockArgs) -> CommandResult {
    let env = Env::open().map_err(|e| Failure::host(format!("{e:#}")))?;
    let place = match &args.lock {
        Some(path) => LockPlace::at(path),
        None => LockPlace::find(&env.cwd, env.store.root()),
    }
    .map_err(Failure::usage)?;
    if let Some(note) = place.ignored() {
        super::trust::notice(note);
    }
    let mut file = place.read().map_err(Failure::usage)?;
    match args.command {
        None => status(&env, place.path(), &file, &args.preset).await,
        Some(LockCommand::Accept { names }) => {
            for name in &names {
                match name.strip_prefix("mcp.") {
                    Some(server) => accept_mcp(&env, &mut file, server, &args.preset).await?,
                    None => accept_plugin(&env, &mut file, name).await?,
                }
            }
            // Into the lock as it is now: a session may have recorded something meanwhile.
            place
                .update(|current| {
                    for name in &names {
                        match name.strip_prefix("mcp.") {
                            Some(server) => {
                                if let Some(entry) = file.mcp.get(server) {
                                    current.mcp.insert(server.to_string(), entry.clone());
                                }
                            }
                            None => {
                                if let Some(entry) = file.plugins.get(name) {
                                    current.plugins.insert(name.clone(), entry.clone());
                                }
                            }
                        }
                    }
                })
                .map_err(Failure::host)?;
            println!("recorded in {}", place.path().display());
            Ok(Exit::Ok)
        }
    }
}

/// What differs between two entries, as lines.
fn plugin_diff(old: &PluginLock, now: &PluginLock) -> Vec<String> {
    let mut lines = Vec::new();
    if old.sha256 != now.sha256 {
        lines.push(format!("bytes: sha256 {} -> {}", old.sha256, now.sha256));
    }
    if old.installed_from != now.installed_from {
        lines.push(format!(
            "installed from: {} -> {}",
            sanitize(&old.installed_from),
            sanitize(&now.installed_from)
        ));
    }
    if old.imports != now.imports {
        let added: Vec<&String> = now
            .imports
            .iter()
            .filter(|i| !old.imports.contains(i))
            .collect();
        let removed: Vec<&String> = old
            .imports
            .iter()
            .filter(|i| !now.imports.contains(i))
            .collect();
        let list = |names: &[&String]| {
            if names.is_empty() {
                "none".to_string()
            } else {
                sanitize(
                    &names
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
                .into_owned()
            }
        };
        lines.push(format!(
            "imports: added {}; removed {}",
            list(&added),
            list(&removed)
        ));
    }
    for (tool, change) in pin::diff(&old.tools, &now.tools, "metadata") {
        lines.push(format!("tool `{}`: {change}", sanitize(&tool)));
    }
    if old.origin != now.origin {
        lines.push("origin (registry digests or signer) changed".into());
    }
    lines
}

async fn accept_plugin(env: &Env, file: &mut LockFile, name: &str) -> Result<(), Failure> {
    let mut now = plugin_now(env, name).await?;
    match file.plugins.get(name) {
        Some(old) => {
            now.grants = old.grants.clone();
            let lines = plugin_diff(old, &now);
            if lines.is_empty() {
                println!("{}: matches the lock; nothing to accept", sanitize(name));
            } else {
                println!("{}: accepting", sanitize(name));
                for line in lines {
                    println!("  {line}");
                }
            }
        }
        None => println!(
            "{}: not in the lock; recording sha256 {} with {} tool(s)",
            sanitize(name),
            now.sha256,
            now.tools.len()
        ),
    }
    file.plugins.insert(name.to_string(), now);
    Ok(())
}

/// Starts `server` of `preset_name` as a session does and lists its tools, pinned.
async fn mcp_now(
    env: &Env,
    server: &str,
    preset_name: &str,
) -> Result<BTreeMap<String, ToolPin>, Failure> {
    let project = super::trust::project_trusted_for(env, preset_name);
    let found = preset::find_written(preset_name, &env.cwd, project).map_err(Failure::usage)?;
    let start = Start {
        spill: None,
        mount_override: None,
    };
    let judged = judge(env, &found, preset_name, start)
        .await
        .map_err(Failure::from)?;
    let Some(resolved) = judged.resolved.mcp.iter().find(|m| m.name == server) else {
        let known: Vec<String> = judged
            .resolved
            .mcp
            .iter()
            .map(|m| format!("mcp.{}", m.name))
            .collect();
        return Err(Failure::usage(format!(
            "preset `{preset_name}` has no [mcp.{server}] (it has: {}); name the preset that \
             starts it with --preset",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let (_server, listed) = paddock::mcp::McpServer::start(resolved.clone())
        .await
        .map_err(|e| Failure::plugin(format!("mcp.{}: {}", e.server, e.message)))?;
    // Pinned like the session pins them: the task-only tools too, though not offered.
    Ok(listed
        .tools
        .iter()
        .chain(&listed.task_only)
        .map(|t| (t.name.to_string(), paddock::calls::pin_of(t)))
        .collect())
}

async fn accept_mcp(
    env: &Env,
    file: &mut LockFile,
    server: &str,
    preset_name: &str,
) -> Result<(), Failure> {
    let now = mcp_now(env, server, preset_name).await?;
    match file.mcp.get(server) {
        Some(old) => {
            let changes = pin::diff(&old.tools, &now, "annotations");
            if changes.is_empty() {
                println!(
                    "mcp.{}: matches the lock; nothing to accept",
                    sanitize(server)
                );
            } else {
                println!("mcp.{}: accepting", sanitize(server));
                for (tool, change) in changes {
                    println!("  tool `{}`: {change}", sanitize(&tool));
                }
            }
        }
        None => println!(
            "mcp.{}: not in the lock; recording {} tool(s)",
            sanitize(server),
            now.len()
        ),
    }
    file.mcp.insert(server.to_string(), McpLock { tools: now });
    Ok(())
}

async fn status(env: &Env, path: &Path, file: &LockFile, preset_name: &str) -> CommandResult {
    let color = style::color_enabled_stdout();
    println!("lock: {}", path.display());
    if file.plugins.is_empty() && file.mcp.is_empty() {
        println!("empty: sessions record the installed plugins and MCP servers they use");
        return Ok(Exit::Ok);
    }
    let mut differs = false;
    for (name, entry) in &file.plugins {
        let state = match plugin_now(env, name).await {
            Ok(now) => {
                let lines = plugin_diff(entry, &now);
                if lines.is_empty() {
                    "matches".to_string()
                } else {
                    differs = true;
                    format!(
                        "DIFFERS: {} (`paddock lock accept {name}` records it, `paddock plugin \
                         install --locked` restores the locked one)",
                        lines.join("; ")
                    )
                }
            }
            Err(e) => {
                differs = true;
                format!("not usable here: {}", e.message)
            }
        };
        println!(
            "{}  sha256 {}  {} tool(s)  {}",
            paint(color, BOLD, &sanitize(&format!("{name:<16}"))),
            sanitize(&entry.sha256.chars().take(12).collect::<String>()),
            entry.tools.len(),
            sanitize(&state)
        );
    }
    for (server, entry) in &file.mcp {
        let state = match mcp_now(env, server, preset_name).await {
            Ok(now) => {
                let changes = pin::diff(&entry.tools, &now, "annotations");
                if changes.is_empty() {
                    "matches".to_string()
                } else {
                    differs = true;
                    format!(
                        "DIFFERS: {} (blocked in sessions until `paddock lock accept mcp.{server} \
                         --preset {preset_name}`)",
                        pin::describe_changes(&changes)
                    )
                }
            }
            Err(e) => format!("not checked: {}", e.message),
        };
        println!(
            "{}  {} tool(s)  {}",
            paint(color, BOLD, &sanitize(&format!("mcp.{server:<12}"))),
            entry.tools.len(),
            sanitize(&state)
        );
    }
    Ok(if differs { Exit::Failed } else { Exit::Ok })
}

/// `paddock plugin install --locked [--lock FILE]`: every plugin of the lock, exactly; a
/// plugin it replaces shows the capability diff, and a widening needs the yes (or
/// `--accept-widening`) an upgrade needs.
pub(super) async fn install_locked(
    env: &Env,
    lock_file: Option<&Path>,
    options: &InstallOptions<'_>,
) -> CommandResult {
    let place = match lock_file {
        Some(path) => LockPlace::at(path),
        None => LockPlace::find(&env.cwd, env.store.root()),
    }
    .map_err(|e| Failure::plugin(format!("{e}\nnothing was installed")))?;
    if let Some(note) = place.ignored() {
        super::trust::notice(note);
    }
    let shown = place.path().display().to_string();
    let refused = |e: LockedError| locked_refusal(e, &shown);
    let file = place
        .read()
        .map_err(|e| Failure::plugin(format!("{e}\nnothing was installed (lock {shown})")))?;
    let show = options.force_progress;
    let progress = |name: &str, p: Progress| {
        if show {
            match p {
                Progress::Compiling { .. } => eprintln!("{name}: compiling and checking"),
                Progress::Downloading { done, total } if Some(done) == total => {
                    eprintln!("{name}: downloaded {done} bytes")
                }
                Progress::Downloading { .. } => {}
            }
        }
    };
    let installed = paddock::plugin_store::install_locked(
        &env.store,
        &env.sandbox,
        &file,
        options.auth,
        options.allow_unsigned,
        options.widening(),
        &progress,
    )
    .await
    .map_err(refused)?;
    for done in installed {
        let report = &done.report;
        let record = &report.record;
        if let (Some(old), Some(diff)) = (&report.replaced, &report.diff) {
            println!(
                "{}: replaces the one installed from {} (sha256 {})",
                record.name,
                sanitize(&old.installed_from),
                old.sha256
            );
            println!("{}", render_diff(diff));
        }
        let from = if done.from_blobs {
            "from the data directory's blobs/".to_string()
        } else {
            format!("from {}", sanitize(&record.installed_from))
        };
        println!(
            "installed {} (sha256 {}) {from}",
            record.name, record.sha256
        );
    }
    Ok(Exit::Ok)
}
