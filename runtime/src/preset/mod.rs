//! Presets (SPEC P1, S6, H2, C2): the TOML file that decides, for a session, the model, the
//! loop budgets, which plugins and tools load, what each plugin may touch (mounts, exec and
//! http grants, limits), which hooks guard the calls, and what needs approval. Unknown keys,
//! wrong types and bad values are errors naming the file, line, column and key, with the
//! nearest valid key, so a preset never silently means less than it says.
//!
//! Presets are found by name in `./.paddock/presets/NAME.toml`, then
//! `$XDG_CONFIG_HOME/paddock/presets/NAME.toml` (`~/.config` when unset), then among the
//! shipped ones embedded in the binary.
//!
//! Relative mount paths (`host = "."`) resolve against the working directory paddock runs
//! in, not the preset's folder: a shipped preset then works in whatever project it is used.

mod file;
mod policy;
mod resolve;
mod sections;

use std::path::{Path, PathBuf};

pub use file::{FuelSetting, MountEntry, PluginEntry, PresetFile};
pub use policy::{ApprovalPolicy, LoopBudgets, ResolvedHook, hook_limits, search_dirs};
pub use resolve::{PluginSource, ResolveContext, ResolvedPlugin, ResolvedPreset, make_mount};
pub use sections::{
    ApprovalEntry, ApprovalMode, GrantsEntry, HookEntry, HookPhase, LoopLimits, OnError, ToolGlob,
    ToolSelection,
};

use crate::sandbox::Mount;

/// Presets shipped inside the binary, by name.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("default", include_str!("../../../presets/default.toml")),
    ("coding", include_str!("../../../presets/coding.toml")),
    ("review", include_str!("../../../presets/review.toml")),
    ("untrusted", include_str!("../../../presets/untrusted.toml")),
];

/// Where a preset was found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PresetInfo {
    pub name: String,
    /// A file path, or `embedded`.
    pub origin: String,
    pub description: Option<String>,
}

/// A preset that could not be read or does not hold. The message names the file, the line and
/// column, the key, and what would be valid.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PresetError(pub String);

/// Loads a preset by path (anything with a `/` or ending in `.toml`) or by name, searching
/// the preset directories of the current working directory, then the shipped presets.
pub fn load(name_or_path: &str) -> Result<PresetFile, PresetError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    load_in(name_or_path, &cwd)
}

/// `load`, with the project directory given.
pub fn load_in(name_or_path: &str, cwd: &Path) -> Result<PresetFile, PresetError> {
    let (origin, text) = source_in(name_or_path, cwd)?;
    file::parse(&origin, &text)
}

/// Where `load_in` would find a preset, and its text (a session records both, so `resume`
/// rebuilds the preset it ran with).
pub fn source_in(name_or_path: &str, cwd: &Path) -> Result<(String, String), PresetError> {
    let looks_like_path = name_or_path.contains('/') || name_or_path.ends_with(".toml");
    if looks_like_path {
        return read_source(&PathBuf::from(name_or_path));
    }
    for dir in search_dirs(cwd) {
        let path = dir.join(format!("{name_or_path}.toml"));
        if path.is_file() {
            return read_source(&path);
        }
    }
    match EMBEDDED.iter().find(|(name, _)| *name == name_or_path) {
        Some((name, text)) => Ok((format!("<embedded preset {name}>"), (*text).to_string())),
        None => Err(PresetError(format!(
            "no preset named `{name_or_path}`; the shipped presets are: {}; or give a path to a .toml file",
            EMBEDDED
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Parses preset text; `origin` names it in messages.
pub fn parse(origin: &str, text: &str) -> Result<PresetFile, PresetError> {
    file::parse(origin, text)
}

fn read_source(path: &Path) -> Result<(String, String), PresetError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| PresetError(format!("cannot read preset {}: {e}", path.display())))?;
    Ok((path.display().to_string(), text))
}

/// Every preset `load_in` can find by name, the first found of each name winning, as
/// `load_in` would. A file that does not parse is listed with its error as description.
pub fn list(cwd: &Path) -> Vec<PresetInfo> {
    let mut found: Vec<PresetInfo> = Vec::new();
    for dir in search_dirs(cwd) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        for path in paths {
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if found.iter().any(|p| p.name == name) {
                continue;
            }
            let description = match read_source(&path).and_then(|(o, t)| file::parse(&o, &t)) {
                Ok(file) => file.description,
                Err(e) => Some(format!("(does not parse: {e})")),
            };
            found.push(PresetInfo {
                name,
                origin: path.display().to_string(),
                description,
            });
        }
    }
    for (name, text) in EMBEDDED {
        if found.iter().any(|p| p.name == *name) {
            continue;
        }
        found.push(PresetInfo {
            name: name.to_string(),
            origin: "embedded".into(),
            description: file::parse(name, text).ok().and_then(|f| f.description),
        });
    }
    found
}

/// Mounts that would hand a plugin paddock's own data (the compiled-code cache above all) are
/// refused: loading a cached file runs it as native code.
pub fn check_mount_is_safe(mount: &Mount, data_dir: &Path) -> Result<(), PresetError> {
    let host = mount
        .host
        .canonicalize()
        .unwrap_or_else(|_| mount.host.clone());
    let data = data_dir
        .canonicalize()
        .unwrap_or_else(|_| data_dir.to_path_buf());
    if data.starts_with(&host) {
        return Err(PresetError(format!(
            "mount {} -> {} would expose paddock's data directory {} (its compiled-code cache) to a \
             plugin; mount a narrower directory, or set PADDOCK_HOME to a place outside it",
            mount.host.display(),
            mount.guest,
            data.display()
        )));
    }
    Ok(())
}
