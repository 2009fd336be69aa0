//! `paddock preset list | show NAME | check FILE` (P1).

use clap::Subcommand;
use serde_json::json;

use super::report::{CommandResult, Failure};
use super::style::{self, BOLD, DIM, json_for_terminal, paint, sanitize};
use super::{Env, Exit};
use paddock::preset::{self, ResolveContext, ResolvedPreset};

#[derive(Subcommand)]
pub enum PresetCommand {
    /// List the presets found by name: ./.paddock/presets (once trusted: `paddock trust`),
    /// then $XDG_CONFIG_HOME/paddock/presets, then the shipped ones.
    List,
    /// Print a preset fully resolved, every default filled in, as JSON; with --toml, the
    /// effective preset (its `extends` merged in) as TOML that `preset check` accepts.
    Show {
        /// Preset name or path to a .toml file.
        name: String,
        /// Print the effective preset as TOML instead.
        #[arg(long)]
        toml: bool,
    },
    /// Check a preset: parse it strictly, resolve it, load its plugins and hooks, and find
    /// what would break a session (tool names no plugin provides, two mounts on one guest
    /// path, tools without /workspace, unused grants, no tools, one tool name from two
    /// plugins), each with file:line:column and a fix.
    Check {
        /// Path to a .toml file, or a preset name.
        file: String,
    },
}

pub async fn run(cmd: PresetCommand) -> CommandResult {
    let env = Env::open().map_err(|e| Failure::usage(format!("{e:#}")))?;
    match cmd {
        PresetCommand::List => {
            let color = style::color_enabled_stdout();
            let project = super::trust::project_trusted(&env);
            for info in preset::list(&env.cwd, project) {
                println!(
                    "{}  {}  {}",
                    paint(color, BOLD, &format!("{:<12}", sanitize(&info.name))),
                    paint(
                        color,
                        DIM,
                        &match info.from {
                            preset::Origin::Shipped => "[shipped]".to_string(),
                            from => format!("[{} {}]", from.as_str(), sanitize(&info.origin)),
                        }
                    ),
                    sanitize(&info.description.unwrap_or_default())
                );
            }
            Ok(Exit::Ok)
        }
        PresetCommand::Show { name, toml: true } => {
            resolve(&env, &name).map_err(Failure::usage)?;
            let project = super::trust::project_trusted_for(&env, &name);
            let source = preset::find(&name, &env.cwd, project).map_err(Failure::usage)?;
            print!("{}", sanitize(&source.text));
            Ok(Exit::Ok)
        }
        PresetCommand::Show { name, toml: false } => {
            let resolved = resolve(&env, &name).map_err(Failure::usage)?;
            {
                let mut value = serde_json::to_value(&resolved).unwrap_or_default();
                let project = super::trust::project_trusted_for(&env, &name);
                if let Ok(found) = preset::find_written(&name, &env.cwd, project) {
                    mark_set_by(&mut value, &found);
                }
                value["model"] = match &resolved.model {
                    Some(m) => json!({
                        "provider": format!("{:?}", m.kind).to_lowercase(),
                        "model": m.model,
                        "base_url": m.base_url(),
                        "api_key_env": m.api_key_env,
                        // The values sent, defaults included.
                        "max_output_tokens": m.output_limit(),
                        "max_tokens_field": m.max_tokens_field_name(),
                        "tool_choice": m.tool_choice,
                        "attempt_timeout_ms": m.attempt_timeout_ms,
                        "temperature": m.temperature,
                    }),
                    None => serde_json::Value::Null,
                };
                println!(
                    "{}",
                    json_for_terminal(&serde_json::to_string_pretty(&value).unwrap_or_default())
                );
            }
            Ok(Exit::Ok)
        }
        PresetCommand::Check { file } => super::preset_check::check(&env, &file).await,
    }
}

/// Marks each effective hook, plugin grant and tool selection of `value` (a resolved preset
/// as JSON) with `set_by`: the `file:line:column` of the file of the `extends` chain that set
/// it, so a preset built on another says which file each part of the policy comes from.
fn mark_set_by(value: &mut serde_json::Value, found: &preset::Found) {
    use paddock::session::verdict::{KeyPath, hook_origins, locate};
    let Ok(file) = found.source.parse() else {
        return;
    };
    let at = |path: KeyPath| serde_json::Value::String(locate(&found.written, &path));
    let (hooks, _) = hook_origins(&found.written);
    if let Some(list) = value["hooks"].as_array_mut() {
        for (hook, origin) in list.iter_mut().zip(&hooks) {
            hook["set_by"] = origin.at.clone().into();
        }
    }
    if let Some(list) = value["plugins"].as_array_mut() {
        for plugin in list {
            let name = plugin["name"].as_str().unwrap_or_default().to_string();
            let Some(entry) = file.plugins.get(&name) else {
                continue;
            };
            let key = KeyPath::of("plugins").key(&name);
            let mut set_by = serde_json::Map::new();
            set_by.insert("source".into(), at(key.clone().key("source")));
            let written = [
                ("mounts", !entry.mounts.is_empty()),
                ("grants.exec", entry.grants.exec.is_some()),
                ("grants.http", entry.grants.http.is_some()),
                ("grants.protect", !entry.grants.protect.is_empty()),
                (
                    "grants.writable_protected",
                    !entry.grants.writable_protected.is_empty(),
                ),
            ];
            for (part, present) in written {
                if present {
                    let mut path = key.clone();
                    for step in part.split('.') {
                        path = path.key(step);
                    }
                    set_by.insert(part.into(), at(path));
                }
            }
            plugin["set_by"] = set_by.into();
        }
    }
    let mut tools = serde_json::Map::new();
    if file.tools.enable.is_some() {
        tools.insert("enable".into(), at(KeyPath::of("tools.enable")));
    }
    if !file.tools.disable.is_empty() {
        tools.insert("disable".into(), at(KeyPath::of("tools.disable")));
    }
    for alias in file.tools.aliases.keys() {
        tools.insert(
            format!("aliases.{alias}"),
            at(KeyPath::of("tools.aliases").key(alias)),
        );
    }
    if !tools.is_empty() {
        value["tools"]["set_by"] = tools.into();
    }
    if let Some(list) = value["mcp"].as_array_mut() {
        for server in list {
            let name = server["name"].as_str().unwrap_or_default().to_string();
            server["set_by"] = at(KeyPath::of("mcp").key(&name));
        }
    }
}

fn resolve(env: &Env, name: &str) -> Result<ResolvedPreset, String> {
    let project = super::trust::project_trusted_for(env, name);
    let file = preset::find(name, &env.cwd, project)
        .and_then(|source| source.parse())
        .map_err(|e| e.to_string())?;
    let cx = ResolveContext {
        cwd: &env.cwd,
        data_dir: env.store.root(),
        spill: None,
        mount_override: None,
    };
    file.resolve(name, &cx).map_err(|e| e.to_string())
}
