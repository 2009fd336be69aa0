//! The restore: puts a mount back as a checkpoint recorded it, by descriptor under the held
//! mount, and touches nothing else.
//!
//! It works from two trees: what the mount holds now (a checkpoint just taken) and the
//! target. Only what differs is planned, and the plan is made whole before anything is
//! written: every tree and every blob it needs is read and verified first, so a damaged or
//! tampered store fails the restore with nothing changed. Then each step opens its parent
//! directory from the mount's descriptor one component at a time without following a
//! symlink (`fsat::open_below`): a directory swapped for a symlink to somewhere else fails
//! that step, it is never followed. Files and symlinks are written to a temporary name and
//! renamed over the old one; modes are set on the opened file; set-id bits never come back.
//!
//! What it never does, whatever the checkpoint says: write or remove a protected path or a
//! directory git would take for a git directory (`rules`), overwrite something the current
//! checkpoint did not record (a file over the size bound, one that appeared since), or, unless
//! forced, change a path the caller says was changed outside the session. Each is reported
//! in `Restored::kept`, so the answer says what stayed as it was.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::error::Error;
use crate::fsat;
use crate::hash::Hash;
use crate::rules::Rules;
use crate::store::Store;
use crate::tree::{Kind, Tree, TreeEntry};

/// Why a path was left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A protected path: never written or removed by a restore.
    Protected,
    /// The checkpoint holds a directory git would take for a git directory.
    GitDir,
    /// Changed outside the session since its last checkpoint (restore with force to undo).
    ChangedOutside,
    /// Something stands there that no checkpoint recorded (over the size bound, excluded, or
    /// created since); a directory still holding such entries is kept too.
    NotRecorded,
    /// The step failed (a directory swapped for a symlink, a permission): the error.
    Failed(String),
}

impl Kept {
    pub fn describe(&self) -> String {
        match self {
            Kept::Protected => "protected path, never restored".into(),
            Kept::GitDir => "a git directory, never restored".into(),
            Kept::ChangedOutside => {
                "changed outside the session since its last checkpoint (--force restores it)".into()
            }
            Kept::NotRecorded => "not recorded by any checkpoint, left alone".into(),
            Kept::Failed(e) => format!("not restored: {e}"),
        }
    }
}

/// What a restore did.
#[derive(Debug, Default, Clone)]
pub struct Restored {
    pub written: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
    pub kept: Vec<(PathBuf, Kept)>,
}

/// One step of the plan.
enum Op {
    File {
        rel: PathBuf,
        mode: u32,
        bytes: Vec<u8>,
        /// Nothing was recorded at this path now: something found there is kept.
        fresh: bool,
    },
    Link {
        rel: PathBuf,
        target: Vec<u8>,
        fresh: bool,
    },
    Mkdir {
        rel: PathBuf,
        mode: u32,
    },
    Chmod {
        rel: PathBuf,
        mode: u32,
        dir: bool,
    },
    Remove {
        rel: PathBuf,
        dir: bool,
    },
}

/// What a restore is asked to do.
pub struct Request<'a> {
    pub store: &'a Store,
    pub rules: &'a Rules,
    /// The mount as it is now (a checkpoint just taken) and as it should be.
    pub current: Hash,
    pub target: Hash,
    /// Paths changed outside the session: kept unless `force`.
    pub outside: &'a BTreeSet<PathBuf>,
    pub force: bool,
}

/// Restores the mount open as `root` to `request.target`.
pub fn restore(root: BorrowedFd<'_>, request: &Request<'_>) -> Result<Restored, Error> {
    let mut planner = Planner {
        request,
        ops: Vec::new(),
        kept: Vec::new(),
    };
    let current = request.store.tree(&request.current)?;
    let target = request.store.tree(&request.target)?;
    planner.dir(Path::new(""), Some(&current), Some(&target))?;
    let Planner { ops, kept, .. } = planner;
    let mut done = Restored {
        kept,
        ..Restored::default()
    };
    for op in ops {
        apply(root, op, &mut done);
    }
    Ok(done)
}

struct Planner<'a> {
    request: &'a Request<'a>,
    ops: Vec<Op>,
    kept: Vec<(PathBuf, Kept)>,
}

impl Planner<'_> {
    fn dir(&mut self, rel: &Path, now: Option<&Tree>, want: Option<&Tree>) -> Result<(), Error> {
        let mut names: Vec<&OsStr> = now
            .iter()
            .chain(want.iter())
            .flat_map(|t| t.entries.iter().map(|e| e.name.as_os_str()))
            .collect();
        names.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        names.dedup();
        for name in names {
            let c = now.and_then(|t| t.get(name));
            let t = want.and_then(|t| t.get(name));
            if c == t {
                continue;
            }
            self.entry(&rel.join(name), c, t)?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        rel: &Path,
        now: Option<&TreeEntry>,
        want: Option<&TreeEntry>,
    ) -> Result<(), Error> {
        let store = self.request.store;
        if self.request.rules.protected(rel) {
            self.kept.push((rel.to_path_buf(), Kept::Protected));
            return Ok(());
        }
        if !self.request.force && self.request.outside.contains(rel) {
            self.kept.push((rel.to_path_buf(), Kept::ChangedOutside));
            return Ok(());
        }
        match (now, want) {
            (Some(c), Some(t)) if c.kind == Kind::Dir && t.kind == Kind::Dir => {
                let (ct, tt) = (store.tree(&c.hash)?, store.tree(&t.hash)?);
                if self.git_dir(rel, &tt, Some(&ct)) {
                    return Ok(());
                }
                if c.mode != t.mode {
                    self.ops.push(Op::Chmod {
                        rel: rel.to_path_buf(),
                        mode: t.mode,
                        dir: true,
                    });
                }
                self.dir(rel, Some(&ct), Some(&tt))
            }
            (Some(c), Some(t))
                if c.kind == Kind::File && t.kind == Kind::File && c.hash == t.hash =>
            {
                self.ops.push(Op::Chmod {
                    rel: rel.to_path_buf(),
                    mode: t.mode,
                    dir: false,
                });
                Ok(())
            }
            _ => {
                if let Some(c) = now
                    && (c.kind == Kind::Dir || want.is_some_and(|t| t.kind == Kind::Dir))
                {
                    if c.kind == Kind::Dir {
                        let ct = store.tree(&c.hash)?;
                        self.dir(rel, Some(&ct), None)?;
                    }
                    self.ops.push(Op::Remove {
                        rel: rel.to_path_buf(),
                        dir: c.kind == Kind::Dir,
                    });
                }
                match want {
                    Some(t) => self.create(rel, t, now.is_none()),
                    None => {
                        if now.is_some_and(|c| c.kind != Kind::Dir) {
                            self.ops.push(Op::Remove {
                                rel: rel.to_path_buf(),
                                dir: false,
                            });
                        }
                        Ok(())
                    }
                }
            }
        }
    }

    fn create(&mut self, rel: &Path, want: &TreeEntry, fresh: bool) -> Result<(), Error> {
        let store = self.request.store;
        match want.kind {
            Kind::File => self.ops.push(Op::File {
                rel: rel.to_path_buf(),
                mode: want.mode,
                bytes: store.get(&want.hash)?,
                fresh,
            }),
            Kind::Link => self.ops.push(Op::Link {
                rel: rel.to_path_buf(),
                target: store.get(&want.hash)?,
                fresh,
            }),
            Kind::Dir => {
                let tt = store.tree(&want.hash)?;
                if self.git_dir(rel, &tt, None) {
                    return Ok(());
                }
                self.ops.push(Op::Mkdir {
                    rel: rel.to_path_buf(),
                    mode: want.mode,
                });
                self.dir(rel, None, Some(&tt))?;
            }
        }
        Ok(())
    }

    /// Would the directory at `rel` be a git directory once restored? Then it is kept as is.
    fn git_dir(&mut self, rel: &Path, want: &Tree, now: Option<&Tree>) -> bool {
        let has = |n: &str| {
            want.get(n.as_ref()).is_some() || now.is_some_and(|t| t.get(n.as_ref()).is_some())
        };
        let git = self.request.rules.git_dir(rel, has);
        if git {
            self.kept.push((rel.to_path_buf(), Kept::GitDir));
        }
        git
    }
}

fn apply(root: BorrowedFd<'_>, op: Op, done: &mut Restored) {
    let (rel, result) = match op {
        Op::File {
            rel,
            mode,
            bytes,
            fresh,
        } => {
            let r = in_parent(root, &rel, |dir, name| {
                if fresh && fsat::stat(dir, name).is_ok() {
                    return Ok(Step::Kept(Kept::NotRecorded));
                }
                replace(dir, name, |dir, temp| {
                    let fd = rustix::fs::openat(
                        dir,
                        temp,
                        OFlags::WRONLY
                            | OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::NOFOLLOW
                            | OFlags::CLOEXEC,
                        Mode::from_raw_mode(0o600),
                    )?;
                    let mut file = std::fs::File::from(fd);
                    file.write_all(&bytes)?;
                    rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o777))?;
                    Ok(())
                })
                .map(|()| Step::Written)
            });
            (rel, r)
        }
        Op::Link { rel, target, fresh } => {
            let r = in_parent(root, &rel, |dir, name| {
                if fresh && fsat::stat(dir, name).is_ok() {
                    return Ok(Step::Kept(Kept::NotRecorded));
                }
                replace(dir, name, |dir, temp| {
                    Ok(rustix::fs::symlinkat(
                        OsStr::from_bytes(&target),
                        dir,
                        temp,
                    )?)
                })
                .map(|()| Step::Written)
            });
            (rel, r)
        }
        Op::Mkdir { rel, mode } => {
            let r = in_parent(root, &rel, |dir, name| {
                match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                // Opened without following: a symlink planted at the name fails here.
                let fd = fsat::open_dir(dir, name)?;
                rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o777))?;
                Ok(Step::Written)
            });
            (rel, r)
        }
        Op::Chmod {
            rel,
            mode,
            dir: is_dir,
        } => {
            let r = in_parent(root, &rel, |dir, name| {
                let fd = if is_dir {
                    fsat::open_dir(dir, name)?
                } else {
                    let fd = fsat::open_file(dir, name)?;
                    if !fsat::is_file(&rustix::fs::fstat(&fd)?) {
                        return Err(std::io::Error::other("no longer a regular file"));
                    }
                    fd
                };
                rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o777))?;
                Ok(Step::Written)
            });
            (rel, r)
        }
        Op::Remove { rel, dir: is_dir } => {
            let r = in_parent(root, &rel, |dir, name| {
                let flags = if is_dir {
                    AtFlags::REMOVEDIR
                } else {
                    AtFlags::empty()
                };
                match rustix::fs::unlinkat(dir, name, flags) {
                    Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(Step::Removed),
                    Err(rustix::io::Errno::NOTEMPTY) => Ok(Step::Kept(Kept::NotRecorded)),
                    Err(e) => Err(e.into()),
                }
            });
            (rel, r)
        }
    };
    match result {
        Ok(Step::Written) => done.written.push(rel),
        Ok(Step::Removed) => done.removed.push(rel),
        Ok(Step::Kept(why)) => done.kept.push((rel, why)),
        Err(e) => done.kept.push((rel, Kept::Failed(e.to_string()))),
    }
}

enum Step {
    Written,
    Removed,
    Kept(Kept),
}

/// Runs `f` on `rel`'s parent, opened from `root` without following a symlink, and its name.
fn in_parent(
    root: BorrowedFd<'_>,
    rel: &Path,
    f: impl FnOnce(BorrowedFd<'_>, &OsStr) -> std::io::Result<Step>,
) -> std::io::Result<Step> {
    let name = rel
        .file_name()
        .ok_or_else(|| std::io::Error::other("the mount's root itself"))?;
    let parent = fsat::open_below(root, rel.parent().unwrap_or(Path::new("")))?;
    f(parent.as_fd(), name)
}

/// Writes a new entry under a temporary name with `make`, then renames it over `name`.
fn replace(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    make: impl FnOnce(BorrowedFd<'_>, &OsStr) -> std::io::Result<()>,
) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let temp = format!(
        ".paddock-restore-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let temp = OsStr::new(&temp);
    let made = make(dir, temp).and_then(|()| Ok(rustix::fs::renameat(dir, temp, dir, name)?));
    if made.is_err() {
        let _ = rustix::fs::unlinkat(dir, temp, AtFlags::empty());
    }
    made
}

impl Restored {
    /// Nothing was written or removed (the mount already was as asked).
    pub fn changed_nothing(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }
}
