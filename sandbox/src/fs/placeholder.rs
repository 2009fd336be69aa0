//! Protected paths that cannot be created at a writable root (K2), for the exec side.
//!
//! A bind mount can only cover something that exists, and a protected path that does not
//! exist yet (`.git` in a directory that is not a repository, `.cargo/config.toml`) would
//! otherwise be the program's to create, with paddock left to notice and remove it after the
//! fact. So before a confined program starts, each protected path the root can hold directly
//! (`Protect::at_root`) is made un-creatable in its mount namespace:
//!
//! - its first missing component gets a *placeholder*: an empty directory (mode 0500; an empty
//!   file, mode 0400, for the last component of a `protect` entry), which the child binds
//!   read-only over itself, so nothing can be created in it, and it cannot be removed or
//!   renamed (it is a mount point);
//! - each existing directory or file on the way is *pinned*: bound onto itself (writable as
//!   before), so it cannot be renamed away and replaced; a project's existing `.cargo/` is
//!   bound read-only whole (a placeholder `config` next to a real `config.toml` would change
//!   what cargo reads);
//! - a symbolic link on the way is refused: what it leads to could be created through it.
//!
//! Placeholders are visible to the rest of the system while a program (or an MCP server) runs,
//! and are removed when the last user of one is done: each user holds a shared `flock` on it,
//! and removal takes the exclusive lock without waiting, checks the name still refers to the
//! placeholder and that it is empty, and removes it relative to the held parent. One left by
//! a paddock that was killed looks the same (empty, that mode, ours), so the next run adopts
//! and removes it.
//!
//! What it does not do: hold protected paths below the root's own entries (`protect_walk`
//! finds and binds the existing ones, and the run's clean-up removes created ones).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use crate::fs::ambient;
use crate::fs::mount::MountHandle;
use crate::fs::protect::Protect;
use crate::fs::protect_walk::{self, open_dir_at, stat_at, unlink_at};

const DIR_MODE: libc::mode_t = 0o500;
const FILE_MODE: libc::mode_t = 0o400;

/// What the child binds at one writable root, and the placeholders held until it is over.
#[derive(Default)]
pub(crate) struct RootHold {
    /// Paths (under the root's `/proc/self/fd/N`) to bind onto themselves, writable.
    pub pins: Vec<PathBuf>,
    /// Paths to bind read-only: placeholders, and directories held whole.
    pub read_only: Vec<PathBuf>,
    held: Vec<Placeholder>,
}

/// A placeholder this process holds a shared lock on.
struct Placeholder {
    parent: OwnedFd,
    name: OsString,
    lock: OwnedFd,
    identity: (u64, u64),
    is_dir: bool,
}

impl RootHold {
    /// Prepares `root` so that none of `protect`'s root-level paths can be created in it.
    pub(crate) fn prepare(root: &MountHandle, protect: &Protect) -> Result<RootHold, String> {
        let mut hold = RootHold::default();
        let base = root.proc_path();
        let patterns = protect
            .at_root()
            .into_iter()
            .map(|p| {
                let as_file = is_extra(&p);
                (p, as_file)
            })
            .chain(root_git_markers(root, protect));
        for (pattern, as_file) in patterns {
            // A placeholder another run is removing right now is gone by the time its lock is
            // ours: then look again (it is made anew).
            let mut tries = 0;
            while !hold
                .one(root, &base, &pattern, as_file)
                .map_err(|e| format!("protected path `{}`: {e}", pattern.display()))?
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_micros(50 * tries));
                if tries == 50 {
                    return Err(format!(
                        "protected path `{}`: its placeholder kept changing while paddock set it \
                         up; try again",
                        pattern.display()
                    ));
                }
            }
        }
        for paths in [&mut hold.pins, &mut hold.read_only] {
            paths.sort();
            paths.dedup();
        }
        Ok(hold)
    }

    /// `Ok(false)`: a placeholder vanished while it was being taken; look again.
    fn one(
        &mut self,
        root: &MountHandle,
        base: &Path,
        pattern: &Path,
        as_file: bool,
    ) -> Result<bool, String> {
        let parts: Vec<&OsStr> = pattern.iter().collect();
        let mut dir = dup(root.fd().as_raw_fd())?;
        let mut rel = PathBuf::new();
        for (i, part) in parts.iter().enumerate() {
            rel.push(part);
            let last = i + 1 == parts.len();
            let Some(stat) = stat_at(dir.as_raw_fd(), part) else {
                // Missing: a placeholder (a file only where `as_file` asks for one).
                let is_dir = !(last && as_file);
                let Some(made) = Placeholder::make(dup(dir.as_raw_fd())?, part, is_dir)? else {
                    return Ok(false);
                };
                self.held.push(made);
                self.read_only.push(base.join(&rel));
                return Ok(true);
            };
            match stat.st_mode & libc::S_IFMT {
                libc::S_IFLNK => {
                    return Err(format!(
                        "`{}` is a symbolic link, through which a program could create it; \
                         replace the link by what it points to, or list it in \
                         `writable_protected` in the preset",
                        rel.display()
                    ));
                }
                _ if Placeholder::looks_like(&stat, dir.as_raw_fd(), part) => {
                    // Another run's (or a killed paddock's): adopt it, so it is held read-only
                    // and removed by whoever is done with it last.
                    let is_dir = stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
                    let Some(adopted) = Placeholder::adopt(dup(dir.as_raw_fd())?, part, is_dir)?
                    else {
                        return Ok(false);
                    };
                    self.held.push(adopted);
                    self.read_only.push(base.join(&rel));
                    return Ok(true);
                }
                _ if stat_at(dir.as_raw_fd(), part).map(|now| (now.st_dev, now.st_ino))
                    != Some((stat.st_dev, stat.st_ino)) =>
                {
                    // Gone or replaced while it was looked at (a placeholder its last user
                    // was removing): look again.
                    return Ok(false);
                }
                _ if last => return Ok(true), // exists: `protect_walk` finds and binds it
                libc::S_IFDIR if *part == ".cargo" && i == 0 => {
                    self.read_only.push(base.join(&rel));
                    return Ok(true);
                }
                libc::S_IFDIR => {
                    self.pins.push(base.join(&rel));
                    dir = open_dir_at(dir.as_raw_fd(), part)
                        .map_err(|e| format!("cannot open `{}`: {e}", rel.display()))?;
                }
                _ => {
                    // A file where a directory would be: nothing can be created below it, and
                    // pinned, it cannot be replaced by a directory.
                    self.pins.push(base.join(&rel));
                    return Ok(true);
                }
            }
        }
        Ok(true)
    }
}

/// `protect` entries end in a name the user chose (`.envrc`, `secrets.json`): a file stand-in
/// fits them. The inventory's names get an empty directory: every tool that reads one of them
/// reads nothing from a directory (rustup, for one, skips a `rust-toolchain.toml` it cannot
/// read, where an empty file would be an error in every cargo command the program runs).
fn is_extra(pattern: &Path) -> bool {
    !ambient::NAMES
        .iter()
        .any(|entry| pattern == Path::new(entry.path))
}

/// The placeholders that keep the root itself from becoming a git directory (git takes the
/// directory it starts in for a bare repository when it holds `HEAD`, `objects` and `refs` and
/// no valid `.git` stands there): `HEAD`, an empty directory git cannot read as a head, where
/// it is missing; where the root has a `HEAD`, the missing ones of `objects`, `refs` and
/// `commondir` as empty files of mode 0400, which fail git's `access(X_OK)`. None when the
/// root already holds a git directory `.git` (git stops there) or the grant opens the root.
fn root_git_markers(root: &MountHandle, protect: &Protect) -> Vec<(PathBuf, bool)> {
    if protect.opens(Path::new("")) {
        return Vec::new();
    }
    let fd = root.fd().as_raw_fd();
    let dot_git_is_repo = open_dir_at(fd, OsStr::new(".git")).is_ok_and(|git| {
        ambient::is_git_dir(|n| stat_at(git.as_raw_fd(), OsStr::new(n)).is_some())
    });
    if dot_git_is_repo {
        return Vec::new();
    }
    // No `HEAD`, or a directory (another run's placeholder, to adopt; git reads no head from
    // a directory): `HEAD` is held. The decision depends only on the type, which a
    // placeholder coming and going never changes.
    let head = stat_at(fd, OsStr::new("HEAD"));
    if head.is_none_or(|s| s.st_mode & libc::S_IFMT == libc::S_IFDIR) {
        return vec![(PathBuf::from("HEAD"), false)];
    }
    ["objects", "refs", "commondir"]
        .iter()
        .filter(|m| stat_at(fd, OsStr::new(m)).is_none())
        .map(|m| (PathBuf::from(m), true))
        .collect()
}

impl Placeholder {
    /// Creates the placeholder `name` in `parent` and takes a shared lock on it.
    /// `Ok(None)`: it vanished before it was held (see `adopt`).
    fn make(parent: OwnedFd, name: &OsStr, is_dir: bool) -> Result<Option<Placeholder>, String> {
        let c = c_name(name)?;
        let made = if is_dir {
            // SAFETY: a valid C string and a descriptor we hold.
            unsafe { libc::mkdirat(parent.as_raw_fd(), c.as_ptr(), DIR_MODE) }
        } else {
            let flags =
                libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: a valid C string and a descriptor we hold.
            let fd = unsafe { libc::openat(parent.as_raw_fd(), c.as_ptr(), flags, FILE_MODE) };
            if fd >= 0 {
                // SAFETY: a descriptor only we hold.
                unsafe { libc::close(fd) };
            }
            fd.min(0)
        };
        if made == -1 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(format!("cannot create a placeholder for it: {e}"));
            }
            // Someone made it in between: it is theirs to hold, or a placeholder to adopt.
        }
        Placeholder::adopt(parent, name, is_dir)
    }

    /// Takes a shared lock on the placeholder `name` in `parent`. `Ok(None)`: it was removed
    /// (or replaced) before the lock was ours, as its last user was removing it.
    fn adopt(parent: OwnedFd, name: &OsStr, is_dir: bool) -> Result<Option<Placeholder>, String> {
        let c = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid C string and a descriptor we hold.
        let fd = unsafe { libc::openat(parent.as_raw_fd(), c.as_ptr(), flags) };
        if fd == -1 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOENT) {
                return Ok(None);
            }
            return Err(format!("cannot open its placeholder: {e}"));
        }
        // SAFETY: a fresh descriptor only we hold.
        let lock = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: flock on our own descriptor.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_SH) } == -1 {
            return Err(format!(
                "cannot lock its placeholder: {}",
                std::io::Error::last_os_error()
            ));
        }
        let held = fstat(lock.as_raw_fd())?;
        let named = stat_at(parent.as_raw_fd(), name);
        if named.map(|s| (s.st_dev, s.st_ino)) != Some((held.st_dev, held.st_ino)) {
            return Ok(None);
        }
        Ok(Some(Placeholder {
            parent,
            name: name.to_os_string(),
            lock,
            identity: (held.st_dev, held.st_ino),
            is_dir,
        }))
    }

    /// An empty directory of mode 0500 or empty file of mode 0400, owned by this user.
    fn looks_like(stat: &libc::stat, parent: RawFd, name: &OsStr) -> bool {
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        if stat.st_uid != uid {
            return false;
        }
        match (stat.st_mode & libc::S_IFMT, stat.st_mode & 0o7777) {
            (libc::S_IFDIR, DIR_MODE) => open_dir_at(parent, name)
                .ok()
                .and_then(|d| std::fs::read_dir(format!("/proc/self/fd/{}", d.as_raw_fd())).ok())
                .is_some_and(|mut entries| entries.next().is_none()),
            (libc::S_IFREG, FILE_MODE) => stat.st_size == 0,
            _ => false,
        }
    }
}

impl Drop for Placeholder {
    /// Removed when no one else holds it (their shared lock keeps it), still ours and empty.
    fn drop(&mut self) {
        // SAFETY: flock on our own descriptor.
        if unsafe { libc::flock(self.lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == -1 {
            return;
        }
        let parent = self.parent.as_raw_fd();
        let Some(now) = stat_at(parent, &self.name) else {
            return;
        };
        if (now.st_dev, now.st_ino) != self.identity
            || !Placeholder::looks_like(&now, parent, &self.name)
        {
            return;
        }
        let flags = if self.is_dir { libc::AT_REMOVEDIR } else { 0 };
        let _ = unlink_at(parent, &self.name, flags);
    }
}

fn fstat(fd: RawFd) -> Result<libc::stat, String> {
    // SAFETY: fstat on our own descriptor into zeroed memory.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above: our descriptor, and an out pointer to memory we own.
    if unsafe { libc::fstat(fd, &mut stat) } == -1 {
        return Err(format!("fstat: {}", std::io::Error::last_os_error()));
    }
    Ok(stat)
}

fn dup(fd: RawFd) -> Result<OwnedFd, String> {
    protect_walk::dup(fd).map_err(|e| format!("dup: {e}"))
}

fn c_name(name: &OsStr) -> Result<std::ffi::CString, String> {
    protect_walk::c_name(name).map_err(|_| "the name has a NUL byte".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(paths: &[PathBuf], base: &Path) -> Vec<String> {
        paths
            .iter()
            .map(|p| p.strip_prefix(base).unwrap().display().to_string())
            .collect()
    }

    /// Every name of the inventory that is held where missing, and the root's `HEAD`.
    fn inventory_at_root() -> Vec<String> {
        let mut names: Vec<String> = ambient::NAMES
            .iter()
            .filter(|e| e.hold_missing)
            .map(|e| e.path.split('/').next().unwrap().to_string())
            .chain(["HEAD".to_string()])
            .collect();
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn missing_protected_paths_get_placeholders_removed_when_the_hold_ends() {
        let dir = tempfile::tempdir().unwrap();
        let root = MountHandle::open(&dir.path().canonicalize().unwrap()).unwrap();
        let protect = Protect {
            extra: vec![".envrc".into(), "conf/secrets.json".into()],
            writable: Vec::new(),
        };
        std::fs::create_dir(dir.path().join("conf")).unwrap();
        let hold = RootHold::prepare(&root, &protect).unwrap();
        let base = root.proc_path();
        let mut want = inventory_at_root();
        want.extend([".envrc".to_string(), "conf/secrets.json".to_string()]);
        want.sort();
        assert_eq!(names(&hold.read_only, &base), want);
        assert_eq!(names(&hold.pins, &base), ["conf"]);
        assert!(dir.path().join(".git").is_dir());
        assert!(dir.path().join(".envrc").is_file());
        assert!(
            dir.path().join("rust-toolchain.toml").is_dir(),
            "an inventory name's placeholder is a directory, which its tool skips"
        );
        // A second hold (a parallel run) adopts them; the first one's end leaves them.
        let second = RootHold::prepare(&root, &protect).unwrap();
        drop(hold);
        assert!(dir.path().join(".git").is_dir(), "still held by the second");
        drop(second);
        for p in want {
            assert!(!dir.path().join(&p).exists(), "{p} left behind");
        }
        assert!(dir.path().join("conf").is_dir());
    }

    #[test]
    fn existing_paths_are_left_to_the_walk_and_cargo_is_held_whole() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join(".cargo")).unwrap();
        let root = MountHandle::open(&dir.path().canonicalize().unwrap()).unwrap();
        let hold = RootHold::prepare(&root, &Protect::default()).unwrap();
        let base = root.proc_path();
        let held = names(&hold.read_only, &base);
        assert!(held.contains(&".cargo".to_string()) && held.contains(&".paddock".to_string()));
        assert!(!held.contains(&".git".to_string()), "the walk binds it");
        assert!(
            held.contains(&"HEAD".to_string()),
            "an empty .git is no repository: git would look at the root itself"
        );
        assert!(hold.pins.is_empty());
        drop(hold);
        assert!(dir.path().join(".git").is_dir() && dir.path().join(".cargo").is_dir());
    }

    /// The root cannot become a git directory: with a repository in `.git` nothing is needed;
    /// with a `HEAD` of the user's, the missing `objects` and `refs` are held as files git's
    /// `access(X_OK)` refuses.
    #[test]
    fn the_root_cannot_be_completed_into_a_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        for d in [".git/objects", ".git/refs"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let root = MountHandle::open(&dir.path().canonicalize().unwrap()).unwrap();
        let hold = RootHold::prepare(&root, &Protect::default()).unwrap();
        assert!(!names(&hold.read_only, &root.proc_path()).contains(&"HEAD".to_string()));
        drop(hold);
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("HEAD"), "mine").unwrap();
        let root = MountHandle::open(&other.path().canonicalize().unwrap()).unwrap();
        let hold = RootHold::prepare(&root, &Protect::default()).unwrap();
        let held = names(&hold.read_only, &root.proc_path());
        for m in ["commondir", "objects", "refs"] {
            assert!(held.contains(&m.to_string()), "{m}: {held:?}");
            let meta = std::fs::symlink_metadata(other.path().join(m)).unwrap();
            assert!(meta.is_file());
            assert_eq!(
                std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
                0o400
            );
        }
        drop(hold);
        assert!(!other.path().join("objects").exists());
        assert_eq!(
            std::fs::read_to_string(other.path().join("HEAD")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn runs_taking_and_releasing_the_same_placeholders_at_once_never_fail() {
        let dir = tempfile::tempdir().unwrap();
        let root =
            std::sync::Arc::new(MountHandle::open(&dir.path().canonicalize().unwrap()).unwrap());
        let want = inventory_at_root().len();
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let root = root.clone();
                std::thread::spawn(move || {
                    for _ in 0..300 {
                        let hold = RootHold::prepare(&root, &Protect::default()).unwrap();
                        assert_eq!(hold.read_only.len(), want);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        for p in inventory_at_root() {
            assert!(!dir.path().join(&p).exists(), "{p} left behind");
        }
    }

    #[test]
    fn a_symlink_on_the_way_is_refused_and_a_killed_runs_placeholder_adopted() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("elsewhere", dir.path().join(".paddock")).unwrap();
        let root = MountHandle::open(&dir.path().canonicalize().unwrap()).unwrap();
        let err = RootHold::prepare(&root, &Protect::default()).err().unwrap();
        assert!(err.contains("`.paddock` is a symbolic link"), "{err}");
        std::fs::remove_file(dir.path().join(".paddock")).unwrap();
        // What a killed paddock leaves behind: adopted, then removed.
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let mut perms = std::fs::metadata(dir.path().join(".git"))
            .unwrap()
            .permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o500);
        std::fs::set_permissions(dir.path().join(".git"), perms).unwrap();
        drop(RootHold::prepare(&root, &Protect::default()).unwrap());
        assert!(!dir.path().join(".git").exists());
    }
}
