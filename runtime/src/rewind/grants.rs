//! Which of a session's exec `write` grants (`grants.exec.write`: directories its confined
//! programs and its shell may write that are not mounts, such as `~/.cargo/registry`) are
//! recorded as roots of their own, and why the others are not.
//!
//! Each is judged once, as the session starts, at its real path (symlinks resolved, as the
//! jail resolves it), and held by descriptor from then on like a mount:
//! - inside a writable mount: already recorded with the mount, nothing more;
//! - a directory within the preset's `[checkpoints]` bounds: a root of its own;
//! - missing, a file, past the bounds, holding a writable mount (two roots would restore the
//!   same files), or `[checkpoints] grants = false`: not recorded, and the session's notes say
//!   so (`paddock rewind` and `paddock diff` print them).
//!
//! A grant inside another grant is recorded with the outer one. Nothing here decides what a
//! program may write; the jail does (`paddock_sandbox`).

use std::path::{Path, PathBuf};

use paddock_sandbox::MountHandle;

use crate::preset::CheckpointPolicy;

/// A grant directory to record: its real path, held.
pub(super) struct GrantRoot {
    pub host: PathBuf,
    pub handle: MountHandle,
}

/// The grant directories of `grants` (as the preset resolves them) to record beside the
/// writable mounts at `mounts` (real paths), and a note for each one left out.
pub(super) fn grant_roots(
    grants: &[PathBuf],
    mounts: &[PathBuf],
    policy: &CheckpointPolicy,
) -> (Vec<GrantRoot>, Vec<String>) {
    let mut notes = Vec::new();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for grant in grants {
        let shown = grant.display();
        let real = match grant.canonicalize() {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                notes.push(format!(
                    "exec write grant {shown} does not exist as the session starts, so \
                     checkpoints do not record it (a session started or resumed once it exists \
                     does)"
                ));
                continue;
            }
            Err(e) => {
                notes.push(format!(
                    "exec write grant {shown} cannot be resolved ({e}), so checkpoints do not \
                     record it"
                ));
                continue;
            }
        };
        if mounts.iter().any(|m| real.starts_with(m)) {
            continue;
        }
        if !real.is_dir() {
            notes.push(format!(
                "exec write grant {shown} is a file, not a directory: checkpoints record \
                 directories only, so what programs write to it is not rewound"
            ));
            continue;
        }
        if let Some(mount) = mounts.iter().find(|m| m.starts_with(&real)) {
            notes.push(format!(
                "exec write grant {shown} holds the writable mount {}: checkpoints record the \
                 mount alone, not the rest of {shown}",
                mount.display()
            ));
            continue;
        }
        if !policy.grants {
            notes.push(format!(
                "exec write grant {shown} is left out of checkpoints ([checkpoints] grants = \
                 false): what programs write there is not rewound"
            ));
            continue;
        }
        dirs.push(real);
    }
    dirs.sort();
    dirs.dedup_by(|inner, outer| inner.starts_with(&*outer));
    let mut roots = Vec::new();
    for dir in dirs {
        if let Some(why) = super::too_big(&dir, policy) {
            notes.push(format!(
                "exec write grant {why}; it is left out of checkpoints (the mounts are still \
                 recorded), so what programs write there is not rewound"
            ));
            continue;
        }
        match MountHandle::open(&dir) {
            Ok(handle) => roots.push(GrantRoot { host: dir, handle }),
            Err(e) => notes.push(format!(
                "exec write grant {} cannot be held ({e}), so checkpoints do not record it",
                dir.display()
            )),
        }
    }
    (roots, notes)
}

/// A mount's host as the grants are compared with it: its real path when it resolves.
pub(super) fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_become_roots_unless_inside_a_mount_missing_a_file_or_holding_a_mount() {
        let dir = tempfile::tempdir().unwrap();
        let base = real(dir.path());
        let (project, cache, nested, file) = (
            base.join("project"),
            base.join("cache"),
            base.join("cache/sub"),
            base.join("token"),
        );
        std::fs::create_dir_all(project.join("target")).unwrap();
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(&file, "t").unwrap();
        let grants = [
            project.join("target"),
            cache.clone(),
            nested.clone(),
            file.clone(),
            base.join("missing"),
        ];
        let policy = CheckpointPolicy::default();
        let (roots, notes) = grant_roots(&grants, std::slice::from_ref(&project), &policy);
        let hosts: Vec<&Path> = roots.iter().map(|r| r.host.as_path()).collect();
        assert_eq!(hosts, [cache.as_path()], "the nested grant is recorded with its outer one");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("is a file"), "{notes:?}");
        assert!(notes[1].contains("does not exist"), "{notes:?}");

        let (roots, notes) = grant_roots(std::slice::from_ref(&base), std::slice::from_ref(&project), &policy);
        assert!(roots.is_empty());
        assert!(notes[0].contains("holds the writable mount"), "{notes:?}");

        let off = CheckpointPolicy {
            grants: false,
            ..CheckpointPolicy::default()
        };
        let (roots, notes) = grant_roots(std::slice::from_ref(&cache), &[], &off);
        assert!(roots.is_empty());
        assert!(notes[0].contains("grants = false"), "{notes:?}");

        let small = CheckpointPolicy {
            max_files: 1,
            ..CheckpointPolicy::default()
        };
        std::fs::write(cache.join("a"), "a").unwrap();
        let (roots, notes) = grant_roots(&[cache], &[], &small);
        assert!(roots.is_empty());
        assert!(notes[0].contains("left out of checkpoints (the mounts are still recorded)"), "{notes:?}");
    }
}
