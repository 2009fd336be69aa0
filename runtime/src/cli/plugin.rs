//! `paddock plugin install|list|inspect|remove` (S8).

use std::path::PathBuf;

use clap::Subcommand;

use super::report::{CommandResult, Failure};
use super::style::{self, BOLD, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use crate::preset::PluginSource;
use crate::sandbox::{Capability, World};
use crate::scaffold::{self, Kind, Lang};

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Write a new plugin project (or with --hook, a hook) in ./NAME that builds with its
    /// language's own tools and no paddock checkout; its README gives the commands.
    New {
        /// The project's name; the built component installs as NAME with `-` as `_`.
        name: String,
        /// A hook (world `hook`) instead of a tool plugin.
        #[arg(long)]
        hook: bool,
        #[arg(long, value_enum, default_value = "rust")]
        lang: Lang,
        /// Where to create it (default ./NAME); must not exist or be empty.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Validate a .wasm tool plugin or hook (the world is detected) and store it by SHA-256
    /// under the data directory. Installing under a name in use replaces that plugin.
    Install {
        file: PathBuf,
        /// Name to install it under; defaults to the file name without `.wasm`, unchanged.
        #[arg(long)]
        name: Option<String>,
    },
    /// List installed plugins.
    List,
    /// Show a plugin's tools (or a hook's events), metadata, imports and hash. NAME may be
    /// `builtin:fs` or a path to a .wasm file.
    Inspect { name: String },
    /// Remove an installed plugin.
    Remove { name: String },
}

pub async fn run(cmd: PluginCommand) -> CommandResult {
    let env = match Env::open() {
        Ok(env) => env,
        Err(e) => return Err(Failure::plugin(format!("{e:#}"))),
    };
    let color = style::color_enabled_stdout();
    match cmd {
        PluginCommand::New {
            name,
            hook,
            lang,
            dir,
        } => new_project(&env, name, hook, lang, dir),
        PluginCommand::Install { file, name } => match env
            .store
            .install(&env.sandbox, &file, name.as_deref())
            .await
        {
            Ok(report) => {
                let record = &report.record;
                if let Some(old) = &report.replaced {
                    let same = if old.sha256 == record.sha256 {
                        ", same bytes"
                    } else {
                        ""
                    };
                    println!(
                        "replaces the {} `{}` installed from {} (sha256 {}{same})",
                        kind_label(&old.kind),
                        old.name,
                        sanitize(&old.installed_from),
                        &old.sha256[..12.min(old.sha256.len())]
                    );
                }
                println!(
                    "installed {} ({}, {} bytes, sha256 {})",
                    paint(color, BOLD, &record.name),
                    kind_label(&record.kind),
                    record.size,
                    record.sha256
                );
                if record.kind == World::Hook.as_str() {
                    println!(
                        "name it in a preset: [[hooks]] source = \"{}\", on = \"pre\" or \"post\"",
                        record.name
                    );
                } else {
                    println!("tools: {}", sanitize(&record.tools.join(", ")));
                }
                Ok(Exit::Ok)
            }
            Err(e) => Err(Failure::plugin(format!("{e}\nnothing was installed"))),
        },
        PluginCommand::List => match env.store.list() {
            Ok(records) if records.is_empty() => {
                println!("no plugins installed; built-ins: builtin:fs, builtin:search");
                Ok(Exit::Ok)
            }
            Ok(records) => {
                for r in records {
                    let what = if r.kind == World::Hook.as_str() {
                        "(hook)".to_string()
                    } else {
                        r.tools.join(", ")
                    };
                    println!(
                        "{}  {}  {}",
                        paint(color, BOLD, &format!("{:<16}", r.name)),
                        &r.sha256[..12],
                        sanitize(&what)
                    );
                }
                Ok(Exit::Ok)
            }
            Err(e) => Err(Failure::plugin(e)),
        },
        PluginCommand::Inspect { name } => inspect(&env, &name, color).await,
        PluginCommand::Remove { name } => match env.store.remove(&name) {
            Ok(record) => {
                println!("removed {} (sha256 {})", record.name, record.sha256);
                Ok(Exit::Ok)
            }
            Err(e) => Err(Failure::plugin(e)),
        },
    }
}

async fn inspect(env: &Env, name: &str, color: bool) -> CommandResult {
    let source = PluginSource::parse(name, &env.cwd);
    let bytes = match env.store.bytes(&source) {
        Ok(bytes) => bytes,
        Err(e) => return Err(Failure::plugin(e)),
    };
    let label = name.strip_prefix("builtin:").unwrap_or(name);
    let world = match env.sandbox.world_of(label, &bytes) {
        Ok(world) => world,
        Err(e) => return Err(Failure::plugin(e)),
    };
    if world == World::Hook {
        return inspect_hook(env, name, label, &bytes, color).await;
    }
    let plugin = match env.sandbox.load(label, &bytes, &Capability::ALL).await {
        Ok(plugin) => plugin,
        Err(e) => return Err(Failure::plugin(e)),
    };
    println!(
        "{}  tool plugin  sha256 {}  ({} bytes)",
        paint(color, BOLD, &sanitize(name)),
        plugin.sha256,
        bytes.len()
    );
    print_imports(&plugin.imports);
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
    Ok(Exit::Ok)
}

fn kind_label(kind: &str) -> &'static str {
    if kind == World::Hook.as_str() {
        "hook"
    } else {
        "tool plugin"
    }
}

fn print_imports(imports: &[String]) {
    println!("imports:");
    for import in imports {
        let note = match Capability::ALL.iter().find(|c| c.interface() == import) {
            Some(cap) => format!(
                "  (capability: needs plugins.NAME.grants.{} in the preset)",
                cap.name()
            ),
            None => String::new(),
        };
        println!("  {}{note}", sanitize(import));
    }
}

/// A hook exports both events; the preset's `on` chooses the one that runs.
async fn inspect_hook(
    env: &Env,
    name: &str,
    label: &str,
    bytes: &[u8],
    color: bool,
) -> CommandResult {
    let hook = match env.sandbox.load_hook(label, bytes, &Capability::ALL).await {
        Ok(hook) => hook,
        Err(e) => return Err(Failure::plugin(e)),
    };
    println!(
        "{}  hook  sha256 {}  ({} bytes)",
        paint(color, BOLD, &sanitize(name)),
        hook.sha256,
        bytes.len()
    );
    println!(
        "events: pre-tool-use, post-tool-use (a preset's [[hooks]] `on = \"pre\"|\"post\"` picks one)"
    );
    print_imports(&hook.imports);
    Ok(Exit::Ok)
}

fn new_project(
    env: &Env,
    name: String,
    hook: bool,
    lang: Lang,
    dir: Option<PathBuf>,
) -> CommandResult {
    let dir = env.cwd.join(dir.unwrap_or_else(|| PathBuf::from(&name)));
    let request = scaffold::Request {
        name,
        kind: if hook { Kind::Hook } else { Kind::Tool },
        lang,
        dir,
        data_dir: env.store.root().to_path_buf(),
    };
    let created = match scaffold::create(&request) {
        Ok(created) => created,
        Err(e) => return Err(Failure::plugin(e)),
    };
    println!("created {}", sanitize(&created.dir.display().to_string()));
    if let Some(sdk) = &created.sdk {
        println!(
            "paddock-sdk {} is not on crates.io yet: its source is in {} (Cargo.toml's [patch.crates-io] points there)",
            scaffold::SDK_VERSION,
            sanitize(&sdk.display().to_string())
        );
    }
    println!("next, in {}:", sanitize(&created.dir.display().to_string()));
    for command in &created.commands {
        println!("  {}", sanitize(command));
    }
    Ok(Exit::Ok)
}
