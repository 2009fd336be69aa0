//! What changed between two checkpoints of a mount: the paths (files and symlinks; a
//! directory added or removed as everything in it), and the unified diff of them for review.
//! Only subtrees whose hashes differ are read, so a diff costs what changed.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::hash::Hash;
use crate::store::Store;
use crate::tree::{Kind, Tree, TreeEntry};

/// One path that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub rel: PathBuf,
    pub before: Option<TreeEntry>,
    pub after: Option<TreeEntry>,
}

/// Every path that differs between the trees `from` and `to`, in path order.
pub fn changes(store: &Store, from: &Hash, to: &Hash) -> Result<Vec<Change>, Error> {
    let mut out = Vec::new();
    if from != to {
        let (a, b) = (store.tree(from)?, store.tree(to)?);
        walk(store, Path::new(""), Some(&a), Some(&b), &mut out)?;
    }
    Ok(out)
}

fn walk(
    store: &Store,
    rel: &Path,
    a: Option<&Tree>,
    b: Option<&Tree>,
    out: &mut Vec<Change>,
) -> Result<(), Error> {
    use std::os::unix::ffi::OsStrExt;
    let mut names: Vec<&std::ffi::OsStr> = a
        .iter()
        .chain(b.iter())
        .flat_map(|t| t.entries.iter().map(|e| e.name.as_os_str()))
        .collect();
    names.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    names.dedup();
    for name in names {
        let (x, y) = (a.and_then(|t| t.get(name)), b.and_then(|t| t.get(name)));
        if x == y {
            continue;
        }
        let path = rel.join(name);
        let x_dir = x.filter(|e| e.kind == Kind::Dir);
        let y_dir = y.filter(|e| e.kind == Kind::Dir);
        if x_dir.is_some() || y_dir.is_some() {
            let xt = x_dir.map(|e| store.tree(&e.hash)).transpose()?;
            let yt = y_dir.map(|e| store.tree(&e.hash)).transpose()?;
            if x_dir.is_some() && y_dir.is_some() && xt == yt {
                // Only the directory's mode changed.
                out.push(Change {
                    rel: path.clone(),
                    before: x.cloned(),
                    after: y.cloned(),
                });
            }
            walk(store, &path, xt.as_ref(), yt.as_ref(), out)?;
        }
        let x_leaf = x.filter(|e| e.kind != Kind::Dir);
        let y_leaf = y.filter(|e| e.kind != Kind::Dir);
        if x_leaf.is_some() || y_leaf.is_some() {
            out.push(Change {
                rel: path,
                before: x_leaf.cloned(),
                after: y_leaf.cloned(),
            });
        }
    }
    Ok(())
}

/// How the paths of a diff are written.
#[derive(Debug, Clone, Copy)]
pub enum Naming<'a> {
    /// Relative to the root, `a/` before and `b/` after, as git writes them (a mount: the
    /// project).
    Relative,
    /// Absolute, below this directory, the same on both sides (a directory outside the
    /// project, whose changes a patch of the project must not be taken for).
    Under(&'a Path),
}

impl Naming<'_> {
    fn name(self, side: &str, rel: &Path) -> String {
        match self {
            Naming::Relative => format!("{side}/{}", rel.display()),
            Naming::Under(root) => root.join(rel).display().to_string(),
        }
    }
}

/// The changes as a unified diff, binary files named only.
pub fn unified(store: &Store, changes: &[Change], naming: Naming<'_>) -> Result<String, Error> {
    let mut out = String::new();
    for change in changes {
        let (a, b) = (naming.name("a", &change.rel), naming.name("b", &change.rel));
        let content = |e: &Option<TreeEntry>| -> Result<Option<Vec<u8>>, Error> {
            match e {
                Some(e) if e.kind == Kind::Dir => Ok(None),
                Some(e) => store.get(&e.hash).map(Some),
                None => Ok(None),
            }
        };
        let (before, after) = (content(&change.before)?, content(&change.after)?);
        let mode = |e: &Option<TreeEntry>| e.as_ref().map(|e| (e.kind, e.mode));
        if before == after {
            if let (Some((_, m1)), Some((_, m2))) = (mode(&change.before), mode(&change.after)) {
                out.push_str(&format!("diff {a} {b}\nold mode {m1:o}\nnew mode {m2:o}\n"));
            }
            continue;
        }
        let kind_note = |e: &Option<TreeEntry>| match e {
            Some(e) if e.kind == Kind::Link => " (symlink)",
            _ => "",
        };
        let text = |b: &Option<Vec<u8>>| match b {
            None => Some(String::new()),
            Some(bytes) => String::from_utf8(bytes.clone())
                .ok()
                .filter(|s| !s.contains('\0')),
        };
        let old_name = if change.before.is_some() {
            a.clone()
        } else {
            "/dev/null".to_string()
        };
        let new_name = if change.after.is_some() {
            b.clone()
        } else {
            "/dev/null".to_string()
        };
        out.push_str(&format!(
            "diff {a} {b}{}{}\n",
            kind_note(&change.before),
            kind_note(&change.after)
        ));
        match (text(&before), text(&after)) {
            (Some(old), Some(new)) => {
                let diff = similar::TextDiff::from_lines(&old, &new);
                out.push_str(
                    &diff
                        .unified_diff()
                        .context_radius(3)
                        .header(&old_name, &new_name)
                        .to_string(),
                );
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            _ => out.push_str(&format!("Binary files {old_name} and {new_name} differ\n")),
        }
    }
    Ok(out)
}
