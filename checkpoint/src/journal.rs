//! The change journal: inotify watches on every directory of a mount, read between
//! checkpoints, give the paths that may have changed since the last one, so a checkpoint
//! costs what changed, not the size of the tree.
//!
//! A watch is on an inode, so every write shows, whichever process made it and through
//! whichever mount (a WASM tool's, a confined program's, the shell's, the user's editor). An
//! event names a directory (by its watch) and a name in it; the journal turns it into a path
//! and keeps the set. It never guesses: when the queue overflowed, the root itself moved or
//! went, or a watch could not be added (the user's watch limit), it says so and the
//! recorder falls back to a scan of metadata.
//!
//! Unlike `paddock_sandbox`'s walk index (which watches only names: created, removed, moved)
//! this watches contents and attributes too, and keeps paths rather than listings; the two
//! answer different questions and share only the kernel API.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// The paths that may have changed since the last `take`.
pub struct Journal {
    fd: OwnedFd,
    dirs: HashMap<i32, PathBuf>,
    dirty: BTreeSet<PathBuf>,
    /// Events were lost (or a watch could not be added): the set is not the whole truth.
    lost: bool,
}

/// What a journal says about the time since the last `take`.
pub enum Changes {
    /// These paths, and only these, may have changed.
    Paths(BTreeSet<PathBuf>),
    /// Anything may have changed: scan.
    Unknown,
}

impl Journal {
    /// A journal with no watches yet; `None` where inotify is not available.
    pub fn new() -> Option<Journal> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
        Some(Journal {
            fd,
            dirs: HashMap::new(),
            dirty: BTreeSet::new(),
            lost: false,
        })
    }

    /// Watches the directory open as `dir`, found at `rel` below the root. Called before the
    /// directory is listed, so nothing written after the listing is missed.
    pub fn watch(&mut self, dir: BorrowedFd<'_>, rel: &Path) {
        let flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR;
        // The kernel's own link to the open directory: no name is resolved again.
        let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
        match inotify::add_watch(&self.fd, path.as_str(), flags) {
            Ok(wd) => {
                self.dirs.insert(wd, rel.to_path_buf());
            }
            Err(_) => self.lost = true,
        }
    }

    /// Reads every event queued so far.
    fn drain(&mut self) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(self.fd.as_fd(), &mut buf);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    self.lost = true;
                    break;
                }
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                self.lost = true;
                continue;
            }
            let Some(dir) = self.dirs.get(&event.wd()).cloned() else {
                continue;
            };
            if flags.intersects(ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF)
            {
                // The directory went or moved: its parent's event marks the path; events the
                // moved directory still sends would name a stale path, and the new place is
                // walked whole by the recorder.
                self.dirs.remove(&event.wd());
                if dir.as_os_str().is_empty() {
                    self.lost = true;
                }
                continue;
            }
            match event.file_name() {
                Some(name) if !name.to_bytes().is_empty() => {
                    self.dirty
                        .insert(dir.join(std::ffi::OsStr::from_bytes(name.to_bytes())));
                }
                _ => {
                    self.dirty.insert(dir);
                }
            }
        }
    }

    /// What changed since the last call; the journal starts a new period.
    pub fn take(&mut self) -> Changes {
        self.drain();
        let dirty = std::mem::take(&mut self.dirty);
        if std::mem::replace(&mut self.lost, false) {
            Changes::Unknown
        } else {
            Changes::Paths(dirty)
        }
    }
}
