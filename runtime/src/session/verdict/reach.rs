//! paddock's data directory (the compiled-code cache, the key that authenticates it, every
//! session log) is out of reach of every grant (K4): each host path a preset opens, mounts of
//! plugins, hooks and MCP servers, `grants.exec.read|write`, `[mcp.NAME].read` and the
//! directory of a program named by path or found on PATH, must neither contain it nor lie
//! inside it. Resolution refuses the same (`preset::check_grant_is_safe`); here each is a
//! finding with the key's `file:line:column`, all of them at once.

use std::path::{Path, PathBuf};

use super::findings::{Finding, Severity};
use super::locate::KeyPath;
use crate::preset::{
    GrantsEntry, MountEntry, PresetFile, data_dir_reach, exec_host_paths, home_path, program_dir,
    reaches_data_dir,
};

/// Every granted host path of `file` that reaches `data_dir`. `mounts_overridden`: the
/// plugins' mounts are replaced by `--mount` (checked when those are made).
pub fn data_dir(
    file: &PresetFile,
    cwd: &Path,
    data_dir: &Path,
    mounts_overridden: bool,
) -> Vec<Finding> {
    let mut paths: Vec<(KeyPath, PathBuf)> = Vec::new();
    for (name, entry) in &file.plugins {
        let at = KeyPath::of("plugins").key(name);
        if !mounts_overridden {
            mounts(&at, &entry.mounts, cwd, &mut paths);
        }
        exec(&at, Some(&entry.grants), &mut paths);
    }
    for (i, hook) in file.hooks.iter().enumerate() {
        let at = KeyPath::of("hooks").index(i);
        mounts(&at, &hook.mounts, cwd, &mut paths);
        exec(&at, hook.grants.as_ref(), &mut paths);
    }
    for (name, server) in &file.mcp {
        let at = KeyPath::of("mcp").key(name);
        mounts(&at, &server.mounts, cwd, &mut paths);
        for (i, read) in server.read.iter().enumerate() {
            paths.push((at.clone().key("read").index(i), home_path(read)));
        }
        if let Some(dir) = server.command.as_deref().and_then(program_dir) {
            paths.push((at.clone().key("command"), dir));
        }
    }
    paths
        .into_iter()
        .filter_map(|(at, path)| {
            let data = reaches_data_dir(&path, data_dir)?;
            Some(Finding {
                severity: Severity::Error,
                message: format!("{} {}", path.display(), data_dir_reach(&data)),
                fix: format!(
                    "change or remove `{at}`: grant only what the programs need (e.g. \
                     \"~/.cargo/registry\" rather than \"~\"), outside {}",
                    data.display()
                ),
                at,
                file: None,
            })
        })
        .collect()
}

fn mounts(owner: &KeyPath, mounts: &[MountEntry], cwd: &Path, out: &mut Vec<(KeyPath, PathBuf)>) {
    for (i, mount) in mounts.iter().enumerate() {
        out.push((
            owner.clone().key("mounts").index(i).key("host"),
            cwd.join(&mount.host),
        ));
    }
}

fn exec(owner: &KeyPath, grants: Option<&GrantsEntry>, out: &mut Vec<(KeyPath, PathBuf)>) {
    let Some(exec) = grants.and_then(|g| g.exec.as_ref()) else {
        return;
    };
    for (list, i, path) in exec_host_paths(exec) {
        let key = owner.clone().key("grants").key("exec").key(list).index(i);
        out.push((key, path));
    }
}
