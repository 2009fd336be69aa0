//! What `preset check` finds in a preset whose plugins loaded (P1): the things that break a
//! session or make it mean less than it says, each with the key it is about and a fix.
//! Pure: the effective preset as written and what each plugin really provides and imports.

use std::collections::BTreeMap;

use super::locate::KeyPath;
use paddock_types::contract::ToolSpec;
use crate::plugin_store::DidYouMean;
use crate::preset::{ConfineMode, GrantsEntry, MountEntry, PresetFile, ToolGlob};
use paddock_sandbox::MountMode;

/// One loaded plugin, as the checks see it.
pub struct LoadedPlugin<'a> {
    /// The name the preset gives it (`[plugins.NAME]`).
    pub name: &'a str,
    pub tools: &'a [ToolSpec],
    /// Interfaces the component imports (`paddock:plugin/exec@0.1.0`, ...).
    pub imports: &'a [String],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// A session would fail, or would not do what the preset says.
    Error,
    /// Works, but grants or says more than it does.
    Warning,
}

#[derive(Debug, Clone)]
pub struct Finding {
    pub severity: Severity,
    pub at: KeyPath,
    /// The file of the `extends` chain the finding is about, when it is not simply the first
    /// that writes `at` (a base's own `hooks_drop`).
    pub file: Option<usize>,
    pub message: String,
    pub fix: String,
}

fn error(at: KeyPath, message: String, fix: String) -> Finding {
    Finding {
        severity: Severity::Error,
        at,
        file: None,
        message,
        fix,
    }
}

/// Every finding, in the order of the preset's sections. `mounts_overridden`: `--mount`
/// replaces the plugins' mounts, so what the preset says about them does not apply.
pub fn findings(
    file: &PresetFile,
    plugins: &[LoadedPlugin<'_>],
    mounts_overridden: bool,
) -> Vec<Finding> {
    let mut found = Vec::new();
    selection(file, plugins, &mut found);
    // A list entry that names no tool is the mistake to fix first (the preset is refused).
    if found.is_empty() {
        hidden_plugins(file, plugins, &mut found);
    }
    aliases(file, plugins, &mut found);
    for (name, entry) in &file.plugins {
        let at = KeyPath::of("plugins").key(name);
        let plugin = plugins.iter().find(|p| p.name == name);
        if !mounts_overridden {
            duplicate_mounts(&at, &entry.mounts, &mut found);
            if let Some(plugin) = plugin {
                workspace(file, plugin, &at, &entry.mounts, &mut found);
            }
        }
        if let Some(plugin) = plugin {
            unused_grants(&at, &entry.grants, &entry.mounts, plugin, &mut found);
        }
        unconfined(&at, &entry.grants, &mut found);
        unrecorded_writes(file, &at, &entry.grants, &mut found);
        for (tool, risk) in &entry.tool_risk {
            found.push(Finding {
                severity: Severity::Warning,
                at: at.clone().key("tool_risk").key(tool),
                file: None,
                message: format!(
                    "`tool_risk.{tool} = \"{}\"`: this preset sets that tool's approval tier by \
                     name, whatever it declares or imports",
                    risk.name()
                ),
                fix: format!("remove `tool_risk.{tool}` to let its declaration and imports decide"),
            });
        }
    }
    for (i, hook) in file.hooks.iter().enumerate() {
        duplicate_mounts(&KeyPath::of("hooks").index(i), &hook.mounts, &mut found);
    }
    collisions(file, plugins, &mut found);
    no_tools(file, plugins, &mut found);
    found
}

fn all_tools<'p>(plugins: &'p [LoadedPlugin<'_>]) -> Vec<&'p str> {
    plugins
        .iter()
        .flat_map(|p| p.tools.iter().map(|t| t.name.as_str()))
        .collect()
}

/// What a preset's selection and aliases may name: every tool of the loaded plugins, and the
/// tools the host serves (`task`, `skill`, `skill_run`).
fn selectable_tools<'p>(plugins: &'p [LoadedPlugin<'_>]) -> Vec<&'p str> {
    let mut tools = all_tools(plugins);
    tools.extend(crate::calls::HOST_TOOLS);
    tools
}

/// `tools.enable` and `tools.disable` entries that match no tool (a typo leaves a tool in or
/// out without a word), and `PLUGIN:` qualifiers naming no plugin of the preset. With MCP
/// servers, unqualified names may be theirs, which only a session learns.
fn selection(file: &PresetFile, plugins: &[LoadedPlugin<'_>], found: &mut Vec<Finding>) {
    let lists: [(&str, &[ToolGlob]); 2] = [
        ("enable", file.tools.enable.as_deref().unwrap_or_default()),
        ("disable", &file.tools.disable),
    ];
    for (list, entries) in lists {
        for (i, glob) in entries.iter().enumerate() {
            let at = KeyPath::of("tools").key(list).index(i);
            let written = &glob.0;
            match glob.plugin() {
                Some(wanted) => match plugins.iter().find(|p| p.name == wanted) {
                    None => found.push(error(
                        at,
                        format!(
                            "`{written}` names plugin `{wanted}`, which this preset does not load{}",
                            DidYouMean::among(wanted, plugins.iter().map(|p| p.name))
                        ),
                        format!(
                            "qualify it with one of the preset's plugins: {}",
                            names(plugins.iter().map(|p| p.name))
                        ),
                    )),
                    Some(plugin) => {
                        let tools: Vec<&str> = plugin.tools.iter().map(|t| t.name.as_str()).collect();
                        if !tools.iter().any(|t| glob.matches_in(Some(wanted), t)) {
                            found.push(error(
                                at,
                                format!(
                                    "plugin `{wanted}` has no tool matching `{}`{}",
                                    glob.pattern(),
                                    DidYouMean::among(glob.pattern(), tools.iter().copied())
                                ),
                                format!("its tools: {}", names(tools.iter().copied())),
                            ));
                        }
                    }
                },
                None if file.mcp.is_empty() => {
                    let tools = selectable_tools(plugins);
                    if !tools.iter().any(|t| glob.matches(t)) {
                        let what = if glob.is_glob() {
                            format!("`{written}` matches no tool of the loaded plugins")
                        } else {
                            format!("no loaded plugin provides a tool `{written}`")
                        };
                        found.push(error(
                            at,
                            format!("{what}{}", DidYouMean::among(written, tools.iter().copied())),
                            format!(
                                "name one of the tools the plugins provide: {}",
                                names(tools.iter().copied())
                            ),
                        ));
                    }
                }
                None => {}
            }
        }
    }
}

/// A plugin that loads while the `[tools]` lists keep none of its tools: the model never sees
/// it, and nothing else would say so. The usual cause is `extends`: a base's `tools.enable`
/// is kept whole, so a plugin the preset adds needs its tools listed there too.
fn hidden_plugins(file: &PresetFile, plugins: &[LoadedPlugin<'_>], found: &mut Vec<Finding>) {
    for plugin in plugins {
        let tools: Vec<&str> = plugin.tools.iter().map(|t| t.name.as_str()).collect();
        if tools.is_empty() || tools.iter().any(|t| file.tools.keeps(Some(plugin.name), t)) {
            continue;
        }
        let fix = match &file.tools.enable {
            Some(enable) => {
                let mut listed: Vec<String> = enable.iter().map(|g| format!("{:?}", g.0)).collect();
                listed.extend(tools.iter().map(|t| format!("{t:?}")));
                format!(
                    "list its tools in `tools.enable` (under `extends` the base's list is kept \
                     whole unless the preset writes its own): enable = [{}]",
                    listed.join(", ")
                )
            }
            None => format!(
                "take its tools out of `tools.disable`: {}",
                names(tools.iter().copied())
            ),
        };
        found.push(Finding {
            severity: Severity::Warning,
            at: KeyPath::of("plugins").key(plugin.name),
            file: None,
            message: format!(
                "plugin `{}` loads, but the `[tools]` lists keep none of its tools ({}), so the \
                 model never sees it",
                plugin.name,
                names(tools.iter().copied())
            ),
            fix,
        });
    }
}

/// An alias must point at a tool the session has.
fn aliases(file: &PresetFile, plugins: &[LoadedPlugin<'_>], found: &mut Vec<Finding>) {
    let tools = selectable_tools(plugins);
    for (alias, target) in &file.tools.aliases {
        let at = KeyPath::of("tools.aliases").key(alias);
        let providers: Vec<&str> = plugins
            .iter()
            .filter(|p| p.tools.iter().any(|t| t.name == *target))
            .map(|p| p.name)
            .collect();
        if providers.is_empty() && file.mcp.is_empty() {
            found.push(error(
                at,
                format!(
                    "alias `{alias}` points at `{target}`, which no loaded plugin provides{}",
                    DidYouMean::among(target, tools.iter().copied())
                ),
                format!(
                    "point it at one of: {}; or remove it",
                    names(tools.iter().copied())
                ),
            ));
        } else if !providers.is_empty()
            && !providers.iter().any(|p| file.tools.keeps(Some(*p), target))
        {
            // Dead, not broken: a preset that narrows `enable` under a base's aliases.
            found.push(Finding {
                severity: Severity::Warning,
                at,
                file: None,
                message: format!(
                    "alias `{alias}` points at `{target}`, which the preset's [tools] \
                     enable/disable leaves out, so the alias does nothing"
                ),
                fix: format!("keep `{target}` in tools.enable, or remove the alias"),
            });
        }
    }
}

fn guest_key(guest: &str) -> &str {
    match guest.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    }
}

/// Two mounts of one plugin (or hook) on the same guest path: it would see only one of them.
fn duplicate_mounts(owner: &KeyPath, mounts: &[MountEntry], found: &mut Vec<Finding>) {
    for (j, later) in mounts.iter().enumerate() {
        if let Some(i) = mounts[..j]
            .iter()
            .position(|m| guest_key(&m.guest) == guest_key(&later.guest))
        {
            found.push(error(
                owner.clone().key("mounts").index(j).key("guest"),
                format!(
                    "{owner}.mounts[{j}] and {owner}.mounts[{i}] are both mounted at {}; a \
                     guest path holds one directory, so one of them would be hidden",
                    later.guest
                ),
                "give each mount its own guest path (e.g. \"/workspace\" and \"/docs\"), or \
                 remove one"
                    .into(),
            ));
        }
    }
}

/// Tools that take paths resolve relative ones under /workspace (the SDK's convention,
/// `paddock_sdk::path`): without a mount there, every relative path fails.
fn workspace(
    file: &PresetFile,
    plugin: &LoadedPlugin<'_>,
    at: &KeyPath,
    mounts: &[MountEntry],
    found: &mut Vec<Finding>,
) {
    if mounts.iter().any(|m| guest_key(&m.guest) == "/workspace") {
        return;
    }
    let needing: Vec<&str> = plugin
        .tools
        .iter()
        .filter(|t| !t.meta.path_params.is_empty() && file.tools.keeps(Some(plugin.name), &t.name))
        .map(|t| t.name.as_str())
        .collect();
    if needing.is_empty() {
        return;
    }
    let has = if mounts.is_empty() {
        "mounts nothing".to_string()
    } else {
        format!(
            "mounts only {}",
            names(mounts.iter().map(|m| m.guest.as_str()))
        )
    };
    found.push(error(
        at.clone().key("mounts"),
        format!(
            "{} take{} paths relative to /workspace, but plugin `{}` {has}",
            names(needing.iter().map(|t| format!("`{t}`"))),
            if needing.len() == 1 { "s" } else { "" },
            plugin.name
        ),
        format!(
            "add a mount there: mounts = [{{ host = \".\", guest = \"/workspace\", mode = \"ro\" }}] \
             (\"rw\" to write); or disable {}",
            names(needing.iter().map(|t| format!("\"{}:{t}\"", plugin.name)))
        ),
    ));
}

/// A grant the component cannot use: authority a later version of the plugin would get
/// without anyone looking again.
fn unused_grants(
    at: &KeyPath,
    grants: &GrantsEntry,
    mounts: &[MountEntry],
    plugin: &LoadedPlugin<'_>,
    found: &mut Vec<Finding>,
) {
    let imports = |interface: &str| {
        plugin
            .imports
            .iter()
            .any(|i| i.starts_with(&format!("paddock:plugin/{interface}")))
    };
    let mut warn = |key: &str, message: String| {
        found.push(Finding {
            severity: Severity::Warning,
            at: at.clone().key("grants").key(key),
            file: None,
            message,
            fix: format!("remove `grants.{key}` from plugins.{}", plugin.name),
        })
    };
    for (key, set) in [
        ("exec", grants.exec.is_some()),
        ("http", grants.http.is_some()),
    ] {
        if set && !imports(key) {
            warn(
                key,
                format!(
                    "plugin `{}` does not import paddock:plugin/{key}, so grants.{key} gives it \
                     nothing it can use (and a later build of it everything it allows)",
                    plugin.name
                ),
            );
        }
    }
    let writable = mounts.iter().any(|m| m.mode == MountMode::Rw);
    for (key, set) in [
        ("protect", !grants.protect.is_empty()),
        ("writable_protected", !grants.writable_protected.is_empty()),
    ] {
        if set && !writable {
            warn(
                key,
                format!(
                    "plugin `{}` has no writable mount, so grants.{key} changes nothing",
                    plugin.name
                ),
            );
        }
    }
}

/// `confine = "off"`: a risk the preset accepts by name (K1), told at every start.
fn unconfined(at: &KeyPath, grants: &GrantsEntry, found: &mut Vec<Finding>) {
    if grants
        .exec
        .as_ref()
        .is_some_and(|exec| exec.confine == Some(ConfineMode::Off))
    {
        found.push(Finding {
            severity: Severity::Warning,
            at: at.clone().key("grants").key("exec").key("confine"),
            file: None,
            message: "`confine = \"off\"`: the programs it starts run with your full rights, \
                      outside any sandbox"
                .into(),
            fix: "remove `confine = \"off\"` so its programs run confined".into(),
        });
    }
}

/// `grants.exec.write` paths outside every writable mount that checkpoints cannot record: a
/// directory there is recorded as a root of its own (docs/rewind.md), so only an entry that
/// does not exist yet, names a file, or is left out by `[checkpoints] grants = false` is named
/// (what programs write there is not put back by a rewind, nor shown by `paddock diff`).
/// Judged by the paths as written (`.`-relative paths against relative hosts), so an entry is
/// named unless it plainly sits inside a `mode = "rw"` mount or is a directory; a grant past
/// the `[checkpoints]` bounds is told as the session starts, when they are counted.
fn unrecorded_writes(file: &PresetFile, at: &KeyPath, grants: &GrantsEntry, found: &mut Vec<Finding>) {
    if file.checkpoints.enabled == Some(false) {
        return;
    }
    let plain = |p: &str| -> std::path::PathBuf {
        std::path::Path::new(p)
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect()
    };
    let hosts: Vec<std::path::PathBuf> = file
        .plugins
        .values()
        .flat_map(|p| &p.mounts)
        .filter(|m| m.mode == MountMode::Rw)
        .map(|m| plain(&m.host))
        .collect();
    let writes = grants.exec.as_ref().map(|e| e.write.as_slice()).unwrap_or_default();
    let left_out = file.checkpoints.grants == Some(false);
    for (i, write) in writes.iter().enumerate() {
        let path = plain(write);
        // `~/...` is the home directory, never inside a relative host.
        let home = write.starts_with('~');
        if hosts
            .iter()
            .any(|h| !home && path.is_absolute() == h.is_absolute() && path.starts_with(h))
        {
            continue;
        }
        let why = match std::fs::metadata(crate::preset::home_path(write)) {
            _ if left_out => "`[checkpoints] grants = false` leaves it out",
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => "it is a file, and checkpoints record directories only",
            Err(_) => "it does not exist (a session started once it does records it)",
        };
        found.push(Finding {
            severity: Severity::Warning,
            at: at.clone().key("grants").key("exec").key("write").index(i),
            file: None,
            message: format!(
                "`{write}` is outside the writable mounts and checkpoints do not record it: \
                 {why}; `paddock rewind` does not put back what programs write there (and \
                 `paddock diff` does not show it)"
            ),
            fix: if left_out {
                "remove `grants = false` from [checkpoints] to record it; a cache that need not \
                 be rewound (a package registry) can stay as it is"
                    .into()
            } else {
                format!(
                    "create the directory `{write}` before the session starts, or mount it \
                     (`mounts = [{{ host = \"{write}\", guest = \"...\", mode = \"rw\" }}]`)"
                )
            },
        });
    }
}

/// The same tool name from two plugins: the session refuses to start. The advice names the
/// `PLUGIN:tool` entry that picks each one.
fn collisions(file: &PresetFile, plugins: &[LoadedPlugin<'_>], found: &mut Vec<Finding>) {
    let mut providers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for plugin in plugins {
        for tool in plugin.tools.iter() {
            if file.tools.keeps(Some(plugin.name), &tool.name) {
                providers
                    .entry(tool.name.as_str())
                    .or_default()
                    .push(plugin.name);
            }
        }
    }
    let how = if file.tools.disable.is_empty() {
        "add `tools.disable = [\"ENTRY\"]`"
    } else {
        "add \"ENTRY\" to tools.disable"
    };
    for (tool, owners) in providers {
        let [first, second, ..] = owners[..] else {
            continue;
        };
        found.push(error(
            KeyPath::of("plugins").key(second),
            format!(
                "tool `{tool}` is provided by plugin `{first}` and by plugin `{second}`; a \
                 session refuses to start with two tools of one name"
            ),
            format!(
                "{} to keep `{first}`'s, or {} to keep `{second}`'s",
                how.replace("ENTRY", &format!("{second}:{tool}")),
                how.replace("ENTRY", &format!("{first}:{tool}"))
            ),
        ));
    }
}

fn no_tools(file: &PresetFile, plugins: &[LoadedPlugin<'_>], found: &mut Vec<Finding>) {
    if !file.mcp.is_empty() {
        return;
    }
    let kept = plugins
        .iter()
        .flat_map(|p| p.tools.iter().map(move |t| (p.name, t)))
        .any(|(plugin, t)| file.tools.keeps(Some(plugin), &t.name));
    if kept {
        return;
    }
    let tools = all_tools(plugins);
    let (at, fix) = if tools.is_empty() {
        (
            KeyPath::of("plugins"),
            "add a plugin, e.g. [plugins.fs] source = \"builtin:fs\" with a mount".to_string(),
        )
    } else {
        let at = match file.tools.enable {
            Some(_) => KeyPath::of("tools.enable"),
            None => KeyPath::of("tools.disable"),
        };
        (
            at,
            format!("keep at least one of: {}", names(tools.iter().copied())),
        )
    };
    found.push(error(
        at,
        "the preset gives the model no tools: every session would be talk only".into(),
        fix,
    ));
}

fn names<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let all: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    match all.is_empty() {
        true => "(none)".into(),
        false => all.join(", "),
    }
}
