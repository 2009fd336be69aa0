//! The project a command runs in, from any directory inside it (T1): the nearest directory at
//! or above the working directory that holds `.paddock/` or a version-control root (`.git`, a
//! directory or a worktree's file; `.hg`; `.jj`), as git finds `.git`; the working directory
//! itself when none does. Its `.paddock/presets` (still only when trusted) and its instruction
//! files are the project's; mounts stay relative to the working directory, as the preset says.

use std::path::{Path, PathBuf};

/// What makes a directory a project root.
const MARKERS: [&str; 4] = [".paddock", ".git", ".hg", ".jj"];

/// The project root of `cwd`, canonical (`cwd` canonical when no directory above holds a
/// marker).
pub fn project_root(cwd: &Path) -> PathBuf {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    for dir in cwd.ancestors() {
        let marked = MARKERS.iter().any(|marker| {
            let path = dir.join(marker);
            match *marker {
                // A stray `.paddock` file is not paddock's directory.
                ".paddock" => path.is_dir(),
                _ => path.symlink_metadata().is_ok(),
            }
        });
        if marked {
            return dir.to_path_buf();
        }
    }
    cwd
}

/// The directories from the project root down to `cwd`, the root first and `cwd` last (just
/// `cwd` when it is its own root).
pub fn root_to(cwd: &Path) -> Vec<PathBuf> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let root = project_root(&cwd);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_nearest_marked_directory_above() {
        let top = tempfile::tempdir().unwrap();
        let top_path = top.path().canonicalize().unwrap();
        let deep = top_path.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(project_root(&deep), deep, "no marker: the directory itself");
        std::fs::write(top_path.join("a/.git"), "gitdir: elsewhere\n").unwrap();
        assert_eq!(project_root(&deep), top_path.join("a"));
        assert_eq!(
            root_to(&deep),
            [top_path.join("a"), top_path.join("a/b"), deep.clone()]
        );
        std::fs::create_dir_all(top_path.join("a/b/.paddock")).unwrap();
        assert_eq!(project_root(&deep), top_path.join("a/b"));
        std::fs::write(top_path.join("a/b/c/.paddock"), "not a directory").unwrap();
        assert_eq!(project_root(&deep), top_path.join("a/b"));
    }
}
