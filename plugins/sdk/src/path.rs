//! Path conventions shared by every tool: relative paths are relative to `/workspace`, the
//! guest path where presets mount the project. The sandbox, not this module, keeps paths
//! inside their mounts; this only gives tools one consistent meaning of "relative".

use std::path::{Path, PathBuf};

/// Where presets mount the working directory.
pub const WORKSPACE: &str = "/workspace";

/// Resolves a path argument: absolute paths stay, relative ones are joined to `/workspace`.
pub fn resolve(path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(WORKSPACE).join(p)
    }
}

/// How a path is shown to the model: relative to `/workspace` when inside it.
pub fn display_path(path: &Path) -> String {
    match path.strip_prefix(WORKSPACE) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}
