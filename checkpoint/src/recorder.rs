//! The recorder: one mount's state as a tree in the store, kept in memory between
//! checkpoints so that each costs what changed.
//!
//! The first checkpoint walks the whole mount (`Method::Full`), hashing every file, and puts
//! a watch on every directory (`journal`). Each later one asks the journal which paths may
//! have changed and looks at those alone (`Method::Journal`): a file is read again only when
//! its metadata (size, mtime, ctime, inode, mode) differs from what the last checkpoint saw,
//! and only the trees on the changed paths are written again. When the journal cannot vouch
//! for the period (its queue overflowed, inotify is missing, a watch could not be added) the
//! recorder compares the whole tree's metadata with its memory instead (`Method::Scan`):
//! every entry is `stat`ed, nothing unchanged is read. A recorder made after a crash or a
//! `resume` starts with a full walk; the store already holds the bytes, so it writes little.
//!
//! Every read goes through descriptors (`fsat`); what the rules exclude (`rules`) is never
//! read, only named in the answer.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::Stat;

use crate::error::Error;
use crate::fsat;
use crate::hash::Hash;
use crate::journal::{Changes, Journal};
use crate::rules::{Exclusion, Rules};
use crate::store::{Put, Store};
use crate::tree::{Kind, Tree, TreeEntry};

/// Directories deeper than this are not followed (and named as excluded).
const MAX_DEPTH: usize = 256;

/// How a checkpoint found what changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Full,
    Journal,
    Scan,
}

/// One checkpoint of one mount.
#[derive(Debug, Clone)]
pub struct Captured {
    pub tree: Hash,
    pub method: Method,
    /// Entries looked at (`stat`ed).
    pub examined: u64,
    /// Files read and hashed.
    pub hashed: u64,
    /// Objects and bytes new to the store.
    pub new_objects: u64,
    pub new_bytes: u64,
    /// What is left out, by path, and why.
    pub excluded: Vec<(PathBuf, Exclusion)>,
}

/// A file's inode, size, mtime and ctime: while all four stay, its bytes have not changed.
type Identity = (u64, u64, (i64, u64), (i64, u64));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    ino: u64,
    size: u64,
    mtime: (i64, u64),
    ctime: (i64, u64),
    mode: u32,
}

impl Meta {
    fn of(st: &Stat) -> Meta {
        Meta {
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
            mode: st.st_mode & 0o777,
        }
    }
}

enum Node {
    File { meta: Meta, hash: Hash },
    Link { meta: Meta, hash: Hash },
    Dir(DirNode),
}

struct DirNode {
    ino: u64,
    mode: u32,
    entries: BTreeMap<OsString, Node>,
    /// The tree's hash, until something below changes.
    sealed: Option<Hash>,
    /// The tree this directory had at the last checkpoint: what a changed tree is stored
    /// as a delta from.
    last: Option<Hash>,
}

impl DirNode {
    fn empty(st: &Stat) -> DirNode {
        DirNode {
            ino: st.st_ino,
            mode: st.st_mode & 0o777,
            entries: BTreeMap::new(),
            sealed: None,
            last: None,
        }
    }

    /// Something below changed: the tree is made again at the next seal, from the last.
    fn unseal(&mut self) {
        self.last = self.sealed.take().or(self.last);
    }
}

/// Counters of one capture.
#[derive(Default)]
struct Tally {
    examined: u64,
    hashed: u64,
    new_objects: u64,
    new_bytes: u64,
}

impl Tally {
    fn count(&mut self, put: Put) {
        if let Put::Written(n) = put {
            self.new_objects += 1;
            self.new_bytes += n;
        }
    }
}

/// Records one mount, checkpoint after checkpoint.
pub struct Recorder {
    root: OwnedFd,
    rules: Rules,
    model: Option<DirNode>,
    journal: Option<Journal>,
    excluded: BTreeMap<PathBuf, Exclusion>,
    /// A file's hash by its identity and times: a file moved to another path is not read again.
    known: HashMap<Identity, Hash>,
    use_journal: bool,
    /// The project's VCS ignore rules, when the rules leave ignored files out.
    ignores: crate::vcs_ignore::Ignores,
}

impl Recorder {
    /// A recorder of the directory open as `root` (the mount's held descriptor).
    pub fn new(root: BorrowedFd<'_>, rules: Rules) -> std::io::Result<Recorder> {
        Ok(Recorder {
            root: rustix::io::dup(root)?,
            rules,
            model: None,
            journal: None,
            excluded: BTreeMap::new(),
            known: HashMap::new(),
            use_journal: true,
            ignores: crate::vcs_ignore::Ignores::default(),
        })
    }

    /// Never trust a journal: every checkpoint after the first scans metadata (the bench
    /// measures both; a filesystem inotify does not see needs it).
    pub fn without_journal(mut self) -> Recorder {
        self.use_journal = false;
        self
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Records the mount as it is now.
    pub fn capture(&mut self, store: &Store) -> Result<Captured, Error> {
        let mut tally = Tally::default();
        let method = match (
            self.model.is_some(),
            self.journal.as_mut().map(Journal::take),
        ) {
            (false, _) => Method::Full,
            // A changed `.gitignore` changes what is left out anywhere below it: a scan.
            (true, Some(Changes::Paths(paths)))
                if !(self.rules.vcs_ignored
                    && paths
                        .iter()
                        .any(|p| p.file_name() == Some(".gitignore".as_ref()))) =>
            {
                for rel in paths {
                    self.refresh(&rel, store, &mut tally)?;
                }
                Method::Journal
            }
            (true, _) => Method::Scan,
        };
        if method != Method::Journal {
            if self.journal.is_none() && self.use_journal {
                self.journal = Journal::new();
            }
            let st = rustix::fs::fstat(&self.root).map_err(|e| read_error(Path::new(""), e))?;
            let old = self.model.take();
            let root = rustix::io::dup(&self.root).map_err(|e| read_error(Path::new(""), e))?;
            let fresh = self.scan_dir(&root, Path::new(""), &st, old, 0, store, &mut tally)?;
            self.model = Some(fresh);
        }
        let mut model = self.model.take().expect("the model was just made or kept");
        let sealed = seal(&mut model, store, &mut tally);
        self.model = Some(model);
        Ok(Captured {
            tree: sealed?,
            method,
            examined: tally.examined,
            hashed: tally.hashed,
            new_objects: tally.new_objects,
            new_bytes: tally.new_bytes,
            excluded: self.excluded.iter().map(|(p, e)| (p.clone(), *e)).collect(),
        })
    }

    /// Lists the directory open as `dir` at `rel` and examines each entry; with `old`, what
    /// the last checkpoint saw there, unchanged files are not read again.
    #[allow(clippy::too_many_arguments)] // one recursion's state; a struct would only rename it
    fn scan_dir(
        &mut self,
        dir: &OwnedFd,
        rel: &Path,
        st: &Stat,
        old: Option<DirNode>,
        depth: usize,
        store: &Store,
        tally: &mut Tally,
    ) -> Result<DirNode, Error> {
        if let Some(journal) = self.journal.as_mut() {
            journal.watch(dir.as_fd(), rel);
        }
        let names = fsat::list(dir.as_fd()).map_err(|e| read_error(rel, e))?;
        self.excluded_below(rel);
        if self.rules.vcs_ignored {
            self.ignores.load(dir.as_fd(), rel);
        }
        let mut node = DirNode::empty(st);
        node.last = old.as_ref().and_then(|d| d.sealed.or(d.last));
        let mut old_entries = old.map(|d| d.entries).unwrap_or_default();
        for name in names {
            let child_rel = rel.join(&name);
            let prior = old_entries.remove(&name);
            if let Some(child) = self.examine(
                dir.as_fd(),
                &name,
                &child_rel,
                prior,
                true,
                depth,
                store,
                tally,
            )? {
                node.entries.insert(name, child);
            }
        }
        Ok(node)
    }

    /// What stands at `name` in `dir` now, as a node; `None` when nothing is there or it is
    /// excluded (and then recorded as such). `deep`: list a directory seen before again (a
    /// scan) rather than trusting the journal for what is below it.
    #[allow(clippy::too_many_arguments)] // one recursion's state; a struct would only rename it
    fn examine(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::OsStr,
        rel: &Path,
        prior: Option<Node>,
        deep: bool,
        depth: usize,
        store: &Store,
        tally: &mut Tally,
    ) -> Result<Option<Node>, Error> {
        self.forget_excluded(rel);
        if self.rules.protected(rel) {
            self.excluded
                .insert(rel.to_path_buf(), Exclusion::Protected);
            return Ok(None);
        }
        tally.examined += 1;
        let st = match fsat::stat(dir, name) {
            Ok(st) => st,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_error(rel, e)),
        };
        let meta = Meta::of(&st);
        if self.rules.vcs_ignored && self.ignores.ignored(rel, fsat::is_dir(&st)) {
            self.excluded
                .insert(rel.to_path_buf(), Exclusion::VcsIgnored);
            return Ok(None);
        }
        if fsat::is_file(&st) {
            if self.rules.too_large(meta.size) {
                self.excluded.insert(rel.to_path_buf(), Exclusion::TooLarge);
                return Ok(None);
            }
            if let Some(Node::File { meta: was, hash }) = prior
                && was == meta
            {
                return Ok(Some(Node::File { meta, hash }));
            }
            return self.read_file(dir, name, rel, store, tally);
        }
        if fsat::is_link(&st) {
            if let Some(Node::Link { meta: was, hash }) = prior
                && was == meta
            {
                return Ok(Some(Node::Link { meta, hash }));
            }
            let target = rustix::fs::readlinkat(dir, name, Vec::new());
            let target = match target {
                Ok(t) => t,
                Err(rustix::io::Errno::NOENT) => return Ok(None),
                Err(e) => return Err(read_error(rel, e)),
            };
            let hash = put(store, target.as_bytes(), tally)?;
            return Ok(Some(Node::Link { meta, hash }));
        }
        if !fsat::is_dir(&st) {
            self.excluded.insert(rel.to_path_buf(), Exclusion::Special);
            return Ok(None);
        }
        let child = match fsat::open_dir(dir, name) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_error(rel, e)),
        };
        // What was opened is what the checkpoint records (a swap since the `stat` shows here).
        let st = rustix::fs::fstat(&child).map_err(|e| read_error(rel, e))?;
        let has = |marker: &str| fsat::stat(child.as_fd(), marker.as_ref()).is_ok();
        if self.rules.git_dir(rel, has) {
            self.excluded.insert(rel.to_path_buf(), Exclusion::GitDir);
            return Ok(None);
        }
        if depth + 1 >= MAX_DEPTH {
            self.excluded.insert(rel.to_path_buf(), Exclusion::Special);
            return Ok(None);
        }
        let prior = match prior {
            Some(Node::Dir(d)) if d.ino == st.st_ino => Some(d),
            _ => None,
        };
        if !deep && let Some(mut kept) = prior {
            kept.mode = st.st_mode & 0o777;
            kept.unseal();
            return Ok(Some(Node::Dir(kept)));
        }
        let node = self.scan_dir(&child, rel, &st, prior, depth + 1, store, tally)?;
        Ok(Some(Node::Dir(node)))
    }

    fn read_file(
        &mut self,
        dir: BorrowedFd<'_>,
        name: &std::ffi::OsStr,
        rel: &Path,
        store: &Store,
        tally: &mut Tally,
    ) -> Result<Option<Node>, Error> {
        let fd = match fsat::open_file(dir, name) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read_error(rel, e)),
        };
        // The metadata recorded is the opened file's, so a file replaced between the `stat`
        // and the open is recorded as what was read.
        let st = rustix::fs::fstat(&fd).map_err(|e| read_error(rel, e))?;
        if !fsat::is_file(&st) {
            self.excluded.insert(rel.to_path_buf(), Exclusion::Special);
            return Ok(None);
        }
        let meta = Meta::of(&st);
        if self.rules.too_large(meta.size) {
            self.excluded.insert(rel.to_path_buf(), Exclusion::TooLarge);
            return Ok(None);
        }
        let key = (meta.ino, meta.size, meta.mtime, meta.ctime);
        if let Some(hash) = self.known.get(&key) {
            return Ok(Some(Node::File { meta, hash: *hash }));
        }
        let mut bytes = Vec::with_capacity(meta.size as usize);
        std::fs::File::from(fd)
            .read_to_end(&mut bytes)
            .map_err(|e| read_error(rel, e))?;
        tally.hashed += 1;
        let hash = put(store, &bytes, tally)?;
        self.known.insert(key, hash);
        Ok(Some(Node::File { meta, hash }))
    }

    /// Brings the model up to date at `rel`, a path the journal named.
    fn refresh(&mut self, rel: &Path, store: &Store, tally: &mut Tally) -> Result<(), Error> {
        let Some(name) = rel.file_name().map(|n| n.to_os_string()) else {
            // The root itself (its mode): a scan of the root's own metadata.
            if let (Some(model), Ok(st)) = (self.model.as_mut(), rustix::fs::fstat(&self.root)) {
                model.mode = st.st_mode & 0o777;
                model.unseal();
            }
            return Ok(());
        };
        let parent_rel = rel.parent().unwrap_or(Path::new(""));
        // The parent must be in the model (else the event that made it is handled on its own
        // path, by a walk of it) and still openable (else its own removal is in the set).
        if !self.unseal_to(parent_rel) {
            return Ok(());
        }
        let parent = match fsat::open_below(self.root.as_fd(), parent_rel) {
            Ok(fd) => fd,
            Err(_) => {
                self.forget_excluded(rel);
                self.excluded_below(rel);
                let _ = self.dir_at(parent_rel).map(|d| d.entries.remove(&name));
                return Ok(());
            }
        };
        let depth = parent_rel.components().count();
        let prior = self
            .dir_at(parent_rel)
            .and_then(|d| d.entries.remove(&name));
        // Deep: a directory the journal names was created, moved, removed or changed itself,
        // and one removed and made again may carry its old inode number, with no watch on it
        // and nothing of what is below it reported. Only a walk of it is sure of its contents
        // (unchanged files are still not read again).
        let node = self.examine(parent.as_fd(), &name, rel, prior, true, depth, store, tally)?;
        if !matches!(node, Some(Node::Dir(_))) {
            self.excluded_below(rel);
        }
        if let (Some(node), Some(dir)) = (node, self.dir_at(parent_rel)) {
            dir.entries.insert(name, node);
        }
        Ok(())
    }

    /// Clears the sealed hash of every directory from the root to `rel`; false when `rel` is
    /// not a directory of the model.
    fn unseal_to(&mut self, rel: &Path) -> bool {
        let Some(mut dir) = self.model.as_mut() else {
            return false;
        };
        dir.unseal();
        for part in rel.components() {
            match dir.entries.get_mut(part.as_os_str()) {
                Some(Node::Dir(d)) => {
                    d.unseal();
                    dir = d;
                }
                _ => return false,
            }
        }
        true
    }

    fn dir_at(&mut self, rel: &Path) -> Option<&mut DirNode> {
        let mut dir = self.model.as_mut()?;
        for part in rel.components() {
            match dir.entries.get_mut(part.as_os_str()) {
                Some(Node::Dir(d)) => dir = d,
                _ => return None,
            }
        }
        Some(dir)
    }

    fn forget_excluded(&mut self, rel: &Path) {
        self.excluded.remove(rel);
    }

    /// Forgets the exclusions below `rel` (it is being looked at again whole, or is gone).
    fn excluded_below(&mut self, rel: &Path) {
        let below: Vec<PathBuf> = self
            .excluded
            .keys()
            .filter(|p| p.starts_with(rel) && p.as_path() != rel)
            .cloned()
            .collect();
        for p in below {
            self.excluded.remove(&p);
        }
    }
}

fn put(store: &Store, bytes: &[u8], tally: &mut Tally) -> Result<Hash, Error> {
    let (hash, put) = store.put(bytes)?;
    tally.count(put);
    Ok(hash)
}

/// The tree of `dir`, writing the trees of what changed below it.
fn seal(dir: &mut DirNode, store: &Store, tally: &mut Tally) -> Result<Hash, Error> {
    if let Some(hash) = dir.sealed {
        return Ok(hash);
    }
    let mut tree = Tree {
        entries: Vec::with_capacity(dir.entries.len()),
    };
    for (name, node) in dir.entries.iter_mut() {
        let (kind, mode, hash) = match node {
            Node::File { meta, hash } => (Kind::File, meta.mode, *hash),
            Node::Link { hash, .. } => (Kind::Link, 0o777, *hash),
            Node::Dir(d) => (Kind::Dir, d.mode, seal(d, store, tally)?),
        };
        tree.entries.push(TreeEntry {
            name: name.clone(),
            kind,
            mode,
            hash,
        });
    }
    // `BTreeMap<OsString>` orders by bytes on Unix, as trees must be.
    let (hash, put) = store.put_tree(&tree, dir.last)?;
    tally.count(put);
    dir.sealed = Some(hash);
    Ok(hash)
}

fn read_error(rel: &Path, e: impl Into<std::io::Error>) -> Error {
    Error::Read {
        rel: rel.to_path_buf(),
        source: e.into(),
    }
}

/// Every path of a stored tree with its entry, depth first (for tests and the diff).
pub fn flatten(store: &Store, tree: &Hash) -> Result<BTreeMap<PathBuf, TreeEntry>, Error> {
    let mut out = BTreeMap::new();
    let mut stack = vec![(PathBuf::new(), *tree)];
    let mut seen = BTreeSet::new();
    while let Some((rel, hash)) = stack.pop() {
        if !seen.insert((rel.clone(), hash)) {
            continue;
        }
        for entry in store.tree(&hash)?.entries {
            let path = rel.join(&entry.name);
            if entry.kind == Kind::Dir {
                stack.push((path.clone(), entry.hash));
            }
            out.insert(path, entry);
        }
    }
    Ok(out)
}
