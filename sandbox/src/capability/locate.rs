//! Where a program of the `exec` capability runs: the program found on the host's PATH (or
//! named by an absolute path), and the host directory a guest directory names, resolved
//! through its mount's held handle (K3), never out of the mount.

use std::path::{Component, Path, PathBuf};

use crate::grant::Mount;

/// A bare name is looked up on the host's PATH; a path must be absolute.
pub(crate) fn find_program(program: &str) -> Result<PathBuf, String> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if path.is_absolute() {
            Ok(path)
        } else {
            Err(format!(
                "program `{program}`: give a bare name or an absolute path"
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("program `{program}` is not on the host's PATH"))
}

/// Maps a guest directory to its host directory, refusing anything outside the mounts. The
/// directory is resolved through the mount's held handle (K3), never by its name.
pub(crate) fn host_dir(mounts: &[Mount], guest: Option<&str>) -> Result<PathBuf, String> {
    let Some(first) = mounts.first() else {
        return Err(
            "this plugin has no mounts, so there is no directory to run in; add a mount".into(),
        );
    };
    let (mount, rel) = match guest {
        None => (first, Path::new("")),
        Some(guest) => {
            let guest_path = Path::new(guest);
            match mounts
                .iter()
                .find_map(|m| guest_path.strip_prefix(&m.guest).ok().map(|rel| (m, rel)))
            {
                Some(found) => found,
                None => return Err(not_inside(guest, mounts)),
            }
        }
    };
    let shown = guest.unwrap_or(&mount.guest);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!("cwd {shown:?} may not contain `..`"));
    }
    let held = mount
        .held()
        .map_err(|e| format!("mount {} -> {}: {e}", mount.host.display(), mount.guest))?;
    let root = held
        .proc_path()
        .canonicalize()
        .map_err(|e| format!("mount {}: {e}", mount.guest))?;
    let host = held
        .proc_path()
        .join(rel)
        .canonicalize()
        .map_err(|e| format!("cwd {shown:?}: {e}"))?;
    // A symlink inside the mount may not lead out of it.
    if !host.starts_with(&root) || !host.is_dir() {
        return Err(format!("cwd {shown:?} is not a directory inside its mount"));
    }
    Ok(host)
}

fn not_inside(guest: &str, mounts: &[Mount]) -> String {
    format!(
        "cwd {guest:?} is not inside a mount (mounts: {})",
        mounts
            .iter()
            .map(|m| m.guest.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    )
}
