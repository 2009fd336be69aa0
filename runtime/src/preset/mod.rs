//! Presets (SPEC P1): the TOML file that decides, for a session, which plugins load and what
//! each may touch. This is the part the sandbox needs now: plugins with their source, an
//! optional sha256 pin, mounts and limits. Model settings, loop budgets, tool selection, hooks
//! and approval join the same structs later; unknown keys are errors until then, so a preset
//! never silently means less than it says.
//!
//! Relative mount paths (`host = "."`) resolve against the working directory paddock runs
//! in, not the preset's folder: a shipped preset then works in whatever project it is used.

mod file;
mod resolve;

use std::path::{Path, PathBuf};

pub use file::{FuelSetting, MountEntry, PluginEntry, PresetFile};
pub use resolve::{PluginSource, ResolveContext, ResolvedPlugin, ResolvedPreset, make_mount};

use crate::sandbox::Mount;

/// Presets shipped inside the binary, by name.
pub const EMBEDDED: &[(&str, &str)] = &[("default", include_str!("../../../presets/default.toml"))];

/// A preset that could not be read or does not hold. The message names the file, the line and
/// column, the key, and what would be valid.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PresetError(pub String);

/// Loads a preset by name (embedded) or by path (anything with a `/` or ending in `.toml`).
pub fn load(name_or_path: &str) -> Result<PresetFile, PresetError> {
    let looks_like_path = name_or_path.contains('/') || name_or_path.ends_with(".toml");
    if looks_like_path {
        let path = PathBuf::from(name_or_path);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| PresetError(format!("cannot read preset {}: {e}", path.display())))?;
        return file::parse(&path.display().to_string(), &text);
    }
    match EMBEDDED.iter().find(|(name, _)| *name == name_or_path) {
        Some((name, text)) => file::parse(&format!("<embedded preset {name}>"), text),
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
