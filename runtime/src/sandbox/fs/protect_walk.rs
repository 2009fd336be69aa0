//! Every protected path below a writable root, at any depth (K2), found and removed by
//! descriptor, for the exec side.
//!
//! Programs are held by bind mounts, which need concrete paths: a nested repository's
//! `vendor/x/.git`, a crate's `crates/a/.cargo/config.toml`, a `.paddock` in a subdirectory
//! are protected as much as the ones at the root (git and cargo look for them in every
//! ancestor of their working directory). So is any directory git would take for a git
//! directory whatever its name (`HEAD` and `objects/` + `refs/`, or `HEAD` and `commondir`): a
//! bare repository, a `--separate-git-dir`, `.repo/projects/x.git`.
//!
//! The walk never goes by path. It starts at the root's held descriptor and opens each
//! directory relative to its parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, so a
//! directory swapped for a symbolic link while it walks (by a program running beside it) is
//! not entered: the walk cannot leave the root. Removal works the same way: `unlinkat`
//! relative to the held parent, a directory's contents through its own descriptor (as std's
//! `remove_dir_all` does since CVE-2022-21658), after checking that the name still refers to
//! the entry that was found (device and inode). A directory that cannot be listed is an
//! error, never skipped: what is below it could not be held.
//!
//! What it does not do: decide what is protected (`protect`), or bind anything (`confine`).

use std::collections::BTreeSet;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sandbox::fs::protect::Protect;

/// Deepest directory the walk and the removal enter: deeper trees are refused, not followed
/// down the stack.
const MAX_DEPTH: usize = 512;

/// A protected entry, held through its parent directory.
#[derive(Debug, Clone)]
pub(in crate::sandbox) struct Entry {
    parent: Arc<OwnedFd>,
    name: OsString,
    /// Relative to the root: for messages, and for binding (`root/rel`).
    pub rel: PathBuf,
    /// Device and inode when found (a symlink's own, never its target's).
    pub identity: (u64, u64),
}

impl Entry {
    /// `name` in `dir` as it is now, or `None` if it is gone.
    fn at(dir: &Arc<OwnedFd>, name: OsString, rel: PathBuf) -> Option<Entry> {
        let identity = identity_at(dir.as_raw_fd(), &name)?;
        Some(Entry {
            parent: dir.clone(),
            name,
            rel,
            identity,
        })
    }
}

/// The topmost protected entries below `root` (the root itself never counts).
pub(in crate::sandbox) fn existing(
    root: BorrowedFd<'_>,
    protect: &Protect,
) -> Result<Vec<Entry>, String> {
    let root = Arc::new(dup(root.as_raw_fd()).map_err(|e| format!("the mount: {e}"))?);
    let mut found = Vec::new();
    // (directory, its path below the root, depth); the root first.
    let mut dirs: Vec<(Arc<OwnedFd>, PathBuf, usize)> = vec![(root, PathBuf::new(), 0)];
    while let Some((dir, rel, depth)) = dirs.pop() {
        let names = list(&dir).map_err(|e| unlistable(&rel, &e))?;
        for name in names {
            let child = rel.join(&name);
            if protect.covers(&child) {
                found.extend(Entry::at(&dir, name, child));
                continue;
            }
            let sub = match open_dir_at(dir.as_raw_fd(), &name) {
                Ok(sub) => sub,
                // Not a directory (or no longer one: a swap for a symlink lands here too).
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(unlistable(&child, &e)),
            };
            if depth + 1 > MAX_DEPTH {
                return Err(format!(
                    "`{}` lies more than {MAX_DEPTH} directories deep; paddock cannot hold the \
                     protected paths below it",
                    child.display()
                ));
            }
            let sub = Arc::new(sub);
            if is_git_dir(&sub) && !protect.opens(&child) {
                found.extend(Entry::at(&dir, name, child));
                continue;
            }
            dirs.push((sub, child, depth + 1));
        }
    }
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(found)
}

/// The protected entries below `root` that were not there (by identity) in `before`.
pub(in crate::sandbox) fn created(
    root: BorrowedFd<'_>,
    protect: &Protect,
    before: &BTreeSet<(u64, u64)>,
) -> Result<Vec<Entry>, String> {
    Ok(existing(root, protect)?
        .into_iter()
        .filter(|entry| !before.contains(&entry.identity))
        .collect())
}

/// Removes `entry` (a directory with everything in it), if its name still refers to it.
/// `Ok(false)`: something else stands there now, left alone.
pub(in crate::sandbox) fn remove(entry: &Entry) -> std::io::Result<bool> {
    let parent = entry.parent.as_raw_fd();
    let Some(now) = identity_at(parent, &entry.name) else {
        return Ok(false);
    };
    if now != entry.identity {
        return Ok(false);
    }
    remove_at(parent, &entry.name, 0)?;
    Ok(true)
}

/// Removes `name` in `dir`: a file or symlink at once, a directory after its contents.
fn remove_at(dir: RawFd, name: &OsStr, depth: usize) -> std::io::Result<()> {
    match unlink_at(dir, name, 0) {
        Ok(()) => return Ok(()),
        // A directory (EISDIR on Linux; EPERM elsewhere).
        Err(e) if matches!(e.raw_os_error(), Some(libc::EISDIR | libc::EPERM)) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    }
    if depth >= MAX_DEPTH {
        return Err(std::io::Error::other("too deep to remove"));
    }
    let sub = match open_dir_at(dir, name) {
        Ok(sub) => sub,
        // Swapped for something that is not a directory: unlink that instead.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
            return unlink_at(dir, name, 0);
        }
        Err(e) => return Err(e),
    };
    for child in list(&sub)? {
        remove_at(sub.as_raw_fd(), &child, depth + 1)?;
    }
    unlink_at(dir, name, libc::AT_REMOVEDIR)
}

/// Does this directory hold what git needs to take it for a git directory?
fn is_git_dir(dir: &OwnedFd) -> bool {
    let fd = dir.as_raw_fd();
    let kind = |name: &str| kind_at(fd, OsStr::new(name));
    kind("HEAD") == Some(Kind::File)
        && ((kind("objects") == Some(Kind::Dir) && kind("refs") == Some(Kind::Dir))
            || kind("commondir") == Some(Kind::File))
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Other,
}

fn kind_at(dir: RawFd, name: &OsStr) -> Option<Kind> {
    let stat = stat_at(dir, name)?;
    Some(match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        _ => Kind::Other,
    })
}

/// The names in a held directory (`.` and `..` left out).
fn list(dir: &OwnedFd) -> std::io::Result<Vec<OsString>> {
    // The magic link reopens the held directory itself, whatever stands at its name now.
    let entries = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    entries.map(|entry| entry.map(|e| e.file_name())).collect()
}

fn unlistable(rel: &Path, error: &std::io::Error) -> String {
    let shown = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    format!(
        "cannot list `{}` ({error}), so paddock cannot hold the protected paths below it; make \
         it readable (chmod u+rx) or leave it out of the writable mounts",
        shown.display()
    )
}

pub(in crate::sandbox) fn c_name(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

pub(in crate::sandbox) fn dup(fd: RawFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor or -1.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor only we hold.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Opens the directory `name` in `dir` without following a symlink.
pub(in crate::sandbox) fn open_dir_at(dir: RawFd, name: &OsStr) -> std::io::Result<OwnedFd> {
    let c = c_name(name)?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a valid C string, a descriptor we hold, plain flags.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags) };
    if fd == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor only we hold.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub(in crate::sandbox) fn stat_at(dir: RawFd, name: &OsStr) -> Option<libc::stat> {
    let c = c_name(name).ok()?;
    // SAFETY: a valid C string and an out pointer to zeroed memory.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    let ret = unsafe { libc::fstatat(dir, c.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW) };
    (ret == 0).then_some(stat)
}

fn identity_at(dir: RawFd, name: &OsStr) -> Option<(u64, u64)> {
    stat_at(dir, name).map(|s| (s.st_dev, s.st_ino))
}

pub(in crate::sandbox) fn unlink_at(
    dir: RawFd,
    name: &OsStr,
    flags: libc::c_int,
) -> std::io::Result<()> {
    let c = c_name(name)?;
    // SAFETY: a valid C string and a descriptor we hold.
    if unsafe { libc::unlinkat(dir, c.as_ptr(), flags) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn rels(found: &[Entry]) -> Vec<PathBuf> {
        found.iter().map(|e| e.rel.clone()).collect()
    }

    fn walk(root: &Path, protect: &Protect) -> Result<Vec<Entry>, String> {
        let dir = std::fs::File::open(root).unwrap();
        existing(dir.as_fd(), protect)
    }

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
        let found = walk(root, &Protect::default()).unwrap();
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
        assert_eq!(rels(&found), want);
    }

    #[test]
    fn a_directory_git_would_take_for_a_git_dir_is_protected_whatever_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [
            "sep/objects",
            "sep/refs",
            "bare.git/objects",
            "bare.git/refs",
            "half/objects",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["sep/HEAD", "bare.git/HEAD", "half/HEAD"] {
            std::fs::write(root.join(f), "ref: refs/heads/main\n").unwrap();
        }
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(root.join("wt/HEAD"), "x").unwrap();
        std::fs::write(root.join("wt/commondir"), "../sep").unwrap();
        let found = walk(root, &Protect::default()).unwrap();
        assert_eq!(
            rels(&found),
            ["bare.git", "sep", "wt"].map(PathBuf::from).to_vec(),
            "`half` lacks refs/ and is an ordinary directory"
        );
        let open = Protect {
            extra: Vec::new(),
            writable: vec!["sep".into()],
        };
        assert_eq!(
            rels(&walk(root, &open).unwrap()),
            ["bare.git", "wt"].map(PathBuf::from).to_vec()
        );
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
        assert_eq!(
            rels(&walk(root, &protect).unwrap()),
            [PathBuf::from("conf/secrets")]
        );
    }

    #[test]
    fn removal_goes_through_the_held_parent_and_never_follows_a_swap() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let decoy = dir.path().join("decoy");
        std::fs::create_dir_all(root.join("d/.git/objects")).unwrap();
        std::fs::write(root.join("d/.git/config"), "x").unwrap();
        std::fs::create_dir_all(decoy.join(".git")).unwrap();
        std::fs::write(decoy.join(".git/config"), "mine").unwrap();
        let found = walk(&root, &Protect::default()).unwrap();
        assert_eq!(rels(&found), [PathBuf::from("d/.git")]);
        // `d` is swapped for a symlink to the decoy after the walk: the held parent is the
        // old `d`, so the removal acts there, never in the decoy.
        std::fs::rename(root.join("d"), dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&decoy, root.join("d")).unwrap();
        assert!(remove(&found[0]).unwrap());
        assert_eq!(
            std::fs::read_to_string(decoy.join(".git/config")).unwrap(),
            "mine"
        );
        assert!(!dir.path().join("moved/.git").exists());
        // A name that now refers to something else is left alone.
        std::fs::create_dir_all(root.join("e/.git")).unwrap();
        let found = walk(&root, &Protect::default()).unwrap();
        let e = found.iter().find(|f| f.rel == Path::new("e/.git")).unwrap();
        // (Moved aside, not removed: a removed inode's number could be reused at once.)
        std::fs::rename(root.join("e/.git"), root.join("e/aside")).unwrap();
        std::fs::write(root.join("e/.git"), "other").unwrap();
        assert!(!remove(e).unwrap());
        assert!(root.join("e/.git").exists());
    }

    #[test]
    fn a_walk_never_enters_a_symlinked_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let decoy = dir.path().join("decoy");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(decoy.join(".git")).unwrap();
        std::os::unix::fs::symlink(&decoy, root.join("link")).unwrap();
        assert!(walk(&root, &Protect::default()).unwrap().is_empty());
    }

    #[test]
    fn created_entries_are_the_ones_not_there_before() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/.git")).unwrap();
        let before: BTreeSet<_> = walk(root, &Protect::default())
            .unwrap()
            .iter()
            .map(|e| e.identity)
            .collect();
        std::fs::create_dir_all(root.join("b/.cargo")).unwrap();
        std::fs::write(root.join("b/.cargo/config.toml"), "").unwrap();
        let fd = std::fs::File::open(root).unwrap();
        let new = created(fd.as_fd(), &Protect::default(), &before).unwrap();
        assert_eq!(rels(&new), [PathBuf::from("b/.cargo/config.toml")]);
    }
}
