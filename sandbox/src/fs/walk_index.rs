//! A writable root's directories, kept true between runs by inotify (K2), so that the walk
//! before and after each run costs what changed, not the size of the tree.
//!
//! The first walk of a root in a process lists every directory (as `protect_walk::existing`
//! does) and puts an inotify watch on each. Each later walk reads the events since and lists
//! again only the directories they name: a created, removed or renamed entry always makes an
//! event on the directory that holds it, whichever process made it and through whichever
//! mount (watches are on inodes). What is derived from a listing (its protected entries, its
//! subdirectories, whether git would take it for a git directory) is kept per directory.
//!
//! It never guesses. Any of these drops the index and the next walk starts again in full: the
//! event queue overflowed; a directory was moved (its path below the root changed, and with it
//! every path below it); a directory re-opened by its names from the root is not the inode
//! recorded there. A root on a filesystem whose changes inotify may not see (network and
//! FUSE filesystems, overlays), whose tree spans more than one device, or that has more
//! directories than a quarter of the inotify watches the user may have (their editor needs
//! the rest) is not indexed at all: every walk is a full one, as without this module.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use crate::fs::ambient;
use crate::fs::protect::Protect;
use crate::fs::protect_walk::{
    self, Entry, FirstSeen, Listed, Listing, MAX_DEPTH, Seen, Walk, dup, identity_at, list,
    open_dir_at, unlistable,
};

/// Roots indexed at once in a process, at most (the oldest goes first).
const MAX_INDEXES: usize = 8;

/// Filesystems whose every change to a directory makes an inotify event there.
const LOCAL_FILESYSTEMS: [i64; 5] = [
    0xEF53,      // ext2/3/4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0xF2F5_2010, // f2fs
];

type Key = (u64, u64, String);

#[cfg(test)]
thread_local! {
    /// Full builds made by this thread (for the tests: a change must not cost one).
    static BUILDS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A root's index, made on its first walk.
type Slot = Arc<Mutex<State>>;

enum State {
    /// Not made yet, or dropped: the next walk makes it.
    Untried,
    Indexed(Index),
    /// It could not be made (another device below, too many directories for the watches
    /// this user may have): every walk of this root is a full one.
    Unindexable,
}

/// Directories one index may watch: a quarter of what the user may watch in all
/// (`fs.inotify.max_user_watches`, shared with their editor's file watching), at most 65,536.
fn max_watches() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map_or(0, |n| (n / 4).min(65_536))
    })
}

static INDEXES: Mutex<Vec<(Key, Slot)>> = Mutex::new(Vec::new());

/// `protect_walk::existing`, from `root`'s index when it can have one (made on the first
/// call), else in full.
pub(crate) fn existing(root: BorrowedFd<'_>, protect: &Protect) -> Result<Walk, String> {
    indexed(root, protect).unwrap_or_else(|| protect_walk::existing(root, protect))
}

/// The walk of `root` for `protect`, from its index when it has one (made on the first call).
/// `None`: this root is not indexed (see the module comment); walk it in full.
fn indexed(root: BorrowedFd<'_>, protect: &Protect) -> Option<Result<Walk, String>> {
    let stat = fstat(root.as_raw_fd())?;
    if !is_local(root.as_raw_fd()) {
        return None;
    }
    let key = (stat.st_dev, stat.st_ino, format!("{protect:?}"));
    let slot = {
        let mut all = INDEXES.lock().unwrap_or_else(|e| e.into_inner());
        match all.iter().position(|(k, _)| *k == key) {
            Some(i) => all[i].1.clone(),
            None => {
                if all.len() == MAX_INDEXES {
                    all.remove(0);
                }
                let slot = Arc::new(Mutex::new(State::Untried));
                all.push((key, slot.clone()));
                slot
            }
        }
    };
    let mut state = slot.lock().unwrap_or_else(|e| e.into_inner());
    match &mut *state {
        State::Unindexable => return None,
        State::Indexed(current) => {
            match current
                .refresh(protect)
                .and_then(|()| current.walk(protect))
            {
                Ok(walk) => return Some(Ok(walk)),
                Err(Refresh::Again) => *state = State::Untried,
                Err(Refresh::Failed(e)) => {
                    *state = State::Untried;
                    return Some(Err(e));
                }
            }
        }
        State::Untried => {}
    }
    match Index::build(root, stat.st_dev, protect) {
        Ok(Some(built)) => match built.walk(protect) {
            Ok(walk) => {
                *state = State::Indexed(built);
                Some(Ok(walk))
            }
            Err(_) => None,
        },
        Ok(None) => {
            *state = State::Unindexable;
            None
        }
        Err(e) => Some(Err(e)),
    }
}

/// Why a refresh did not bring the index up to date.
enum Refresh {
    /// Start again from a full walk.
    Again,
    /// A directory could not be listed: the walk fails as a full one would.
    Failed(String),
}

/// One directory of the tree, as its last listing showed it.
struct Dir {
    /// Its name in its parent, and the parent's inode (`None` for the root).
    name: OsString,
    parent: Option<u64>,
    rel: PathBuf,
    depth: usize,
    wd: i32,
    /// The listing, as `protect_walk::list` gives it.
    listing: Vec<Listed>,
    /// Held while it has protected or too-deep entries (they are bound through it).
    fd: Option<Arc<OwnedFd>>,
    /// Git would take it for a git directory (`ambient::is_git_dir`, by its names).
    git_dir: bool,
    /// Its subdirectories that are indexed, by name.
    subdirs: Vec<(OsString, u64)>,
    /// Entries that are protected by their path (`protect.covers`).
    protected: Vec<OsString>,
    /// Subdirectories deeper than the walk follows.
    too_deep: Vec<OsString>,
}

impl Dir {
    /// A directory as just listed, at `place` (its name, parent, path and depth), before
    /// `derive` sorts its listing.
    fn listed(
        place: (OsString, Option<u64>, PathBuf, usize),
        wd: i32,
        listing: Vec<Listed>,
        fd: Arc<OwnedFd>,
    ) -> Dir {
        let (name, parent, rel, depth) = place;
        Dir {
            name,
            parent,
            rel,
            depth,
            wd,
            listing,
            fd: Some(fd),
            git_dir: false,
            subdirs: Vec::new(),
            protected: Vec::new(),
            too_deep: Vec::new(),
        }
    }
}

struct Index {
    inotify: OwnedFd,
    root: Arc<OwnedFd>,
    root_ino: u64,
    device: u64,
    dirs: HashMap<u64, Dir>,
    by_wd: HashMap<i32, u64>,
    /// Every inode listed, with the generation that first listed it: a walk of generation
    /// `g` has seen exactly those of generation `g` or less.
    seen: FirstSeen,
    generation: u64,
}

impl Index {
    /// Lists the whole tree below `root`, watching each directory. `Ok(None)`: it cannot be
    /// indexed (a directory on another device, no inotify watches left).
    fn build(
        root: BorrowedFd<'_>,
        device: u64,
        protect: &Protect,
    ) -> Result<Option<Index>, String> {
        #[cfg(test)]
        BUILDS.with(|b| b.set(b.get() + 1));
        // SAFETY: plain flags; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd == -1 {
            return Ok(None);
        }
        // SAFETY: a fresh descriptor only we hold.
        let inotify = unsafe { OwnedFd::from_raw_fd(fd) };
        let root = Arc::new(dup(root.as_raw_fd()).map_err(|e| format!("the mount: {e}"))?);
        let Some(stat) = fstat(root.as_raw_fd()) else {
            return Ok(None);
        };
        let mut index = Index {
            inotify,
            root: root.clone(),
            root_ino: stat.st_ino,
            device,
            dirs: HashMap::new(),
            by_wd: HashMap::new(),
            seen: Arc::new(RwLock::new(HashMap::new())),
            generation: 1,
        };
        match index.add_tree(root, OsString::new(), None, PathBuf::new(), 0, protect) {
            Ok(()) => Ok(Some(index)),
            Err(Refresh::Again) => Ok(None),
            Err(Refresh::Failed(e)) => Err(e),
        }
    }

    /// Indexes the directory `fd` (named `name` in `parent`) and everything below it that the
    /// walk follows.
    fn add_tree(
        &mut self,
        fd: Arc<OwnedFd>,
        name: OsString,
        parent: Option<u64>,
        rel: PathBuf,
        depth: usize,
        protect: &Protect,
    ) -> Result<(), Refresh> {
        let mut stack = vec![(fd, name, parent, rel, depth)];
        while let Some((fd, name, parent, rel, depth)) = stack.pop() {
            let Some(stat) = fstat(fd.as_raw_fd()) else {
                return Err(Refresh::Again);
            };
            if stat.st_dev != self.device
                || self.dirs.contains_key(&stat.st_ino)
                || self.dirs.len() >= max_watches()
            {
                // Another filesystem mounted below, or one directory at two places (a bind
                // mount): inode numbers do not name directories here. Or more directories
                // than this index may watch.
                return Err(Refresh::Again);
            }
            let wd = self.watch(&fd)?;
            let listing = list(&fd).map_err(|e| Refresh::Failed(unlistable(&rel, &e)))?;
            self.note_seen(&listing);
            let mut dir = Dir::listed((name, parent, rel, depth), wd, listing, fd);
            let below = derive(&mut dir, protect)?;
            let ino = stat.st_ino;
            for (sub_name, sub_fd) in below {
                let sub_rel = dir.rel.join(&sub_name);
                let sub_ino = fstat(sub_fd.as_raw_fd()).map_or(0, |s| s.st_ino);
                dir.subdirs.push((sub_name.clone(), sub_ino));
                stack.push((Arc::new(sub_fd), sub_name, Some(ino), sub_rel, depth + 1));
            }
            if dir.protected.is_empty() && dir.too_deep.is_empty() && dir.parent.is_some() {
                dir.fd = None;
            }
            self.by_wd.insert(wd, ino);
            self.dirs.insert(ino, dir);
        }
        Ok(())
    }

    fn watch(&self, fd: &OwnedFd) -> Result<i32, Refresh> {
        let path = std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|_| Refresh::Again)?;
        let mask = libc::IN_CREATE
            | libc::IN_DELETE
            | libc::IN_MOVED_FROM
            | libc::IN_MOVED_TO
            | libc::IN_DELETE_SELF
            | libc::IN_MOVE_SELF
            | libc::IN_ONLYDIR;
        // SAFETY: a valid C string and a descriptor we hold.
        let wd = unsafe { libc::inotify_add_watch(self.inotify.as_raw_fd(), path.as_ptr(), mask) };
        if wd == -1 {
            // No watches left (fs.inotify.max_user_watches): this root is walked in full.
            return Err(Refresh::Again);
        }
        Ok(wd)
    }

    fn note_seen(&self, listing: &[Listed]) {
        let mut seen = self.seen.write().unwrap_or_else(|e| e.into_inner());
        for listed in listing {
            seen.entry(listed.ino).or_insert(self.generation);
        }
    }

    /// Reads the events since the last walk and lists again each directory they name.
    fn refresh(&mut self, protect: &Protect) -> Result<(), Refresh> {
        self.generation += 1;
        let mut dirty = BTreeSet::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: a buffer we own, its length, a descriptor we hold.
            let n =
                unsafe { libc::read(self.inotify.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            while at + 16 <= n as usize {
                let field = |o: usize| {
                    [
                        buf[at + o],
                        buf[at + o + 1],
                        buf[at + o + 2],
                        buf[at + o + 3],
                    ]
                };
                let wd = i32::from_ne_bytes(field(0));
                let mask = u32::from_ne_bytes(field(4));
                let len = u32::from_ne_bytes(field(12)) as usize;
                at += 16 + len;
                if mask & (libc::IN_Q_OVERFLOW | libc::IN_MOVE_SELF | libc::IN_UNMOUNT) != 0 {
                    return Err(Refresh::Again);
                }
                if self.by_wd.get(&wd) == Some(&self.root_ino)
                    && mask & (libc::IN_DELETE_SELF | libc::IN_IGNORED) != 0
                {
                    return Err(Refresh::Again);
                }
                if mask & libc::IN_ISDIR != 0
                    && mask & (libc::IN_MOVED_FROM | libc::IN_MOVED_TO) != 0
                {
                    return Err(Refresh::Again);
                }
                if mask & (libc::IN_IGNORED | libc::IN_DELETE_SELF) != 0 {
                    // The directory is gone: forget it now, so that a new directory that gets
                    // its inode number (and its name) is listed as new, not taken for it.
                    if let Some(ino) = self.by_wd.remove(&wd) {
                        self.forget(ino);
                    }
                    continue;
                }
                if let Some(ino) = self.by_wd.get(&wd) {
                    let depth = self.dirs.get(ino).map_or(0, |d| d.depth);
                    dirty.insert((depth, *ino));
                }
            }
        }
        // Shallow first: a directory removed with its parent's listing is not listed again.
        for (_, ino) in dirty {
            if self.dirs.contains_key(&ino) {
                self.relist(ino, protect)?;
            }
        }
        Ok(())
    }

    /// Opens the directory `ino` by its names from the root, checking each inode on the way.
    fn open(&self, ino: u64) -> Result<OwnedFd, Refresh> {
        let mut chain = Vec::new();
        let mut at = ino;
        while at != self.root_ino {
            let dir = self.dirs.get(&at).ok_or(Refresh::Again)?;
            chain.push((dir.name.clone(), at));
            at = dir.parent.ok_or(Refresh::Again)?;
        }
        let mut fd = dup(self.root.as_raw_fd()).map_err(|_| Refresh::Again)?;
        for (name, expected) in chain.into_iter().rev() {
            fd = open_dir_at(fd.as_raw_fd(), &name).map_err(|_| Refresh::Again)?;
            if fstat(fd.as_raw_fd()).is_none_or(|s| s.st_ino != expected) {
                return Err(Refresh::Again);
            }
        }
        Ok(fd)
    }

    /// Lists `ino` again: subdirectories gone are forgotten with everything below them, new
    /// ones are indexed whole.
    fn relist(&mut self, ino: u64, protect: &Protect) -> Result<(), Refresh> {
        let fd = Arc::new(self.open(ino)?);
        let Some(dir) = self.dirs.get(&ino) else {
            return Ok(());
        };
        let rel = dir.rel.clone();
        let listing = list(&fd).map_err(|e| Refresh::Failed(unlistable(&rel, &e)))?;
        self.note_seen(&listing);
        let old_subdirs: Vec<(OsString, u64)> = dir.subdirs.clone();
        let place = (dir.name.clone(), dir.parent, rel, dir.depth);
        let mut fresh = Dir::listed(place, dir.wd, listing, fd);
        let below = derive(&mut fresh, protect)?;
        let mut kept = HashSet::new();
        let mut added = Vec::new();
        for (name, sub_fd) in below {
            let sub_ino = fstat(sub_fd.as_raw_fd()).map_or(0, |s| s.st_ino);
            fresh.subdirs.push((name.clone(), sub_ino));
            let watched = self
                .dirs
                .get(&sub_ino)
                .is_some_and(|d| self.by_wd.get(&d.wd) == Some(&sub_ino));
            if old_subdirs.contains(&(name.clone(), sub_ino)) && watched {
                kept.insert(sub_ino);
            } else {
                added.push((name, sub_fd));
            }
        }
        for (_, old) in old_subdirs {
            if !kept.contains(&old) {
                self.forget(old);
            }
        }
        if fresh.protected.is_empty() && fresh.too_deep.is_empty() && fresh.parent.is_some() {
            fresh.fd = None;
        }
        let (depth, base) = (fresh.depth, fresh.rel.clone());
        self.dirs.insert(ino, fresh);
        for (name, sub_fd) in added {
            let rel = base.join(&name);
            self.add_tree(Arc::new(sub_fd), name, Some(ino), rel, depth + 1, protect)?;
        }
        Ok(())
    }

    /// Drops `ino` and everything indexed below it, and their watches.
    fn forget(&mut self, ino: u64) {
        let mut stack = vec![ino];
        while let Some(at) = stack.pop() {
            if let Some(dir) = self.dirs.remove(&at) {
                // SAFETY: a watch descriptor of our inotify instance (an error when it is
                // already gone is harmless).
                unsafe { libc::inotify_rm_watch(self.inotify.as_raw_fd(), dir.wd) };
                self.by_wd.remove(&dir.wd);
                stack.extend(dir.subdirs.iter().map(|(_, i)| *i));
            }
        }
    }

    /// The walk as `protect_walk::existing` would return it now. A directory holding a
    /// protected entry is opened by its names from the root when it is not held already.
    fn walk(&self, protect: &Protect) -> Result<Walk, Refresh> {
        let mut walk = Walk::default();
        let Some(root) = self.dirs.get(&self.root_ino) else {
            return Err(Refresh::Again);
        };
        walk.root_is_git_dir = root.git_dir && !protect.opens(Path::new(""));
        walk.root_markers = ambient::GIT_DIR_MARKERS
            .iter()
            .filter_map(|m| {
                let identity = identity_at(self.root.as_raw_fd(), OsStr::new(m))?;
                Some((OsString::from(m), identity))
            })
            .collect();
        walk.seen = Seen::shared(self.seen.clone(), self.generation);
        let mut stack = vec![self.root_ino];
        while let Some(ino) = stack.pop() {
            let Some(dir) = self.dirs.get(&ino) else {
                return Err(Refresh::Again);
            };
            let mut names: Vec<&OsString> = dir.protected.iter().collect();
            for (name, sub) in &dir.subdirs {
                let child = self.dirs.get(sub).ok_or(Refresh::Again)?;
                if child.git_dir && !protect.opens(&child.rel) {
                    names.push(name);
                } else {
                    stack.push(*sub);
                }
            }
            if names.is_empty() && dir.too_deep.is_empty() {
                continue;
            }
            let fd = match &dir.fd {
                Some(fd) => fd.clone(),
                None => Arc::new(self.open(ino)?),
            };
            for name in names {
                walk.protected
                    .extend(Entry::at(&fd, name.clone(), dir.rel.join(name)));
            }
            for name in &dir.too_deep {
                walk.too_deep
                    .extend(Entry::at(&fd, name.clone(), dir.rel.join(name)));
            }
        }
        walk.protected.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(walk)
    }
}

/// Sorts `dir`'s listing as the walk does: protected entries, directories too deep, and the
/// subdirectories to follow (opened, returned). A subdirectory that git would take for a git
/// directory is followed too, once: its own listing says so, and the walk stops there.
fn derive(dir: &mut Dir, protect: &Protect) -> Result<Vec<(OsString, OwnedFd)>, Refresh> {
    let has = |n: &str| dir.listing.iter().any(|l| l.name == n);
    dir.git_dir = ambient::is_git_dir(has);
    let Some(fd) = dir.fd.clone() else {
        return Ok(Vec::new());
    };
    let mut below = Vec::new();
    if dir.parent.is_some() && dir.git_dir && !protect.opens(&dir.rel) {
        // Protected whole by what it holds: nothing below it is followed.
        return Ok(below);
    }
    for listed in &dir.listing {
        if protect.could_cover_last(&listed.name) && protect.covers(&dir.rel.join(&listed.name)) {
            dir.protected.push(listed.name.clone());
            continue;
        }
        if !matches!(listed.kind, Listing::Dir | Listing::Unknown) {
            continue;
        }
        let sub = match open_dir_at(fd.as_raw_fd(), &listed.name) {
            Ok(sub) => sub,
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOTDIR | libc::ELOOP | libc::ENOENT)
                ) =>
            {
                continue;
            }
            Err(e) => {
                return Err(Refresh::Failed(unlistable(&dir.rel.join(&listed.name), &e)));
            }
        };
        if dir.depth + 1 > MAX_DEPTH {
            dir.too_deep.push(listed.name.clone());
            continue;
        }
        below.push((listed.name.clone(), sub));
    }
    Ok(below)
}

fn fstat(fd: i32) -> Option<libc::stat> {
    // SAFETY: an out pointer to zeroed memory and a descriptor we hold.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a descriptor we hold, and an out pointer to memory we own.
    let ret = unsafe { libc::fstat(fd, &mut stat) };
    (ret == 0).then_some(stat)
}

fn is_local(fd: i32) -> bool {
    // SAFETY: an out pointer to zeroed memory and a descriptor we hold.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above: a descriptor we hold, and an out pointer to memory we own.
    if unsafe { libc::fstatfs(fd, &mut fs) } != 0 {
        return false;
    }
    LOCAL_FILESYSTEMS.contains(&(fs.f_type as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn rels(walk: &Walk) -> (Vec<PathBuf>, Vec<PathBuf>, bool) {
        (
            walk.protected.iter().map(|e| e.rel.clone()).collect(),
            walk.too_deep.iter().map(|e| e.rel.clone()).collect(),
            walk.root_is_git_dir,
        )
    }

    /// After each change, the index's walk is the full walk, entry for entry.
    #[test]
    fn the_index_walks_as_a_full_walk_after_every_kind_of_change() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        let fd = std::fs::File::open(root).unwrap();
        let protect = Protect::default();
        for d in [
            "src/a/b",
            "data/objects",
            "data/refs",
            "vendor/x",
            "lib/g/objects",
            "lib/g/refs",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("vendor/x/.npmrc"), "").unwrap();
        std::fs::create_dir_all(outside.path().join("moved/.cargo")).unwrap();
        std::fs::write(outside.path().join("moved/.cargo/config.toml"), "").unwrap();
        let first = indexed(fd.as_fd(), &protect).expect("indexed on a local filesystem");
        let first = first.unwrap();
        assert_eq!(
            rels(&first),
            rels(&protect_walk::existing(fd.as_fd(), &protect).unwrap())
        );
        let steps: Vec<Box<dyn Fn()>> = vec![
            Box::new(|| std::fs::create_dir_all(root.join("src/a/b/c/.git")).unwrap()),
            Box::new(|| std::fs::write(root.join("data/HEAD"), "ref: x\n").unwrap()),
            Box::new(|| std::fs::write(root.join("src/a/rust-toolchain.toml"), "").unwrap()),
            Box::new(|| {
                std::fs::rename(outside.path().join("moved"), root.join("src/moved")).unwrap()
            }),
            Box::new(|| std::fs::remove_file(root.join("data/HEAD")).unwrap()),
            Box::new(|| std::fs::create_dir_all(root.join("data/objects/deep/.hg")).unwrap()),
            Box::new(|| std::fs::remove_dir_all(root.join("src/a")).unwrap()),
            Box::new(|| std::fs::write(root.join("lib/g/HEAD"), "ref: x\n").unwrap()),
            Box::new(|| {
                // Gone and made again at once (often with the same inode number).
                std::fs::remove_dir_all(root.join("vendor/x")).unwrap();
                std::fs::create_dir_all(root.join("vendor/x/y/.git")).unwrap();
            }),
            Box::new(|| {
                std::os::unix::fs::symlink("/", root.join("link")).unwrap();
                std::fs::write(root.join("HEAD"), "").unwrap();
                std::fs::write(root.join("commondir"), "").unwrap();
            }),
        ];
        for (i, step) in steps.iter().enumerate() {
            step();
            let builds = BUILDS.with(|b| b.get());
            let indexed = indexed(fd.as_fd(), &protect).unwrap().unwrap();
            let full = protect_walk::existing(fd.as_fd(), &protect).unwrap();
            assert_eq!(rels(&indexed), rels(&full), "after step {i}");
            // Only a directory moved into the tree (step 3) costs a full walk.
            let rebuilt = BUILDS.with(|b| b.get()) - builds;
            assert_eq!(rebuilt, usize::from(i == 3), "full walks after step {i}");
        }
        let last = indexed(fd.as_fd(), &protect).unwrap().unwrap();
        assert!(last.root_is_git_dir);
        for found in ["data/objects/deep/.hg", "lib/g"] {
            assert!(
                rels(&last).0.contains(&PathBuf::from(found)),
                "{found}: {:?}",
                rels(&last)
            );
        }
    }

    /// Walks while another thread keeps planting, removing and moving, then one more walk
    /// once it stops: the index is the full walk again (what changed during a walk is
    /// listed by the next).
    #[test]
    fn walks_during_changes_end_where_a_full_walk_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let fd = std::fs::File::open(&root).unwrap();
        let protect = Protect::default();
        std::fs::create_dir_all(root.join("w")).unwrap();
        indexed(fd.as_fd(), &protect).unwrap().unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let rounds = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let planter = {
            let (root, stop, rounds) = (root.clone(), stop.clone(), rounds.clone());
            std::thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    rounds.store(i, std::sync::atomic::Ordering::Relaxed);
                    let d = root.join(format!("w/d{}", i % 7));
                    let _ = std::fs::create_dir_all(d.join("x/.git"));
                    let _ = std::fs::write(d.join("HEAD"), "");
                    let _ = std::fs::create_dir_all(d.join("objects"));
                    let _ = std::fs::create_dir_all(d.join("refs"));
                    if i.is_multiple_of(3) {
                        let _ = std::fs::remove_dir_all(&d);
                    }
                    if i.is_multiple_of(5) {
                        let _ = std::fs::rename(&d, root.join(format!("w/m{}", i % 4)));
                    }
                    i += 1;
                }
            })
        };
        let mut walks = 0;
        while rounds.load(std::sync::atomic::Ordering::Relaxed) < 500 || walks < 50 {
            indexed(fd.as_fd(), &protect).unwrap().unwrap();
            walks += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        planter.join().unwrap();
        let indexed_now = indexed(fd.as_fd(), &protect).unwrap().unwrap();
        let full = protect_walk::existing(fd.as_fd(), &protect).unwrap();
        assert_eq!(rels(&indexed_now), rels(&full));
        std::fs::create_dir_all(root.join("w/last/.git")).unwrap();
        let after = indexed(fd.as_fd(), &protect).unwrap().unwrap();
        assert!(rels(&after).0.contains(&PathBuf::from("w/last/.git")));
    }

    /// A walk sees the inodes listed up to it, never one listed by a later walk.
    #[test]
    fn an_inode_first_listed_later_is_not_seen_by_an_earlier_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("old.txt"), "").unwrap();
        let fd = std::fs::File::open(root).unwrap();
        let protect = Protect::default();
        let before = indexed(fd.as_fd(), &protect).unwrap().unwrap();
        std::fs::write(root.join("new.txt"), "").unwrap();
        let after = indexed(fd.as_fd(), &protect).unwrap().unwrap();
        let ino = |n: &str| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(root.join(n)).unwrap().ino()
        };
        assert!(before.seen.contains(&ino("old.txt")));
        assert!(!before.seen.contains(&ino("new.txt")));
        assert!(after.seen.contains(&ino("new.txt")));
    }
}
