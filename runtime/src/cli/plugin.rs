//! `paddock plugin install|list|inspect|remove` (S8).

use std::path::PathBuf;

use clap::Subcommand;

use super::style::{self, BOLD, RED, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use crate::preset::PluginSource;

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Validate a .wasm tool plugin and store it by SHA-256 under the data directory.
    Install {
        file: PathBuf,
        /// Name to install it under; defaults to the file name without `.wasm`.
        #[arg(long)]
        name: Option<String>,
    },
    /// List installed plugins.
    List,
    /// Show a plugin's tools, metadata, imports and hash. NAME may be `builtin:fs`.
    Inspect { name: String },
    /// Remove an installed plugin.
    Remove { name: String },
}

fn fail(message: impl std::fmt::Display) -> Exit {
    eprintln!(
        "{} {}",
        paint(style::color_enabled_stderr(), RED, "error:"),
        sanitize(&message.to_string())
    );
    Exit::Failed
}

pub async fn run(cmd: PluginCommand) -> Exit {
    let env = match Env::open() {
        Ok(env) => env,
        Err(e) => return fail(format!("{e:#}")),
    };
    let color = style::color_enabled_stdout();
    match cmd {
        PluginCommand::Install { file, name } => match env
            .store
            .install(&env.sandbox, &file, name.as_deref())
            .await
        {
            Ok(record) => {
                println!(
                    "installed {} ({} bytes, sha256 {})",
                    paint(color, BOLD, &record.name),
                    record.size,
                    record.sha256
                );
                println!("tools: {}", sanitize(&record.tools.join(", ")));
                Exit::Ok
            }
            Err(e) => fail(format!("{e}\nnothing was installed")),
        },
        PluginCommand::List => match env.store.list() {
            Ok(records) if records.is_empty() => {
                println!("no plugins installed; built-ins: builtin:fs, builtin:search");
                Exit::Ok
            }
            Ok(records) => {
                for r in records {
                    println!(
                        "{}  {}  {}",
                        paint(color, BOLD, &format!("{:<16}", r.name)),
                        &r.sha256[..12],
                        sanitize(&r.tools.join(", "))
                    );
                }
                Exit::Ok
            }
            Err(e) => fail(e),
        },
        PluginCommand::Inspect { name } => inspect(&env, &name, color).await,
        PluginCommand::Remove { name } => match env.store.remove(&name) {
            Ok(record) => {
                println!("removed {} (sha256 {})", record.name, record.sha256);
                Exit::Ok
            }
            Err(e) => fail(e),
        },
    }
}

async fn inspect(env: &Env, name: &str, color: bool) -> Exit {
    let source = PluginSource::parse(name, &env.cwd);
    let bytes = match env.store.bytes(&source) {
        Ok(bytes) => bytes,
        Err(e) => return fail(e),
    };
    let label = name.strip_prefix("builtin:").unwrap_or(name);
    let plugin = match env
        .sandbox
        .load(label, &bytes, &crate::sandbox::Capability::ALL)
        .await
    {
        Ok(plugin) => plugin,
        Err(e) => return fail(e),
    };
    println!(
        "{}  sha256 {}  ({} bytes)",
        paint(color, BOLD, name),
        plugin.sha256,
        bytes.len()
    );
    println!("imports:");
    for import in &plugin.imports {
        println!("  {import}");
    }
    for tool in plugin.tools.iter() {
        println!();
        println!("{}", paint(color, BOLD, &sanitize(&tool.name)));
        let m = &tool.meta;
        let show = |v: Option<bool>| v.map_or("undeclared".to_string(), |b| b.to_string());
        println!(
            "  read-only: {}  concurrency-safe: {}  idempotent: {}  cancellable: {}  risk: {}",
            show(m.read_only),
            show(m.concurrency_safe),
            show(m.idempotent),
            show(m.cancellable),
            m.risk
                .map_or("undeclared (treated as high)".to_string(), |r| format!(
                    "{r:?}"
                )
                .to_lowercase()),
        );
        if let Some(b) = m.output_budget {
            println!(
                "  output budget: {} bytes, then {:?}",
                b.max_bytes, b.on_overflow
            );
        }
        if !m.path_params.is_empty() {
            println!("  path params: {}", sanitize(&m.path_params.join(", ")));
        }
        // Names, descriptions and schemas are the plugin's words (T3).
        for line in tool.description.lines() {
            println!("  {}", sanitize(line));
        }
        println!(
            "  parameters: {}",
            json_for_terminal(&tool.parameters.to_string())
        );
    }
    Exit::Ok
}
