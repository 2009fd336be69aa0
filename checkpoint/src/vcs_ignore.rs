//! What the project's git ignores, for a recorder whose rules leave it out: each directory's
//! `.gitignore` (and the mount's `.git/info/exclude`) is read by descriptor, never by path, and
//! handed to the `ignore` crate's matcher, which knows git's pattern rules (anchoring, `**`,
//! `!` re-including, directory-only patterns). The user's global excludes file is not read:
//! what a checkpoint leaves out depends on the project alone.
//!
//! Matching is on virtual absolute paths (`/` + the path in the mount), so each directory's
//! rules apply below it, as git applies them.

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::fsat;

/// A rules file larger than this is not read (git would; a checkpoint keeps its cost small).
const MAX_RULES_BYTES: u64 = 1 << 20;

/// The rules known, by the directory (in the mount) that holds them.
#[derive(Default)]
pub struct Ignores {
    by_dir: HashMap<PathBuf, Gitignore>,
}

impl Ignores {
    /// Reads the rules directory `dir` (at `rel` in the mount) holds, replacing what was known
    /// of it. A file that cannot be read adds no rule.
    pub fn load(&mut self, dir: BorrowedFd<'_>, rel: &Path) {
        let base = Path::new("/").join(rel);
        let mut builder = GitignoreBuilder::new(&base);
        let mut any = false;
        if let Some(text) = read_rules(dir, &[".gitignore"]) {
            any |= add_lines(&mut builder, &text);
        }
        if rel.as_os_str().is_empty()
            && let Some(text) = read_rules(dir, &[".git", "info", "exclude"])
        {
            any |= add_lines(&mut builder, &text);
        }
        match builder.build() {
            Ok(rules) if any => {
                self.by_dir.insert(rel.to_path_buf(), rules);
            }
            _ => {
                self.by_dir.remove(rel);
            }
        }
    }

    /// Whether git would ignore `rel` (a directory when `is_dir`): the rules of the nearest
    /// directory above it that has a matching rule decide.
    pub fn ignored(&self, rel: &Path, is_dir: bool) -> bool {
        if self.by_dir.is_empty() {
            return false;
        }
        let path = Path::new("/").join(rel);
        let mut dir = rel.parent();
        while let Some(d) = dir {
            if let Some(rules) = self.by_dir.get(d) {
                match rules.matched(&path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            dir = d.parent();
        }
        false
    }
}

fn add_lines(builder: &mut GitignoreBuilder, text: &str) -> bool {
    let mut any = false;
    for line in text.lines() {
        any |= builder.add_line(None, line).is_ok();
    }
    any
}

/// The text at `names` below `dir` (each directory opened without following a symlink).
fn read_rules(dir: BorrowedFd<'_>, names: &[&str]) -> Option<String> {
    let (file, dirs) = names.split_last()?;
    let mut held = None;
    for name in dirs {
        let at = held
            .as_ref()
            .map_or(dir, |fd: &std::os::fd::OwnedFd| fd.as_fd());
        held = Some(fsat::open_dir(at, name.as_ref()).ok()?);
    }
    let at = held.as_ref().map_or(dir, |fd| fd.as_fd());
    let fd = fsat::open_file(at, file.as_ref()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if !fsat::is_file(&st) || st.st_size as u64 > MAX_RULES_BYTES {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text).ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_directorys_rules_apply_below_it_and_a_negation_re_includes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n!keep.log\n").unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.gitignore"), "/local.txt\n").unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "secret.env\n").unwrap();
        let mut ignores = Ignores::default();
        let top = std::fs::File::open(root).unwrap();
        ignores.load(top.as_fd(), Path::new(""));
        let sub = std::fs::File::open(root.join("sub")).unwrap();
        ignores.load(sub.as_fd(), Path::new("sub"));
        let yes = |p: &str, d| ignores.ignored(Path::new(p), d);
        assert!(yes("target", true));
        assert!(!yes("target", false), "a directory-only pattern");
        assert!(yes("a/b/c.log", false));
        assert!(!yes("keep.log", false));
        assert!(yes("sub/local.txt", false));
        assert!(!yes("local.txt", false), "sub's rule is anchored in sub");
        assert!(yes("secret.env", false));
        assert!(!yes("src/main.rs", false));
    }
}
