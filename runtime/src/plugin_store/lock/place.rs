//! Where `paddock.lock` is and how it is read and written: its directory opened once
//! (`.paddock` without following a link) and used through that descriptor, a size cap on
//! reading, whole-file atomic writes, and every write under a bounded `flock` on the directory.
//! A write goes through a temporary file of one exact name (`.paddock.lock.tmp`), made and
//! renamed relative to the held descriptor; a kill before the rename leaves that file, and the
//! next write removes it by that name (never by a path, never through a link).

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
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
/// name in it. Reading and writing go through the held directory (reading through
/// `/proc/self/fd/N`, the kernel's link to what was opened; writing with `openat`,
/// `unlinkat` and `renameat` on its descriptor), never through the directory's name again.
pub struct LockPlace {
    dir: File,
    name: OsString,
    /// The lock's path as found, for messages.
    shown: PathBuf,
    /// The note `find` gives when it passed over an untrusted repository's lock.
    ignored: Option<String>,
}

impl LockPlace {
    /// The lock of a session in `cwd`: the project's `.paddock/paddock.lock` when the project
    /// root (`preset::project_root`) has a `.paddock` directory (not a link to one) and the
    /// user trusts the project (`paddock trust`, recorded in `data_dir`), else `paddock.lock`
    /// in `data_dir` (created if missing). A repository's lock could otherwise refuse the
    /// user's sessions and choose what `plugin install --locked` installs; an untrusted one is
    /// ignored, and `ignored` says so.
    pub fn find(cwd: &Path, data_dir: &Path) -> Result<LockPlace, LockError> {
        let root = crate::preset::project_root(cwd);
        let dot = root.join(".paddock");
        match open_dir(&dot, libc::O_NOFOLLOW) {
            Ok(dir) => match untrusted(cwd, data_dir) {
                None => return Ok(LockPlace::new(dir, &dot, LOCK_FILE)),
                Some(why) => {
                    let mut place = LockPlace::in_data_dir(data_dir)?;
                    if dot.join(LOCK_FILE).symlink_metadata().is_ok() {
                        place.ignored =
                            Some(ignored_note(&root, &dot.join(LOCK_FILE), why, &place));
                    }
                    return Ok(place);
                }
            },
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
                ) => {}
            Err(source) => return Err(io_error("cannot open", &dot, source)),
        }
        LockPlace::in_data_dir(data_dir)
    }

    /// The user's own lock, in the data directory.
    fn in_data_dir(data_dir: &Path) -> Result<LockPlace, LockError> {
        std::fs::create_dir_all(data_dir).map_err(|e| io_error("cannot create", data_dir, e))?;
        let dir = open_dir(data_dir, 0).map_err(|e| io_error("cannot open", data_dir, e))?;
        Ok(LockPlace::new(dir, data_dir, LOCK_FILE))
    }

    /// When `find` passed over a repository's lock it does not trust: one line saying so, why,
    /// which lock is used instead, and how to trust it.
    pub fn ignored(&self) -> Option<&str> {
        self.ignored.as_deref()
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
            ignored: None,
        })
    }

    fn new(dir: File, dir_path: &Path, name: &str) -> LockPlace {
        LockPlace {
            dir,
            name: name.into(),
            shown: dir_path.join(name),
            ignored: None,
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

    /// Writes `lock` whole, under the directory's `flock` (`update`'s): a temporary file of
    /// one exact name in the held directory (`temp_name`), renamed over the lock. (Sessions
    /// and commands go through `update`, which reads what is there first.)
    #[cfg(test)]
    pub fn write(&self, lock: &LockFile) -> Result<(), LockError> {
        self.holding_flock(|| self.write_held(lock))
    }

    /// Writes `lock` whole; the caller holds the directory's `flock`, so no other writer uses
    /// the temporary name meanwhile.
    fn write_held(&self, lock: &LockFile) -> Result<(), LockError> {
        write_file(&self.dir, &self.name, &self.shown, lock)
    }

    /// Applies `change` to the lock as it is on disk now and writes it, holding an exclusive
    /// `flock` on the directory meanwhile: two sessions (or a session and `paddock lock
    /// accept`) recording at once both keep what they recorded.
    ///
    /// The wait is bounded: the project's `.paddock` is visible (read-only) to the programs a
    /// session runs, and one of them could hold a `flock` on it forever.
    pub fn update(&self, change: impl FnOnce(&mut LockFile)) -> Result<(), LockError> {
        self.holding_flock(|| {
            let mut lock = self.read()?;
            change(&mut lock);
            self.write_held(&lock)
        })
    }

    /// Runs `job` holding an exclusive `flock` on the directory, waiting for it at most
    /// `LOCK_WAIT`.
    fn holding_flock<T>(&self, job: impl FnOnce() -> Result<T, LockError>) -> Result<T, LockError> {
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
        let result = job();
        // Closing the descriptor would release it too; the place may be used again.
        let _ = self.dir.unlock();
        result
    }
}

/// Why the project `cwd` is in may not use its own lock (`None`: it may): the user trusts it
/// only as `paddock trust` recorded it, with its project configuration unchanged since.
fn untrusted(cwd: &Path, data_dir: &Path) -> Option<String> {
    use crate::preset::{TrustState, TrustStore};
    match TrustStore::open(data_dir).state(cwd) {
        TrustState::Trusted(_) => None,
        TrustState::Changed(_) => {
            Some("its project configuration changed since you trusted it".to_string())
        }
        TrustState::Unhashable(config) => Some(format!(
            "its project configuration cannot be trusted ({})",
            config.unhashable.unwrap_or_default()
        )),
        TrustState::Untrusted(_) | TrustState::NoProjectConfig => {
            Some("you have not trusted this repository".to_string())
        }
    }
}

fn ignored_note(root: &Path, lock: &Path, why: String, used: &LockPlace) -> String {
    format!(
        "ignoring {}: {why}, so its lock neither refuses sessions nor chooses what `paddock \
         plugin install --locked` installs; your own lock {} is used instead. If you trust \
         the repository: paddock trust {}",
        lock.display(),
        used.path().display(),
        paddock_types::text::shell_word(root)
    )
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

/// The temporary file a write of the lock `name` goes through: `.NAME.tmp` beside it. One
/// exact name, not a random one: a write killed before its rename leaves that file in the
/// directory users commit, and the next write (under the same `flock`) removes it by name.
fn temp_name(name: &OsStr) -> OsString {
    let mut temp = OsString::from(".");
    temp.push(name);
    temp.push(".tmp");
    temp
}

/// `name` for the kernel: a NUL-terminated string.
fn c_name(name: &OsStr, shown: &Path) -> Result<CString, LockError> {
    CString::new(name.as_bytes()).map_err(|_| LockError::NotAFile {
        path: shown.display().to_string(),
    })
}

/// Writes `lock` whole as `name` in the held directory `dir`, every step relative to its
/// descriptor: a temporary file left by a killed write removed by its exact name (a link
/// there is removed, never followed), the temporary file created anew (`O_EXCL`,
/// `O_NOFOLLOW`), written and synced, renamed over `name`. A symlink at `name` is refused (the
/// rename would replace the link, but a link there means someone else placed it). The caller
/// holds the directory's `flock`. Messages name the lock `shown`.
fn write_file(dir: &File, name: &OsStr, shown: &Path, lock: &LockFile) -> Result<(), LockError> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let at = dir.as_raw_fd();
    let io = |what: &'static str| move |source: std::io::Error| io_error(what, shown, source);
    let target = c_name(name, shown)?;
    let temp = c_name(&temp_name(name), shown)?;
    // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid directory descriptor, a NUL-terminated name and a `stat` that lives
    // through the call; AT_SYMLINK_NOFOLLOW reports a link as itself.
    let found = unsafe { libc::fstatat(at, target.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    if found == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Err(LockError::Symlink {
            path: shown.display().to_string(),
        });
    }
    let body = toml::to_string(lock).map_err(|e| LockError::Damaged {
        path: shown.display().to_string(),
        detail: format!("cannot encode it: {e}"),
    })?;
    // SAFETY: a valid directory descriptor and a NUL-terminated name; unlinkat removes the
    // name itself (a link is not followed) and never a directory (no AT_REMOVEDIR).
    if unsafe { libc::unlinkat(at, temp.as_ptr(), 0) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::NotFound {
            return Err(io(
                "cannot remove the temporary file a killed write left beside",
            )(e));
        }
    }
    // SAFETY: a valid directory descriptor and a NUL-terminated name; O_EXCL with O_CREAT
    // fails on any existing name, a link included.
    let raw = unsafe {
        libc::openat(
            at,
            temp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if raw < 0 {
        return Err(io("cannot write beside")(std::io::Error::last_os_error()));
    }
    // SAFETY: `raw` was just returned by the kernel and nothing else owns it.
    let mut file = unsafe { File::from_raw_fd(raw) };
    let written = file
        .write_all(HEADER.as_bytes())
        .and_then(|()| file.write_all(body.as_bytes()))
        // Committed with the project: readable by others as any source file is (the
        // umask may have narrowed the mode it was created with).
        .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(0o644)))
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        // SAFETY: as above; the file this write created, removed by its name.
        unsafe { libc::unlinkat(at, temp.as_ptr(), 0) };
        return Err(io("cannot write")(e));
    }
    // SAFETY: the same valid directory descriptor on both sides and NUL-terminated names.
    if unsafe { libc::renameat(at, temp.as_ptr(), at, target.as_ptr()) } != 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: as above.
        unsafe { libc::unlinkat(at, temp.as_ptr(), 0) };
        return Err(io("cannot write")(e));
    }
    // The rename itself on disk, so a crash after it cannot bring back the old lock.
    let _ = dir.sync_all();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::entry;
    use super::super::{McpLock, Recorded};
    use super::*;

    #[test]
    fn a_lock_is_written_with_its_header_and_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let place = LockPlace::at(&path).unwrap();
        assert_eq!(
            place.read().unwrap(),
            LockFile::default(),
            "none yet: empty"
        );
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
    fn a_temporary_file_a_killed_write_left_is_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let stale = dir.path().join(".paddock.lock.tmp");
        assert_eq!(temp_name(OsStr::new(LOCK_FILE)), ".paddock.lock.tmp");
        // As a SIGKILL between creating the temporary file and renaming it leaves it: part
        // of a lock, under the one name every write uses.
        std::fs::write(&stale, "# paddock.lock: the installed plug").unwrap();
        let mut lock = LockFile::default();
        lock.plugins.insert("fs".into(), entry());
        let place = LockPlace::at(&path).unwrap();
        place.update(|l| *l = lock.clone()).unwrap();
        assert!(!stale.exists(), "the stale temporary file is gone");
        assert_eq!(place.read().unwrap(), lock);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [LOCK_FILE], "nothing else is left beside the lock");
    }

    #[test]
    fn a_symlink_at_the_temporary_name_is_removed_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "the user's file\n").unwrap();
        let stale = dir.path().join(".paddock.lock.tmp");
        std::os::unix::fs::symlink(&victim, &stale).unwrap();
        // A dangling link too: creating through it would make a file where it points.
        let dangling = tempfile::tempdir().unwrap();
        let place = LockPlace::at(&path).unwrap();
        place.write(&LockFile::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "the user's file\n"
        );
        assert!(stale.symlink_metadata().is_err(), "the link itself is gone");
        assert!(!path.symlink_metadata().unwrap().file_type().is_symlink());
        let target = dangling.path().join("made-here");
        std::os::unix::fs::symlink(&target, &stale).unwrap();
        place.write(&LockFile::default()).unwrap();
        assert!(
            !target.exists(),
            "nothing was created where the link pointed"
        );
        assert!(stale.symlink_metadata().is_err());
        assert_eq!(place.read().unwrap(), LockFile::default());
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
        trust(&project, &data);
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

    /// `data` trusts `project`, as `paddock trust` records it.
    fn trust(project: &Path, data: &Path) {
        let config = crate::preset::ProjectConfig::find(project).unwrap();
        crate::preset::TrustStore::open(data)
            .trust(&config)
            .unwrap();
    }

    #[test]
    fn an_untrusted_projects_lock_is_passed_over_for_the_users_own_with_a_note() {
        let root = tempfile::tempdir().unwrap();
        let (project, data) = (root.path().join("project"), root.path().join("data"));
        std::fs::create_dir_all(project.join(".paddock")).unwrap();
        let theirs = project.join(".paddock").join(LOCK_FILE);
        // No lock in it yet: the user's own, and nothing to say.
        let place = LockPlace::find(&project, &data).unwrap();
        assert_eq!(place.path(), data.join(LOCK_FILE));
        assert_eq!(place.ignored(), None);
        std::fs::write(&theirs, "version = 1\n").unwrap();
        let place = LockPlace::find(&project, &data).unwrap();
        assert_eq!(place.path(), data.join(LOCK_FILE));
        let note = place.ignored().unwrap();
        assert!(
            note.contains(&format!("ignoring {}", theirs.display()))
                && note.contains("you have not trusted this repository")
                && note.contains(&format!("paddock trust {}", project.display())),
            "{note}"
        );
        place
            .update(|lock| {
                lock.plugins
                    .insert("fs".into(), entry())
                    .map(drop)
                    .unwrap_or(())
            })
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&theirs).unwrap(),
            "version = 1\n",
            "not recorded into"
        );
        trust(&project, &data);
        let place = LockPlace::find(&project, &data).unwrap();
        assert_eq!(place.path(), theirs);
        assert_eq!(place.ignored(), None);
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
        assert!(
            started.elapsed() >= LOCK_WAIT,
            "it waited for the holder first"
        );
        assert!(err.to_string().contains("fuser -v"), "{err}");
        assert!(!path.exists(), "nothing written");
        holder.unlock().unwrap();
        place.update(|_| {}).unwrap();
        assert!(path.exists());
    }
}
