//! Every protected path below a mount's root, at any depth (K2), for the exec side.
//!
//! Programs are held by bind mounts and a cleanup, which need concrete paths: a nested
//! repository's `vendor/x/.git`, a crate's `crates/a/.cargo/config.toml`, a `.paddock` in a
//! subdirectory are protected as much as the ones at the root (git and cargo look for them in
//! every ancestor of their working directory). The walk goes through the mount's held handle
//! (`/proc/self/fd/N/...`), never follows a symlink, and does not descend into what it reports
//! (the topmost protected path stands for all below it).
//!
//! Cost: one `readdir` per directory of the mount (no `stat`: the entry type comes with the
//! name), twice per confined run (before, to bind; after, to find creations).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::protect::Protect;

/// The topmost protected paths that exist below `root`, as paths under `root`.
pub(super) fn existing(root: &Path, protect: &Protect) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let child = rel.join(entry.file_name());
            if protect.covers(&child) {
                found.insert(root.join(child));
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(child);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_protected_paths_at_any_depth_and_stops_at_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            ".git/hooks",
            "vendor/x/.git",
            "crates/a/.cargo",
            "src",
            "deep/.paddock/p",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("crates/a/.cargo/config.toml"), "").unwrap();
        std::fs::write(root.join("crates/a/.cargo/registry"), "").unwrap();
        std::fs::write(root.join("src/.git"), "gitdir: /elsewhere\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        // A symlink to a directory is never followed.
        std::os::unix::fs::symlink("/", root.join("src/escape")).unwrap();
        let found: Vec<PathBuf> = existing(root, &Protect::default())
            .into_iter()
            .map(|p| p.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        let want: Vec<PathBuf> = [
            ".git",
            "crates/a/.cargo/config.toml",
            "deep/.paddock",
            "src/.git",
            "vendor/x/.git",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn the_grant_decides_with_extra_and_writable_entries() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("conf")).unwrap();
        std::fs::write(root.join("conf/secrets"), "").unwrap();
        let protect = Protect {
            extra: vec!["conf/secrets".into()],
            writable: vec![".git".into()],
        };
        let found = existing(root, &protect);
        assert_eq!(
            found.into_iter().collect::<Vec<_>>(),
            [root.join("conf/secrets")]
        );
    }
}
