//! Where `paddock.lock` is and how it is read and written: its directory opened once
//! (`.paddock` without following a link) and used through that descriptor, a size cap on
//! reading, whole-file atomic writes, and updates under a bounded `flock` on the directory.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::{LOCK_FILE, LockError, LockFile, MAX_LOCK_BYTES};

/// How long an update waits for another writer's `flock` on the lock's directory (a second
/// in the unit tests, which wait it out).
const LOCK_WAIT: std::time::Duration =
    std::time::Duration::from_secs(if cfg!(test) { 1 } else { 10 });
const HEADER: &str = "# paddock.lock: the installed plugins and MCP tools this project approved.\n\
# Written by paddock (sessions record what they first use; `paddock lock accept NAME` records a\n\
# change). Commit it; do not edit it by hand. `paddock plugin install --locked` installs exactly\n\
# the plugins it names. docs/plugins-distribution.md#lock\n";

/// Where a lock is: its directory, held open from the moment it was found, and the file's
/// name in it. Reading and writing go through the held directory (`/proc/self/fd/N`, the
/// kernel's link to what was opened), never through the directory's name again.
pub struct LockPlace {
    dir: File,
    name: OsString,
    /// The lock's path as found, for messages.
    shown: PathBuf,
}

impl LockPlace {
    /// The lock of a session in `cwd`: the project's `.paddock/paddock.lock` when the project
    /// root (`preset::project_root`) has a `.paddock` directory (not a link to one), else
    /// `paddock.lock` in `data_dir` (created if missing).
    pub fn find(cwd: &Path, data_dir: &Path) -> Result<LockPlace, LockError> {
        let dot = crate::preset::project_root(cwd).join(".paddock");
        match open_dir(&dot, libc::O_NOFOLLOW) {
            Ok(dir) => return Ok(LockPlace::new(dir, &dot, LOCK_FILE)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)) => {
            }
            Err(source) => return Err(io_error("cannot open", &dot, source)),
        }
        std::fs::create_dir_all(data_dir).map_err(|e| io_error("cannot create", data_dir, e))?;
        let dir = open_dir(data_dir, 0).map_err(|e| io_error("cannot open", data_dir, e))?;
        Ok(LockPlace::new(dir, data_dir, LOCK_FILE))
    }

    /// A lock the user named (`--lock FILE`): its directory as named; the file itself is
    /// still never followed if it is a link.
    pub fn at(path: &Path) -> Result<LockPlace, LockError> {
        let Some(name) = path.file_name() else {
            return Err(LockError::NotAFile {
                path: path.display().to_string(),
            });
        };
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = open_dir(parent, 0).map_err(|e| io_error("cannot open", parent, e))?;
        Ok(LockPlace {
            dir,
            name: name.to_os_string(),
            shown: path.to_path_buf(),
        })
    }

    fn new(dir: File, dir_path: &Path, name: &str) -> LockPlace {
        LockPlace {
            dir,
            name: name.into(),
            shown: dir_path.join(name),
        }
    }

    /// The lock's path as it was found (for messages; never opened again).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The held directory as a path the kernel resolves to it, whatever its name is now.
    fn held(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
    }

    /// The lock (empty when there is none), read without following a symlink.
    pub fn read(&self) -> Result<LockFile, LockError> {
        read_file(&self.held().join(&self.name), &self.shown)
    }

    /// Writes `lock` whole: a temporary file in the held directory, renamed over the lock.
    pub fn write(&self, lock: &LockFile) -> Result<(), LockError> {
        write_file(&self.held(), &self.name, &self.shown, lock)
    }

    /// Applies `change` to the lock as it is on disk now and writes it, holding an exclusive
    /// `flock` on the directory meanwhile: two sessions (or a session and `paddock lock
    /// accept`) recording at once both keep what they recorded.
    ///
    /// The wait is bounded: the project's `.paddock` is visible (read-only) to the programs a
    /// session runs, and one of them could hold a `flock` on it forever.
    pub fn update(&self, change: impl FnOnce(&mut LockFile)) -> Result<(), LockError> {
        let started = std::time::Instant::now();
        loop {
            match self.dir.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(LockError::Busy {
                        path: self.shown.display().to_string(),
                        secs: LOCK_WAIT.as_secs(),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(io_error("cannot lock the directory of", &self.shown, e));
                }
            }
        }
        let result = self.read().and_then(|mut lock| {
            change(&mut lock);
            self.write(&lock)
        });
        // Closing the descriptor would release it too; the place may be used again.
        let _ = self.dir.unlock();
        result
    }
}

/// Opens the directory at `path` (`extra`: `O_NOFOLLOW` to refuse a link as its last name).
fn open_dir(path: &Path, extra: libc::c_int) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC | extra)
        .open(path)
}

fn io_error(what: &'static str, path: &Path, source: std::io::Error) -> LockError {
    LockError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}

/// The lock at `path` (empty when there is none), read without following a symlink;
/// messages name it `shown`.
fn read_file(path: &Path, shown: &Path) -> Result<LockFile, LockError> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = || shown.display().to_string();
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::default()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(LockError::Symlink { path: shown() });
        }
        Err(source) => {
            return Err(LockError::Io {
                what: "cannot read",
                path: shown(),
                source,
            });
        }
    };
    let meta = file.metadata().map_err(|source| LockError::Io {
        what: "cannot read",
        path: shown(),
        source,
    })?;
    if !meta.is_file() {
        return Err(LockError::NotAFile { path: shown() });
    }
    let mut bytes = Vec::new();
    file.take(MAX_LOCK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| LockError::Io {
            what: "cannot read",
            path: shown(),
            source,
        })?;
    if bytes.len() as u64 > MAX_LOCK_BYTES {
        return Err(LockError::TooLarge {
            path: shown(),
            max: MAX_LOCK_BYTES,
        });
    }
    let damaged = |detail: String| LockError::Damaged {
        path: shown(),
        detail,
    };
    let text = String::from_utf8(bytes).map_err(|_| damaged("it is not UTF-8".into()))?;
    let lock: LockFile = toml::from_str(&text).map_err(|e| damaged(e.message().to_string()))?;
    if lock.version != 1 {
        return Err(damaged(format!(
            "version {} (this paddock reads version 1)",
            lock.version
        )));
    }
    Ok(lock)
}

/// Writes `lock` whole as `name` in `dir`: a temporary file beside it, renamed over it. A
/// symlink there is refused (the rename would replace the link, but a link there means
/// someone else placed it). Messages name it `shown`.
fn write_file(dir: &Path, name: &std::ffi::OsStr, shown: &Path, lock: &LockFile) -> Result<(), LockError> {
    use std::io::Write;
    let path = dir.join(name);
    if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(LockError::Symlink {
            path: shown.display().to_string(),
        });
    }
    let body = toml::to_string(lock).map_err(|e| LockError::Damaged {
        path: shown.display().to_string(),
        detail: format!("cannot encode it: {e}"),
    })?;
    let io = |what: &'static str| move |source: std::io::Error| io_error(what, shown, source);
    let mut tmp = tempfile::Builder::new()
        .prefix(".paddock.lock.")
        .tempfile_in(dir)
        .map_err(io("cannot write beside"))?;
    tmp.write_all(HEADER.as_bytes())
        .and_then(|()| tmp.write_all(body.as_bytes()))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io("cannot write"))?;
    // Committed with the project: readable by others as any source file is.
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(io("cannot write"))?;
    tmp.persist(&path).map_err(|e| io("cannot write")(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{McpLock, Recorded};
    use super::super::tests::entry;
    use super::*;

    #[test]
    fn a_lock_is_written_with_its_header_and_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let place = LockPlace::at(&path).unwrap();
        assert_eq!(place.read().unwrap(), LockFile::default(), "none yet: empty");
        let mut lock = LockFile::default();
        lock.plugins.insert("fs".into(), entry());
        lock.mcp.insert(
            "py".into(),
            McpLock {
                tools: entry().tools,
            },
        );
        place.write(&lock).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# paddock.lock"), "{text}");
        assert_eq!(place.read().unwrap(), lock, "{text}");
    }

    #[test]
    fn a_symlinked_oversized_or_damaged_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("elsewhere.lock");
        std::fs::write(&real, "version = 1\n").unwrap();
        let link = dir.path().join(LOCK_FILE);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let place = LockPlace::at(&link).unwrap();
        assert!(matches!(place.read(), Err(LockError::Symlink { .. })));
        assert!(matches!(
            place.write(&LockFile::default()),
            Err(LockError::Symlink { .. })
        ));
        let shown = place.read().unwrap_err().to_string();
        assert!(shown.starts_with(&link.display().to_string()), "{shown}");
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "x".repeat(MAX_LOCK_BYTES as usize + 1)).unwrap();
        assert!(matches!(place.read(), Err(LockError::TooLarge { .. })));
        std::fs::write(&link, "version = 1\n[plugins.fs]\nsha256 = 3\n").unwrap();
        let err = place.read().unwrap_err().to_string();
        assert!(err.contains("is not a lock paddock reads"), "{err}");
    }

    #[test]
    fn a_paddock_dir_swapped_for_a_link_while_locks_are_written_never_sends_one_outside() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let outside = root.path().join("outside");
        let data = root.path().join("data");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join(".paddock")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Another process's work, as fast as it goes: `.paddock` becomes a link to `outside`
        // and back, between the lock being found and being written.
        let swapper = {
            let (project, outside, stop) = (project.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let (dot, aside) = (project.join(".paddock"), project.join(".paddock.aside"));
                let mut swaps = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::fs::rename(&dot, &aside).unwrap();
                    std::os::unix::fs::symlink(&outside, &dot).unwrap();
                    std::fs::remove_file(&dot).unwrap();
                    std::fs::rename(&aside, &dot).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let mut lock = LockFile::default();
        lock.plugins.insert("fs".into(), entry());
        let mut in_project = 0;
        for _ in 0..400 {
            let place = LockPlace::find(&project, &data).unwrap();
            // Widen the window between finding and writing.
            std::thread::yield_now();
            place.write(&lock).unwrap();
            in_project += usize::from(place.path().starts_with(&project));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 100, "the swapper ran: {swaps} swaps");
        assert!(in_project > 0, "some writes found the real .paddock");
        let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(escaped.is_empty(), "a lock went outside: {escaped:?}");
    }

    #[test]
    fn sessions_recording_at_once_all_keep_their_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        // Each its own place, as separate processes would have.
                        let place = LockPlace::at(&path).unwrap();
                        place
                            .update(|lock| {
                                Recorded::Plugin {
                                    name: format!("p{w}-{i}"),
                                    entry: Box::new(entry()),
                                }
                                .apply(lock)
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let lock = LockPlace::at(&path).unwrap().read().unwrap();
        assert_eq!(lock.plugins.len(), 100, "{:?}", lock.plugins.keys());
    }

    #[test]
    fn a_first_use_recorded_meanwhile_by_another_session_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let place = LockPlace::at(&dir.path().join(LOCK_FILE)).unwrap();
        let mut theirs = entry();
        theirs.sha256 = "77".repeat(32);
        place
            .update(|lock| {
                Recorded::Plugin {
                    name: "fs".into(),
                    entry: Box::new(theirs.clone()),
                }
                .apply(lock)
            })
            .unwrap();
        place
            .update(|lock| {
                Recorded::Plugin {
                    name: "fs".into(),
                    entry: Box::new(entry()),
                }
                .apply(lock);
                Recorded::Grant {
                    name: "fs".into(),
                    preset: "review".into(),
                    sha256: "88".repeat(32),
                }
                .apply(lock);
            })
            .unwrap();
        let fs = &place.read().unwrap().plugins["fs"];
        assert_eq!(fs.sha256, theirs.sha256, "the first record stands");
        assert_eq!(fs.grants["review"], "88".repeat(32));
    }

    #[test]
    fn a_directory_held_locked_by_another_process_is_a_clear_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        // A flock taken through another open file description, as another process's would be.
        let holder = File::open(dir.path()).unwrap();
        holder.lock().unwrap();
        let place = LockPlace::at(&path).unwrap();
        let started = std::time::Instant::now();
        let err = place.update(|_| {}).unwrap_err();
        assert!(matches!(err, LockError::Busy { .. }), "{err}");
        assert!(started.elapsed() >= LOCK_WAIT, "it waited for the holder first");
        assert!(err.to_string().contains("fuser -v"), "{err}");
        assert!(!path.exists(), "nothing written");
        holder.unlock().unwrap();
        place.update(|_| {}).unwrap();
        assert!(path.exists());
    }
}
