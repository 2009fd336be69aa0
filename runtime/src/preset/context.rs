//! What resolving a preset works from, shared by every section that resolves: the context from
//! outside the file (working and data directory, spill, `--mount`), where a plugin's bytes
//! come from, a mount made and checked, and the paths a grant names (`~`, a program's
//! directory).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::PresetError;
use paddock_sandbox::SpillDir;
use paddock_sandbox::{Mount, MountMode};

/// Where a plugin's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum PluginSource {
    /// Shipped inside the binary: `builtin:fs`.
    Builtin(String),
    /// Installed with `paddock plugin install`.
    Installed(String),
    /// A `.wasm` file.
    Path(PathBuf),
}

impl PluginSource {
    /// `builtin:NAME`; anything with a `/` or ending in `.wasm` is a path (relative to `dir`:
    /// the preset file's directory, or the working directory for a name given on the command
    /// line); anything else names an installed plugin.
    pub fn parse(source: &str, cwd: &Path) -> PluginSource {
        if let Some(name) = source.strip_prefix("builtin:") {
            PluginSource::Builtin(name.to_string())
        } else if super::is_path(source, ".wasm") {
            PluginSource::Path(cwd.join(source))
        } else {
            PluginSource::Installed(source.to_string())
        }
    }
}

/// What resolution needs from outside the file.
pub struct ResolveContext<'a> {
    pub cwd: &'a Path,
    pub data_dir: &'a Path,
    pub spill: Option<&'a SpillDir>,
    /// `--mount` on the command line replaces every plugin's mounts.
    pub mount_override: Option<&'a [Mount]>,
}

/// Builds one mount, checking what can be checked before any plugin runs. `key` names where
/// the mount came from (a preset key or `--mount`).
pub fn make_mount(
    key: &str,
    host: &str,
    guest: &str,
    mode: MountMode,
    cwd: &Path,
) -> Result<Mount, PresetError> {
    if !guest.starts_with('/') {
        return Err(PresetError(format!(
            "{key}: guest path {guest:?} must be absolute, e.g. \"/workspace\""
        )));
    }
    // No symbolic link may stand where the mount is named (K3): a link planted by a tool in
    // one session would otherwise become the mount of the next. A relative path is taken
    // from the real working directory and may contain no link at all; an absolute one may
    // have links above it, but not as its last component.
    let named = Path::new(host);
    let host_path = if named.is_absolute() {
        match (named.parent(), named.file_name()) {
            (Some(parent), Some(name)) => parent
                .canonicalize()
                .map(|p| p.join(name))
                .unwrap_or_else(|_| named.to_path_buf()),
            _ => named.to_path_buf(),
        }
    } else {
        cwd.canonicalize()
            .unwrap_or_else(|_| cwd.to_path_buf())
            .join(named)
    };
    match std::fs::metadata(&host_path) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(PresetError(format!(
                "{key}: {} is not a directory; mount its parent",
                host_path.display()
            )));
        }
        Err(e) => {
            return Err(PresetError(format!(
                "{key}: host directory {} cannot be mounted: {e}",
                host_path.display()
            )));
        }
    }
    // Held from now on (K3): calls use this open directory, never the name again.
    Mount::open(&host_path, guest, mode).map_err(|e| {
        PresetError(format!(
            "{key}: host directory {} cannot be opened without following a symbolic link: {e}; \
             mount the directory the link points to",
            host_path.display()
        ))
    })
}

/// `~/x` is `x` in the home directory, `~` the home directory; other paths are taken as they
/// are.
pub fn home_path(path: &str) -> std::path::PathBuf {
    match (path, path.strip_prefix("~/"), dirs::home_dir()) {
        ("~", _, Some(home)) => home,
        (_, Some(rest), Some(home)) => home.join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The real directory of the program a session would run for `program` (an absolute path,
/// or a bare name looked up on PATH as the exec capability looks it up), which the jail lets
/// the program read.
pub fn program_dir(program: &str) -> Option<std::path::PathBuf> {
    let found = if program.starts_with('/') {
        std::path::PathBuf::from(program)
    } else if program.is_empty() || program.contains(['/', '*', '?', '[']) {
        return None;
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())?
    };
    let real = found.canonicalize().unwrap_or(found);
    real.parent().map(Path::to_path_buf)
}
