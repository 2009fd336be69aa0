//! The directory walk both tools share: sorted, `.git` skipped, symlinks and unreadable entries
//! skipped, and, unless asked otherwise, what `.gitignore`, `.git/info/exclude` and `.ignore`
//! files exclude (build output such as `target/` or `node_modules/`), as ripgrep does, the
//! ones in the root's parent directories included. Hidden files are searched.
//!
//! Its own walk rather than `ignore::Walk`: sorting there compares `Path::file_name()`, which
//! re-parses both paths on every comparison, and every entry was matched against every level's
//! (mostly empty) ignore files: 8,400 instructions per file natively, most of glob's time
//! (docs/scale.md). Here names are sorted as bytes once per directory, ignore files are read
//! only where the listing shows them, and empty ones are never consulted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use paddock_sdk::ToolError;

use crate::dir::Kind;

struct Frame {
    dir: PathBuf,
    entries: std::vec::IntoIter<(OsString, Kind)>,
    /// Lengths of the two ignore stacks before this directory's files were pushed.
    marks: (usize, usize),
}

/// Files under a root in the components' order (`Path`'s `Ord`): a directory's entries sorted
/// by name as bytes, visited depth first, so "after a cursor" is a path comparison.
pub struct Walk {
    stack: Vec<Frame>,
    single: Option<PathBuf>,
    respect: bool,
    from: Option<PathBuf>,
    /// `.ignore` files, outermost first; they take precedence over git's.
    ignores: Vec<Gitignore>,
    /// `.gitignore` and `.git/info/exclude`, outermost first.
    git: Vec<Gitignore>,
}

/// Files under `root` (or `root` itself when it is a file); with `include_ignored`, also the
/// files ignore rules exclude. With `from`, only that file and the ones after it: a
/// continuation page lists no directory that lies wholly before its cursor.
pub fn files(root: &Path, include_ignored: bool, from: Option<PathBuf>) -> Walk {
    let mut walk = Walk {
        stack: Vec::new(),
        single: None,
        respect: !include_ignored,
        from,
        ignores: Vec::new(),
        git: Vec::new(),
    };
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => {
            if walk.respect {
                let parents: Vec<&Path> = root.ancestors().skip(1).collect();
                for parent in parents.into_iter().rev() {
                    if let Ok(names) = list(parent) {
                        walk.push_ignores(parent, &names);
                    }
                }
            }
            walk.enter(root.to_path_buf());
        }
        Ok(meta) if meta.is_file() => walk.single = Some(root.to_path_buf()),
        _ => {}
    }
    walk
}

impl Walk {
    fn enter(&mut self, dir: PathBuf) {
        let Ok(entries) = list(&dir) else {
            return;
        };
        let marks = (self.ignores.len(), self.git.len());
        if self.respect {
            self.push_ignores(&dir, &entries);
        }
        self.stack.push(Frame {
            dir,
            entries: entries.into_iter(),
            marks,
        });
    }

    /// Reads the ignore files `dir` has (its listing says which), keeping the non-empty ones.
    fn push_ignores(&mut self, dir: &Path, names: &[(OsString, Kind)]) {
        let has = |name: &str, kind: Kind| names.iter().any(|(n, k)| n == name && *k == kind);
        let load = |files: &[PathBuf]| {
            let mut builder = GitignoreBuilder::new(dir);
            for file in files {
                // A malformed line is skipped; the rest of the file still applies.
                let _ = builder.add(file);
            }
            builder.build().ok().filter(|g| !g.is_empty())
        };
        let mut git = Vec::new();
        if has(".git", Kind::Dir) {
            git.push(dir.join(".git/info/exclude"));
        }
        if has(".gitignore", Kind::File) {
            git.push(dir.join(".gitignore"));
        }
        if !git.is_empty()
            && let Some(g) = load(&git)
        {
            self.git.push(g);
        }
        if has(".ignore", Kind::File)
            && let Some(g) = load(&[dir.join(".ignore")])
        {
            self.ignores.push(g);
        }
    }

    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        for g in self.ignores.iter().rev().chain(self.git.iter().rev()) {
            match g.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }

    /// Whether `path` may hold or be the cursor's file or a later one; once a file at or after
    /// the cursor is reached, every later one is.
    fn before_cursor(&self, path: &Path) -> bool {
        match &self.from {
            Some(from) => !from.starts_with(path) && path < from.as_path(),
            None => false,
        }
    }
}

impl Iterator for Walk {
    type Item = PathBuf;

    fn next(&mut self) -> Option<PathBuf> {
        if let Some(file) = self.single.take() {
            return Some(file);
        }
        loop {
            let frame = self.stack.last_mut()?;
            let Some((name, kind)) = frame.entries.next() else {
                let (ignores, git) = frame.marks;
                self.ignores.truncate(ignores);
                self.git.truncate(git);
                self.stack.pop();
                continue;
            };
            if name == ".git" {
                continue;
            }
            let path = frame.dir.join(&name);
            if self.before_cursor(&path) {
                continue;
            }
            if self.respect && self.ignored(&path, kind == Kind::Dir) {
                continue;
            }
            match kind {
                Kind::Dir => self.enter(path),
                Kind::File => {
                    self.from = None;
                    return Some(path);
                }
            }
        }
    }
}

/// A directory's files and subdirectories (not symlinks, not the unreadable), sorted by name.
fn list(dir: &Path) -> std::io::Result<Vec<(OsString, Kind)>> {
    let mut entries = crate::dir::read(dir)?;
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// Compiles a glob such as `**/*.rs`; `*` does not cross `/`.
pub fn matcher(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::invalid_args(format!("glob {pattern:?} is not valid: {e}")))
}

/// Whether `path`, taken relative to `root`, matches: a pattern without `/` matches file names
/// at any depth (`*.rs`), one with `/` matches the relative path (`src/**/*.rs`).
pub fn glob_matches(matcher: &GlobMatcher, pattern: &str, root: &Path, path: &Path) -> bool {
    if pattern.contains('/') {
        matcher.is_match(path.strip_prefix(root).unwrap_or(path))
    } else {
        path.file_name().is_some_and(|name| matcher.is_match(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory removed on drop (no tempfile crate in the plugin workspace).
    struct Scratch(PathBuf);

    impl Scratch {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tree(files: &[&str]) -> Scratch {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "paddock-walk-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        for file in files {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x\n").unwrap();
        }
        Scratch(dir)
    }

    fn names(root: &Path, include_ignored: bool, from: Option<&str>) -> Vec<String> {
        files(root, include_ignored, from.map(|f| root.join(f)))
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn files_come_sorted_depth_first_and_resume_at_a_cursor() {
        let dir = tree(&[
            "b.rs",
            "a/z.rs",
            "a/b/c.rs",
            "a.rs",
            ".hidden",
            ".git/config",
        ]);
        let all = names(dir.path(), false, None);
        assert_eq!(all, [".hidden", "a/b/c.rs", "a/z.rs", "a.rs", "b.rs"]);
        let mut sorted: Vec<PathBuf> = all.iter().map(PathBuf::from).collect();
        sorted.sort();
        assert_eq!(sorted, all.iter().map(PathBuf::from).collect::<Vec<_>>());
        assert_eq!(
            names(dir.path(), false, Some("a/z.rs")),
            ["a/z.rs", "a.rs", "b.rs"]
        );
        assert_eq!(
            names(dir.path(), false, Some("a/y.rs")),
            ["a/z.rs", "a.rs", "b.rs"]
        );
    }

    #[test]
    fn ignore_files_apply_unless_asked_and_ignore_beats_gitignore() {
        let dir = tree(&[
            ".gitignore",
            "target/debug/x.rs",
            "src/a.rs",
            "src/gen.rs",
            "src/.gitignore",
            "keep.log",
            "drop.log",
            ".ignore",
        ]);
        std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(dir.path().join("src/.gitignore"), "gen.rs\n").unwrap();
        std::fs::write(dir.path().join(".ignore"), "!keep.log\n").unwrap();
        let seen = names(dir.path(), false, None);
        assert_eq!(
            seen,
            [
                ".gitignore",
                ".ignore",
                "keep.log",
                "src/.gitignore",
                "src/a.rs"
            ]
        );
        assert_eq!(names(dir.path(), true, None).len(), 8);
        // Searching a subdirectory still honours the parent's rules.
        let sub: Vec<String> = files(&dir.path().join("src"), false, None)
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(sub, [".gitignore", "a.rs"]);
    }
}
