//! Every protected path below a writable root, at any depth (K2), found and removed by
//! descriptor, for the exec side.
//!
//! Programs are held by bind mounts, which need concrete paths: a nested repository's
//! `vendor/x/.git`, a crate's `crates/a/.cargo/config.toml`, a `rust-toolchain.toml` in a
//! subdirectory are protected as much as the ones at the root (the tools look for them in
//! every ancestor of their working directory). So is any directory git would take for a git
//! directory whatever its name (`ambient::is_git_dir`), the root itself included.
//!
//! The walk never goes by path. It starts at the root's held descriptor and opens each
//! directory relative to its parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, so a
//! directory swapped for a symbolic link while it walks (by a program running beside it) is
//! not entered: the walk cannot leave the root. It opens only what the listing says is a
//! directory, and records the inode number of every entry it lists (no `stat` per file). A
//! directory that cannot be listed is an error, never skipped: what is below it could not be
//! held; one deeper than the walk follows is held read-only whole.
//!
//! The clean-up after a run removes what the run created and nothing that existed before it
//! (by inode): `remove` works by `unlinkat` relative to the held parent, a directory's
//! contents through its own descriptor (as std's `remove_dir_all` does since CVE-2022-21658),
//! after checking that the name still refers to the entry that was found (device and inode);
//! a directory that existed and was made a git directory is disarmed, not deleted; what
//! existed and was moved to a protected name is renamed aside.
//!
//! What it does not do: decide what is protected (`protect`), or bind anything (`confine`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::fs::ambient;
use crate::fs::protect::Protect;

/// Deepest directory the walk enters: a directory deeper than this is held read-only whole
/// (`Walk::too_deep`), not followed down the stack, and removal stops there.
pub(super) const MAX_DEPTH: usize = 512;

/// A protected entry, held through its parent directory.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    parent: Arc<OwnedFd>,
    name: OsString,
    /// Relative to the root: for messages.
    pub rel: PathBuf,
    /// Device and inode when found (a symlink's own, never its target's).
    pub identity: (u64, u64),
}

impl Entry {
    /// `name` in `dir` as it is now, or `None` if it is gone.
    pub(super) fn at(dir: &Arc<OwnedFd>, name: OsString, rel: PathBuf) -> Option<Entry> {
        let identity = identity_at(dir.as_raw_fd(), &name)?;
        Some(Entry {
            parent: dir.clone(),
            name,
            rel,
            identity,
        })
    }

    /// `/proc/self/fd/P/NAME`: the entry through its held parent, one name below it, however
    /// deep it lies and whatever was renamed above it since (for binding).
    pub(crate) fn proc_path(&self) -> PathBuf {
        Path::new(&format!("/proc/self/fd/{}", self.parent.as_raw_fd())).join(&self.name)
    }
}

/// What a walk of a writable root found.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// The topmost protected entries below the root, sorted by path.
    pub protected: Vec<Entry>,
    /// Directories deeper than `MAX_DEPTH`: what is below them is not looked at, so they are
    /// held read-only whole.
    pub too_deep: Vec<Entry>,
    /// The root itself is a directory git takes for a git directory (and the grant does not
    /// open it): everything in it is protected.
    pub root_is_git_dir: bool,
    /// The root's own entries that make it a git directory, with their identities.
    pub(super) root_markers: Vec<(OsString, (u64, u64))>,
    /// The inode number of every entry seen (from the directory listings, no `stat`): after
    /// a run, an entry whose inode was seen before existed before the run.
    pub(super) seen: Seen,
}

/// The inodes a walk saw: its own set, or (for a walk from `walk_index`) the index's map of
/// inodes to the generation that first listed them, up to the walk's generation.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    own: HashSet<u64>,
    shared: Option<(FirstSeen, u64)>,
}

/// Inodes, each with the generation of the walk that first listed it (`walk_index`).
pub(crate) type FirstSeen = Arc<RwLock<HashMap<u64, u64>>>;

impl Seen {
    pub(super) fn shared(map: FirstSeen, generation: u64) -> Seen {
        Seen {
            own: HashSet::new(),
            shared: Some((map, generation)),
        }
    }

    pub(crate) fn contains(&self, ino: &u64) -> bool {
        self.own.contains(ino)
            || self.shared.as_ref().is_some_and(|(map, generation)| {
                map.read()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(ino)
                    .is_some_and(|g| g <= generation)
            })
    }
}

impl Walk {
    /// The identities of the protected entries (what a later walk compares against).
    pub(crate) fn identities(&self) -> BTreeSet<(u64, u64)> {
        self.protected.iter().map(|e| e.identity).collect()
    }
}

/// Walks everything below `root` (held), finding the topmost protected entries: paths
/// `protect` covers, and directories git would take for git directories whatever their name.
pub(crate) fn existing(root: BorrowedFd<'_>, protect: &Protect) -> Result<Walk, String> {
    let root = Arc::new(dup(root.as_raw_fd()).map_err(|e| format!("the mount: {e}"))?);
    let mut walk = Walk::default();
    let root_names = list(&root).map_err(|e| unlistable(Path::new(""), &e))?;
    let has = |names: &[Listed], n: &str| names.iter().any(|l| l.name == n);
    if ambient::is_git_dir(|n| has(&root_names, n)) && !protect.opens(Path::new("")) {
        walk.root_is_git_dir = true;
    }
    walk.root_markers = ambient::GIT_DIR_MARKERS
        .iter()
        .filter_map(|m| {
            Some((
                OsString::from(m),
                identity_at(root.as_raw_fd(), OsStr::new(m))?,
            ))
        })
        .collect();
    // (directory, its listing, its path below the root, depth); the root first.
    let mut dirs: Vec<(Arc<OwnedFd>, Vec<Listed>, PathBuf, usize)> =
        vec![(root, root_names, PathBuf::new(), 0)];
    while let Some((dir, names, rel, depth)) = dirs.pop() {
        for listed in names {
            walk.seen.own.insert(listed.ino);
            // Its parent is not protected (the walk stops at protected entries), so only a
            // name that ends a rule can be (most names are let through by one comparison per
            // rule, without building their path).
            if protect.could_cover_last(&listed.name) {
                let child = rel.join(&listed.name);
                if protect.covers(&child) {
                    walk.protected.extend(Entry::at(&dir, listed.name, child));
                    continue;
                }
            }
            // The listing's type: files are not opened (a symlink is never entered). An
            // unknown type (some filesystems) is opened, and refused if not a directory.
            if !matches!(listed.kind, Listing::Dir | Listing::Unknown) {
                continue;
            }
            let child = rel.join(&listed.name);
            let sub = match open_dir_at(dir.as_raw_fd(), &listed.name) {
                Ok(sub) => sub,
                // Not a directory (or no longer one: a swap for a symlink lands here too).
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(unlistable(&child, &e)),
            };
            if depth + 1 > MAX_DEPTH {
                walk.too_deep.extend(Entry::at(&dir, listed.name, child));
                continue;
            }
            let sub = Arc::new(sub);
            let sub_names = list(&sub).map_err(|e| unlistable(&child, &e))?;
            if ambient::is_git_dir(|n| has(&sub_names, n)) && !protect.opens(&child) {
                walk.protected.extend(Entry::at(&dir, listed.name, child));
                continue;
            }
            dirs.push((sub, sub_names, child, depth + 1));
        }
    }
    walk.protected.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(walk)
}

/// What a run left that must not stay, found by comparing a walk after it with `before`.
pub(crate) struct Created {
    /// Protected entries that were not there (by identity) before the run.
    pub entries: Vec<Entry>,
    /// The root became a git directory: its markers that were not there before.
    pub root_markers: Vec<Entry>,
    /// Directories created deeper than the walk follows: not looked into.
    pub too_deep: Vec<PathBuf>,
}

/// The protected entries of `now` (a walk of `root` after a run) that were not there (by
/// identity) in `before`.
pub(crate) fn created(root: BorrowedFd<'_>, now: Walk, before: &Walk) -> Result<Created, String> {
    let protected_before = before.identities();
    let entries = now
        .protected
        .into_iter()
        .filter(|entry| !protected_before.contains(&entry.identity))
        .collect();
    let mut root_markers = Vec::new();
    if now.root_is_git_dir && !before.root_is_git_dir {
        let held = Arc::new(dup(root.as_raw_fd()).map_err(|e| format!("the mount: {e}"))?);
        for (name, identity) in &now.root_markers {
            if !before.root_markers.contains(&(name.clone(), *identity)) {
                root_markers.extend(Entry::at(&held, name.clone(), PathBuf::from(name)));
            }
        }
    }
    let deep_before: BTreeSet<(u64, u64)> = before.too_deep.iter().map(|e| e.identity).collect();
    let too_deep = now
        .too_deep
        .into_iter()
        .filter(|e| !deep_before.contains(&e.identity))
        .map(|e| e.rel)
        .collect();
    Ok(Created {
        entries,
        root_markers,
        too_deep,
    })
}

/// What `remove` did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Gone, with everything in it.
    Removed,
    /// Something else stands at its name now: left alone.
    Replaced,
    /// A directory that existed before the run, which the run made a git directory: the
    /// entries that make it one and that the run created were removed (or, if they existed
    /// before too, `HEAD` renamed aside); nothing else in it was touched.
    Disarmed,
    /// It existed before the run, or held entries that did (moved into it): nothing of that
    /// was deleted; it was renamed to the name given, which no tool reads, and if it is a git
    /// directory its `HEAD` was set aside too.
    KeptAside(OsString),
}

/// Removes `entry` (a directory with everything in it), if its name still refers to it,
/// never deleting anything whose inode `before` saw (existed before the run):
/// - a directory that existed before and is now a git directory by what it holds is
///   disarmed: only the markers the run created go;
/// - an entry that existed before (moved to a protected name), or one that holds such
///   entries, is renamed aside, beside it, instead of deleted.
pub(crate) fn remove(entry: &Entry, before: &Walk) -> std::io::Result<Removal> {
    let parent = entry.parent.as_raw_fd();
    let Some(now) = identity_at(parent, &entry.name) else {
        return Ok(Removal::Replaced);
    };
    if now != entry.identity {
        return Ok(Removal::Replaced);
    }
    let existed = before.seen.contains(&entry.identity.1);
    if existed && !is_protected_name(entry) {
        // Protected only by what it holds now (a git directory by content).
        let dir = open_dir_at(parent, &entry.name)?;
        disarm_git_dir(&dir, &before.seen)?;
        return Ok(Removal::Disarmed);
    }
    if !existed && remove_at(parent, &entry.name, 0, &before.seen)? {
        return Ok(Removal::Removed);
    }
    let aside = set_aside(parent, &entry.name)?;
    if let Ok(dir) = open_dir_at(parent, &aside) {
        disarm_git_dir(&dir, &before.seen)?;
    }
    Ok(Removal::KeptAside(aside))
}

/// Why `entry` is protected, in a few words for a message.
pub(crate) fn why(entry: &Entry) -> &'static str {
    let names: Vec<&OsStr> = entry.rel.iter().collect();
    ambient::why(&names).unwrap_or(
        "git takes it for a git directory, or the preset protects it, and would run what it names",
    )
}

/// Is `entry` protected by its name (rather than by what it holds)?
fn is_protected_name(entry: &Entry) -> bool {
    let names: Vec<&OsStr> = entry.rel.iter().collect();
    ambient::names_a_tool_config(&names)
}

/// Makes `dir` no longer a git directory, if it is one, deleting only what the run created:
/// every entry git reads from a git directory (`HEAD`, `commondir`, `config`, `hooks`, ...)
/// whose inode was not seen before goes, so nothing planted waits for a later `HEAD`; if it
/// is still a git directory after that, `HEAD` is renamed aside.
fn disarm_git_dir(dir: &OwnedFd, seen: &Seen) -> std::io::Result<()> {
    let fd = dir.as_raw_fd();
    let has = |n: &str| stat_at(fd, OsStr::new(n)).is_some();
    if !ambient::is_git_dir(has) {
        return Ok(());
    }
    for marker in ambient::GIT_DIR_ENTRIES {
        let name = OsStr::new(marker);
        if stat_at(fd, name).is_some_and(|s| !seen.contains(&s.st_ino)) {
            remove_at(fd, name, 0, seen)?;
        }
    }
    if !ambient::is_git_dir(has) {
        return Ok(());
    }
    set_aside(fd, OsStr::new("HEAD")).map(|_| ())
}

/// Renames `name` in `dir` to `NAME.paddock-kept-N`, the first such name that is free.
/// By the system call, through rustix: the static (musl) build's C library has no
/// `renameat2`.
fn set_aside(dir: RawFd, name: &OsStr) -> std::io::Result<OsString> {
    // SAFETY: `dir` is a descriptor the caller holds open for the length of this call.
    let dir = unsafe { std::os::fd::BorrowedFd::borrow_raw(dir) };
    for n in 1..1000 {
        let mut aside = name.to_os_string();
        aside.push(format!(".paddock-kept-{n}"));
        // NOREPLACE never overwrites: a taken name is tried again with the next number.
        match rustix::fs::renameat_with(dir, name, dir, &aside, rustix::fs::RenameFlags::NOREPLACE)
        {
            Ok(()) => return Ok(aside),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(std::io::Error::other("no free name to set it aside"))
}

/// Removes `name` in `dir`: a file or symlink at once, a directory after its contents;
/// anything whose inode is in `keep` stays, and so do the directories above it. `Ok(true)`
/// when `name` is gone.
fn remove_at(dir: RawFd, name: &OsStr, depth: usize, keep: &Seen) -> std::io::Result<bool> {
    let Some(stat) = stat_at(dir, name) else {
        return Ok(true);
    };
    if keep.contains(&stat.st_ino) {
        return Ok(false);
    }
    if stat.st_mode & libc::S_IFMT != libc::S_IFDIR {
        return match unlink_at(dir, name, 0) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(true),
            Err(e) => Err(e),
        };
    }
    if depth >= MAX_DEPTH {
        return Err(std::io::Error::other("too deep to remove"));
    }
    let sub = match open_dir_at(dir, name) {
        Ok(sub) => sub,
        // Swapped for something that is not a directory: unlink that instead.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
            unlink_at(dir, name, 0)?;
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    let mut all = true;
    for child in list(&sub)? {
        all &= remove_at(sub.as_raw_fd(), &child.name, depth + 1, keep)?;
    }
    if !all {
        return Ok(false);
    }
    unlink_at(dir, name, libc::AT_REMOVEDIR)?;
    Ok(true)
}

/// A name in a listing, with what the listing says of it.
pub(super) struct Listed {
    pub(super) name: OsString,
    pub(super) ino: u64,
    pub(super) kind: Listing,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Listing {
    Dir,
    Other,
    Unknown,
}

/// The names in a held directory (`.` and `..` left out), with their inode numbers and types
/// as the listing gives them (no `stat` per entry), read through the descriptor itself.
pub(super) fn list(dir: &OwnedFd) -> std::io::Result<Vec<Listed>> {
    use rustix::fs::FileType;
    let mut entries = rustix::fs::Dir::read_from(dir)?;
    let mut out = Vec::new();
    while let Some(entry) = entries.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        out.push(Listed {
            name: OsStr::from_bytes(name).to_os_string(),
            ino: entry.ino(),
            kind: match entry.file_type() {
                FileType::Directory => Listing::Dir,
                FileType::Unknown => Listing::Unknown,
                _ => Listing::Other,
            },
        });
    }
    Ok(out)
}

pub(super) fn unlistable(rel: &Path, error: &std::io::Error) -> String {
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

pub(crate) fn c_name(name: &OsStr) -> std::io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

pub(crate) fn dup(fd: RawFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor or -1.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new == -1 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor only we hold.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Opens the directory `name` in `dir` without following a symlink.
pub(crate) fn open_dir_at(dir: RawFd, name: &OsStr) -> std::io::Result<OwnedFd> {
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
pub(crate) fn stat_at(dir: RawFd, name: &OsStr) -> Option<libc::stat> {
    let c = c_name(name).ok()?;
    // SAFETY: a valid C string and an out pointer to zeroed memory.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a valid C string, and an out pointer to memory we own.
    let ret = unsafe { libc::fstatat(dir, c.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW) };
    (ret == 0).then_some(stat)
}

pub(super) fn identity_at(dir: RawFd, name: &OsStr) -> Option<(u64, u64)> {
    stat_at(dir, name).map(|s| (s.st_dev, s.st_ino))
}

pub(crate) fn unlink_at(dir: RawFd, name: &OsStr, flags: libc::c_int) -> std::io::Result<()> {
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
        full(root, protect).map(|w| w.protected)
    }

    fn full(root: &Path, protect: &Protect) -> Result<Walk, String> {
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
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::create_dir_all(decoy.join(".git")).unwrap();
        std::fs::write(decoy.join(".git/config"), "mine").unwrap();
        let before = full(&root, &Protect::default()).unwrap();
        std::fs::create_dir_all(root.join("d/.git/objects")).unwrap();
        std::fs::write(root.join("d/.git/config"), "x").unwrap();
        let found = walk(&root, &Protect::default()).unwrap();
        assert_eq!(rels(&found), [PathBuf::from("d/.git")]);
        // `d` is swapped for a symlink to the decoy after the walk: the held parent is the
        // old `d`, so the removal acts there, never in the decoy.
        std::fs::rename(root.join("d"), dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&decoy, root.join("d")).unwrap();
        assert_eq!(remove(&found[0], &before).unwrap(), Removal::Removed);
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
        assert_eq!(remove(e, &before).unwrap(), Removal::Replaced);
        assert!(root.join("e/.git").exists());
    }

    /// git's own test is `access(X_OK)`: a symlink or an executable file passes it as well
    /// as a directory does, so the names decide, whatever their type.
    #[test]
    fn a_git_dir_with_linked_or_file_objects_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("store/objects")).unwrap();
        for d in ["a/refs", "b/refs", "c"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("../store/objects", root.join("a/objects")).unwrap();
        std::fs::write(root.join("b/objects"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("/nowhere", root.join("c/refs")).unwrap();
        std::os::unix::fs::symlink("/nowhere", root.join("c/objects")).unwrap();
        for d in ["a", "b", "c"] {
            std::fs::write(root.join(d).join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        assert_eq!(
            rels(&walk(root, &Protect::default()).unwrap()),
            ["a", "b", "c"].map(PathBuf::from).to_vec()
        );
    }

    #[test]
    fn the_root_itself_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(!full(root, &Protect::default()).unwrap().root_is_git_dir);
        std::fs::create_dir(root.join("refs")).unwrap();
        std::fs::write(root.join("objects"), "").unwrap();
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(full(root, &Protect::default()).unwrap().root_is_git_dir);
    }

    /// `git init --bare data` over a directory of the user's files: the clean-up removes only
    /// what made it a git directory and was created by the run; every file of the user stays.
    #[test]
    fn a_directory_that_existed_is_disarmed_never_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("data/nested/.git")).unwrap();
        std::fs::write(root.join("data/rows.csv"), "1,2\n").unwrap();
        std::fs::write(root.join("data/nested/.git/config"), "mine").unwrap();
        let before = full(root, &Protect::default()).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "--quiet", "--bare", "data"])
            .current_dir(root)
            .status();
        if !git.is_ok_and(|s| s.success()) {
            for d in ["data/objects", "data/refs"] {
                std::fs::create_dir_all(root.join(d)).unwrap();
            }
            std::fs::write(root.join("data/HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        let fd = std::fs::File::open(root).unwrap();
        let now = existing(fd.as_fd(), &Protect::default()).unwrap();
        let new = created(fd.as_fd(), now, &before).unwrap();
        assert_eq!(rels(&new.entries), [PathBuf::from("data")]);
        assert_eq!(remove(&new.entries[0], &before).unwrap(), Removal::Disarmed);
        assert_eq!(
            std::fs::read_to_string(root.join("data/rows.csv")).unwrap(),
            "1,2\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("data/nested/.git/config")).unwrap(),
            "mine"
        );
        for planted in ["HEAD", "config", "objects", "refs"] {
            assert!(
                !root.join("data").join(planted).exists(),
                "data/{planted} is left"
            );
        }
        assert!(
            walk(root, &Protect::default())
                .unwrap()
                .iter()
                .all(|e| e.rel != Path::new("data"))
        );
    }

    /// An entry that existed before, moved by the run to a protected name (or into a created
    /// protected directory), is renamed aside, never deleted.
    #[test]
    fn what_existed_and_was_moved_into_a_protected_place_is_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("notes.txt"), "mine").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/precious"), "keep").unwrap();
        let before = full(root, &Protect::default()).unwrap();
        std::fs::rename(root.join("notes.txt"), root.join("rust-toolchain.toml")).unwrap();
        std::fs::create_dir_all(root.join("x/.git/objects")).unwrap();
        std::fs::create_dir_all(root.join("x/.git/refs")).unwrap();
        std::fs::write(root.join("x/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::rename(root.join("sub/precious"), root.join("x/.git/precious")).unwrap();
        std::fs::create_dir_all(root.join("y/.git")).unwrap();
        let fd = std::fs::File::open(root).unwrap();
        let now = existing(fd.as_fd(), &Protect::default()).unwrap();
        let new = created(fd.as_fd(), now, &before).unwrap();
        let outcomes: Vec<_> = new
            .entries
            .iter()
            .map(|e| (e.rel.clone(), remove(e, &before).unwrap()))
            .collect();
        assert_eq!(
            outcomes,
            [
                (
                    PathBuf::from("rust-toolchain.toml"),
                    Removal::KeptAside("rust-toolchain.toml.paddock-kept-1".into())
                ),
                (
                    PathBuf::from("x/.git"),
                    Removal::KeptAside(".git.paddock-kept-1".into())
                ),
                (PathBuf::from("y/.git"), Removal::Removed),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.join("rust-toolchain.toml.paddock-kept-1")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("x/.git.paddock-kept-1/precious")).unwrap(),
            "keep"
        );
        assert!(
            !root.join("x/.git.paddock-kept-1/HEAD").exists(),
            "disarmed"
        );
        assert!(walk(root, &Protect::default()).unwrap().is_empty());
    }

    /// A tree deeper than the walk follows is held whole, not an error for every run.
    #[test]
    fn a_directory_too_deep_to_walk_is_held_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Made through a held descriptor, one level at a time: the path is too long to name.
        let mut fd = std::fs::File::open(root).unwrap();
        for _ in 0..MAX_DEPTH + 5 {
            let c = c_name(OsStr::new("d")).unwrap();
            // SAFETY: a valid C string and a descriptor we hold.
            let made = unsafe { libc::mkdirat(fd.as_raw_fd(), c.as_ptr(), 0o755) };
            assert_eq!(made, 0);
            let next = open_dir_at(fd.as_raw_fd(), OsStr::new("d")).unwrap();
            fd = std::fs::File::from(next);
        }
        let w = full(root, &Protect::default()).unwrap();
        assert_eq!(w.too_deep.len(), 1);
        assert_eq!(w.too_deep[0].rel.iter().count(), MAX_DEPTH + 1);
        assert!(
            w.too_deep[0].proc_path().exists(),
            "bindable through its parent"
        );
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
        let before = full(root, &Protect::default()).unwrap();
        std::fs::create_dir_all(root.join("b/.cargo")).unwrap();
        std::fs::write(root.join("b/.cargo/config.toml"), "").unwrap();
        let fd = std::fs::File::open(root).unwrap();
        let now = existing(fd.as_fd(), &Protect::default()).unwrap();
        let new = created(fd.as_fd(), now, &before).unwrap();
        assert_eq!(rels(&new.entries), [PathBuf::from("b/.cargo/config.toml")]);
    }
}
