//! The filesystem guard (K2): protected paths enforced for every wasm plugin below the name.
//!
//! Every mutating `wasi:filesystem` operation (see `fsguard_host`) asks `FsGuard` first. The
//! guard never looks at the string a plugin sent as a name to match: it lets the kernel
//! resolve it. The parent of the target is opened relative to the plugin's own directory
//! descriptor with `openat2(RESOLVE_BENEATH)` (so `..`, absolute paths and symlinks cannot
//! leave it, exactly as cap-std will not), its real path is read back from
//! `/proc/self/fd/N`, the final name is appended (and, for an operation that follows a final
//! symlink, the symlink's resolved target is checked too), and the result, relative to the
//! mount's real root, goes to `Protect::covers`. `./.git//config`, `sub/../.git/config`, a
//! symlink to `.git`, a hard link to `.git/config` and a rename over it all resolve to the
//! same protected place.
//!
//! Residual race (documented in docs/hostile-plugins.md): the check and the operation
//! resolve the path separately. Within one call nothing runs between them (a store is single
//! threaded), but another actor running at the same time (a parallel call of a tool with a
//! rw mount on the same tree, a program started through `exec`, the user) could swap a
//! directory on the path for a symlink in that window. Intermediate directories of the
//! checked path are pinned by `FsGuard::pinned` (the operation then runs relative to the
//! held parent, with a single-component name), which leaves only the final component, and an
//! operation on it that does not follow symlinks cannot be redirected.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::fs::ambient;
use crate::fs::git_config;
use crate::fs::mount::openat2;
use crate::fs::protect::Protect;

/// Why a path cannot be written: the WASI error the guest gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Protected: `not-permitted`.
    Protected,
    /// Resolution failed the way the operation itself would have (`ENOENT`, `ENOTDIR`, ...).
    Os(i32),
}

/// Where an operation will act, resolved by the kernel.
pub(crate) enum Target {
    /// A name in a directory.
    Named {
        /// The held parent directory.
        parent: OwnedFd,
        /// The final component, a single name (never `.` or `..`).
        name: PathBuf,
        /// Whether that name was a symlink when checked.
        final_is_symlink: bool,
    },
    /// A path ending in `.` or `..` (e.g. `mkdir /workspace` arrives as `.`): it names an
    /// existing directory, checked as a whole; the operation gets the path unchanged and fails
    /// or succeeds as it would have (`EEXIST` for `mkdir .`).
    Whole,
}

/// The mounts of one call (real paths of their roots) and what is protected in them.
#[derive(Debug, Clone, Default)]
pub(crate) struct FsGuard {
    roots: Vec<PathBuf>,
    protect: Protect,
}

impl FsGuard {
    pub(crate) fn new(roots: Vec<PathBuf>, protect: Protect) -> FsGuard {
        FsGuard { roots, protect }
    }

    /// Checks that `path`, relative to `dir`, may be changed, and pins its parent.
    /// `follow` says the operation follows a final symlink (then its target is checked too);
    /// `holder` says the operation moves or replaces a whole directory (rename), so a
    /// protected path *below* it counts as well.
    pub(crate) fn pinned(
        &self,
        dir: &std::fs::File,
        path: &str,
        follow: bool,
        holder: bool,
    ) -> Result<Target, Refusal> {
        let Some((parent_part, name)) = split(path)? else {
            let whole = open_beneath(dir.as_raw_fd(), Path::new(path), libc::O_PATH)?;
            self.check(&real_path(&whole)?, holder)?;
            return Ok(Target::Whole);
        };
        let parent = open_beneath(dir.as_raw_fd(), &parent_part, libc::O_DIRECTORY)?;
        let parent_real = real_path(&parent)?;
        self.check(&parent_real.join(&name), holder)?;
        let final_is_symlink = is_symlink_at(&parent, &name);
        if follow && final_is_symlink {
            // The operation would follow it: check where it leads, resolved the same way. A
            // dangling or escaping link is refused: creating through it would create its
            // target, which the guard cannot see yet.
            let to = open_beneath(dir.as_raw_fd(), Path::new(path), libc::O_PATH)
                .map_err(|_| Refusal::Protected)?;
            let to_real = real_path(&to)?;
            self.check(&to_real, holder)?;
            // Pin what was checked, not the link: a link retargeted after this check (by a
            // program running beside the call) must not lead the operation elsewhere.
            return self.pinned_resolved(dir, &to_real, holder);
        }
        Ok(Target::Named {
            parent,
            name,
            final_is_symlink,
        })
    }

    /// The target of a followed link, `real` (beneath `dir`), pinned as its own parent and
    /// name, to be operated on without following anything again.
    fn pinned_resolved(
        &self,
        dir: &std::fs::File,
        real: &Path,
        holder: bool,
    ) -> Result<Target, Refusal> {
        let base = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))
            .map_err(|_| Refusal::Protected)?;
        let rel = real.strip_prefix(&base).map_err(|_| Refusal::Protected)?;
        let Some(name) = rel.file_name().map(PathBuf::from) else {
            return Err(Refusal::Protected);
        };
        let parent_part = dot_if_empty(rel.parent().map(Path::to_path_buf).unwrap_or_default());
        let parent = open_beneath(dir.as_raw_fd(), &parent_part, libc::O_DIRECTORY)?;
        self.check(&real_path(&parent)?.join(&name), holder)?;
        Ok(Target::Named {
            parent,
            name,
            final_is_symlink: false,
        })
    }

    /// Checks an already open file or directory (e.g. `set-times` on a descriptor).
    pub(crate) fn check_open(&self, file: &std::fs::File) -> Result<(), Refusal> {
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|_| Refusal::Protected)?;
        self.check(&real, false)
    }

    /// Is the real path `real` writable under every mount root that contains it?
    fn check(&self, real: &Path, holder: bool) -> Result<(), Refusal> {
        let mut inside = false;
        for root in &self.roots {
            let Ok(rel) = real.strip_prefix(root) else {
                continue;
            };
            inside = true;
            let covered = self.protect.covers(rel)
                || (holder && self.protect.holds(rel))
                || in_git_dir(root, rel, &self.protect)
                || completes_git_dir(real)
                || named_by_git_config(real, holder, root, &self.protect);
            if covered {
                return Err(Refusal::Protected);
            }
        }
        // A place under no mount root: the directory was moved out from under the mount
        // while held. Nothing there was granted by path; refuse rather than guess.
        if inside {
            Ok(())
        } else {
            Err(Refusal::Protected)
        }
    }
}

/// Is `rel` (below `root`, or `root` itself) a directory git would take for a git directory,
/// or inside one, whatever its name (a bare repository, a `--separate-git-dir`,
/// `.repo/projects/x.git`)? Git runs what such a directory's `config` and `hooks/` name, as it
/// does for `.git`.
fn in_git_dir(root: &Path, rel: &Path, protect: &Protect) -> bool {
    let mut dir = root.to_path_buf();
    let mut below = PathBuf::new();
    if is_git_dir(&dir) && !protect.opens(&below) {
        return true;
    }
    for part in rel.components() {
        dir.push(part);
        below.push(part);
        if is_git_dir(&dir) && !protect.opens(&below) {
            return true;
        }
    }
    false
}

/// Would creating `real` (or renaming something to it) turn its directory into one git
/// takes for a git directory? The last of `HEAD`, `objects` + `refs` (or `commondir`) to
/// arrive is refused, whatever the order and whatever its type (`ambient::is_git_dir`).
fn completes_git_dir(real: &Path) -> bool {
    let (Some(name), Some(dir)) = (real.file_name(), real.parent()) else {
        return false;
    };
    if !ambient::GIT_DIR_MARKERS.iter().any(|m| name == *m) {
        return false;
    }
    ambient::is_git_dir(|n| name == n || exists(&dir.join(n)))
}

fn is_git_dir(dir: &Path) -> bool {
    ambient::is_git_dir(|n| exists(&dir.join(n)))
}

/// Does the configuration of the repository git finds from `real`'s directory (or the
/// user's own) name `real`, or, for an operation that moves a whole directory, something
/// below it (`git_config`: hooks directories, included files, scripts git runs)? A path the
/// grant's `writable_protected` opens stays writable.
fn named_by_git_config(real: &Path, holder: bool, root: &Path, protect: &Protect) -> bool {
    let Some(repo) = real.parent().and_then(git_config::repo_above) else {
        return false;
    };
    let opened = real.strip_prefix(root).is_ok_and(|rel| protect.opens(rel));
    !opened
        && git_config::named_paths(&repo)
            .iter()
            .any(|named| real.starts_with(named) || (holder && named.starts_with(real)))
}

/// Is there an entry at `path`, of any type (a dangling symlink counts)?
fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// `path` as (everything before the last component, the last component), or `None` when
/// the last component is `.` or `..` (or there is none): such a path names a directory by
/// climbing and is resolved whole.
fn split(path: &str) -> Result<Option<(PathBuf, PathBuf)>, Refusal> {
    let p = Path::new(path);
    if p.is_absolute() {
        // cap-std refuses absolute paths; refuse them the same way.
        return Err(Refusal::Protected);
    }
    let mut parts: Vec<Component<'_>> = p.components().collect();
    match parts.pop() {
        Some(Component::Normal(name)) => {
            let parent: PathBuf = parts.iter().collect();
            Ok(Some((dot_if_empty(parent), PathBuf::from(name))))
        }
        _ => Ok(None),
    }
}

fn dot_if_empty(path: PathBuf) -> PathBuf {
    if path.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        path
    }
}

/// Opens `path` beneath `dir`: the kernel refuses `..` above it, absolute paths and
/// symlinks leading out (`RESOLVE_BENEATH`), and follows symlinks that stay inside.
fn open_beneath(dir: i32, path: &Path, flags: i32) -> Result<OwnedFd, Refusal> {
    openat2(dir, path, flags | libc::O_RDONLY, libc::RESOLVE_BENEATH).map_err(|e| {
        match e.raw_os_error() {
            // EXDEV: it would leave the directory; ELOOP: too many links. cap-std refuses both.
            Some(libc::EXDEV) | Some(libc::ELOOP) | None => Refusal::Protected,
            Some(code) => Refusal::Os(code),
        }
    })
}

fn real_path(fd: &OwnedFd) -> Result<PathBuf, Refusal> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| Refusal::Protected)
}

/// Is `name` in `parent` a symlink (not followed)?
fn is_symlink_at(parent: &OwnedFd, name: &Path) -> bool {
    let Ok(c_name) = CString::new(OsStr::as_bytes(name.as_os_str())) else {
        return false;
    };
    // SAFETY: `st` is written by the kernel before it is read; `c_name` is NUL-terminated and
    // `parent` an open descriptor.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstatat(
            parent.as_raw_fd(),
            c_name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        ) == 0
            && (st.st_mode & libc::S_IFMT) == libc::S_IFLNK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    fn guard(root: &Path) -> FsGuard {
        FsGuard::new(vec![root.to_path_buf()], Protect::default())
    }

    fn allowed(g: &FsGuard, dir: &std::fs::File, path: &str, follow: bool) -> bool {
        g.pinned(dir, path, follow, false).is_ok()
    }

    #[test]
    fn odd_spellings_symlinks_and_climbs_resolve_to_the_protected_place() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::os::unix::fs::symlink(".git", root.join("g")).expect("symlink");
        std::os::unix::fs::symlink(".git/config", root.join("cfg")).expect("symlink");
        std::os::unix::fs::symlink("/etc", root.join("out")).expect("symlink");
        let dir = std::fs::File::open(&root).expect("open root");
        let g = guard(&root);
        for path in [
            ".git/config",
            "./.git//config",
            "sub/../.git/config",
            "g/config",
            "g/hooks/pre-commit",
            ".git",
            ".cargo/config.toml",
            ".paddock/presets/x.toml",
        ] {
            assert!(!allowed(&g, &dir, path, false), "{path} must be refused");
        }
        // Following a symlink to a protected file is refused; not following only touches
        // the link itself.
        assert!(!allowed(&g, &dir, "cfg", true));
        assert!(allowed(&g, &dir, "cfg", false));
        // Leaving the mount is refused, not resolved elsewhere.
        assert!(!allowed(&g, &dir, "out/passwd", false));
        assert!(!allowed(&g, &dir, "../x", false));
        assert!(!allowed(&g, &dir, "/etc/passwd", false));
        assert!(allowed(&g, &dir, "src.rs", false));
        assert!(allowed(&g, &dir, "sub/new.txt", false));
        // A missing parent fails as the operation would.
        assert_eq!(
            g.pinned(&dir, "nope/x", false, false).err(),
            Some(Refusal::Os(libc::ENOENT))
        );
        // `mkdir .` is checked as the directory itself, and left to fail as it would.
        assert!(matches!(
            g.pinned(&dir, ".", false, false),
            Ok(Target::Whole)
        ));
        assert!(g.pinned(&dir, ".git/hooks/..", false, false).is_err());
        // Renaming a directory to `.cargo` would make its config.toml live.
        assert!(g.pinned(&dir, ".cargo", false, true).is_err());
        assert!(g.pinned(&dir, ".cargo", false, false).is_ok());
    }

    #[test]
    fn a_git_directory_under_any_name_is_protected_and_cannot_be_completed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        for d in ["sep/objects", "sep/refs", "half/objects", "wt", "plain"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join("sep/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(root.join("half/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(root.join("wt/HEAD"), "x").expect("write");
        std::fs::write(root.join("wt/commondir"), "../sep").expect("write");
        let dir = std::fs::File::open(&root).expect("open root");
        let g = guard(&root);
        for path in [
            "sep/config",
            "sep/hooks/pre-commit",
            "sep",
            "wt/config",
            "half/refs",
        ] {
            assert!(!allowed(&g, &dir, path, false), "{path} must be refused");
        }
        // An ordinary directory stays writable, and so does one short of a git directory
        // for anything but the entry that would complete it.
        assert!(allowed(&g, &dir, "plain/HEAD", false));
        assert!(allowed(&g, &dir, "half/config", false));
        std::fs::create_dir(root.join("plain/objects")).expect("mkdir");
        std::fs::create_dir(root.join("plain/refs")).expect("mkdir");
        assert!(!allowed(&g, &dir, "plain/HEAD", false));
        // The preset can open one up by name.
        let open = FsGuard::new(
            vec![root.clone()],
            Protect {
                extra: Vec::new(),
                writable: vec!["sep".into()],
            },
        );
        assert!(allowed(&open, &dir, "sep/config", false));
    }

    /// git asks `access(X_OK)` of `objects` and `refs`: a symlink or an executable file will
    /// do, so neither can be the last piece of a git directory, and the mount's root counts.
    #[test]
    fn a_git_directory_of_links_or_files_and_the_root_itself_are_held() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        for d in ["src", "lib/refs", "store/objects"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join("src/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::os::unix::fs::symlink("../store/objects", root.join("src/objects")).expect("ln");
        std::fs::write(root.join("lib/HEAD"), "ref: refs/heads/main\n").expect("write");
        let dir = std::fs::File::open(&root).expect("open root");
        let g = guard(&root);
        // `src` lacks refs: a symlink, a file or a directory named so would complete it.
        assert!(!allowed(&g, &dir, "src/refs", false));
        assert!(allowed(&g, &dir, "src/config", false));
        // `lib` lacks objects: an executable file by that name would complete it.
        assert!(!allowed(&g, &dir, "lib/objects", false));
        // The root: HEAD is the last piece once objects and refs stand there.
        std::fs::create_dir(root.join("refs")).expect("mkdir");
        std::os::unix::fs::symlink("store/objects", root.join("objects")).expect("ln");
        assert!(!allowed(&g, &dir, "HEAD", false));
        std::fs::write(root.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        // Once the root is a git directory, nothing in it is writable.
        assert!(!allowed(&g, &dir, "notes.txt", false));
        assert!(!allowed(&g, &dir, "config", false));
    }

    #[test]
    fn paths_the_repositorys_own_config_names_are_protected() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        for d in [".git/objects", ".git/refs", ".githooks", "tools"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../team.gitconfig\n\
             [filter \"fmt\"]\n\tclean = tools/fmt.sh %f\n",
        )
        .expect("write");
        let dir = std::fs::File::open(&root).expect("open root");
        let g = guard(&root);
        for path in [".githooks/pre-commit", "team.gitconfig", "tools/fmt.sh"] {
            assert!(!allowed(&g, &dir, path, false), "{path} must be refused");
        }
        assert!(
            g.pinned(&dir, "tools", false, true).is_err(),
            "a move of its directory"
        );
        assert!(allowed(&g, &dir, "tools/other.sh", false));
        assert!(allowed(&g, &dir, "src.rs", false));
    }

    #[test]
    fn the_inventory_names_are_protected_at_any_depth() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("web/.yarn/releases")).expect("mkdir");
        let dir = std::fs::File::open(&root).expect("open root");
        let g = guard(&root);
        for path in [
            "rust-toolchain.toml",
            "rust-toolchain",
            "web/.npmrc",
            "web/.yarnrc.yml",
            "web/.yarn/releases/yarn-4.cjs",
            ".vscode",
            ".pre-commit-config.yaml",
        ] {
            assert!(!allowed(&g, &dir, path, false), "{path} must be refused");
        }
        assert!(allowed(&g, &dir, "web/.yarn/install-state.gz", false));
        // Moving a directory to `.yarn` would bring a `releases` along.
        assert!(g.pinned(&dir, "web/.yarn", false, true).is_err());
    }

    #[test]
    fn a_followed_link_is_pinned_at_what_was_checked_so_retargeting_it_changes_nothing() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join(".git/config"), "safe").expect("write");
        std::fs::write(root.join("sub/ok.txt"), "ok").expect("write");
        std::os::unix::fs::symlink("sub/ok.txt", root.join("link")).expect("symlink");
        let dir = std::fs::File::open(&root).expect("open root");
        let Ok(Target::Named {
            parent,
            name,
            final_is_symlink,
        }) = guard(&root).pinned(&dir, "link", true, false)
        else {
            panic!("a link to an ordinary file is allowed");
        };
        assert_eq!(name, PathBuf::from("ok.txt"));
        assert!(!final_is_symlink, "the operation follows nothing more");
        assert_eq!(real_path(&parent).unwrap(), root.join("sub"));
        // Retarget the link at a protected file after the check, as a racing program would.
        std::fs::remove_file(root.join("link")).expect("unlink");
        std::os::unix::fs::symlink(".git/config", root.join("link")).expect("symlink");
        let c_name = CString::new("ok.txt").unwrap();
        // SAFETY: a valid descriptor and name; the result is checked and closed.
        let fd = unsafe {
            libc::openat(
                parent.as_raw_fd(),
                c_name.as_ptr(),
                libc::O_WRONLY | libc::O_NOFOLLOW,
            )
        };
        assert!(fd >= 0);
        // SAFETY: our own descriptor.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        std::io::Write::write_all(&mut file, b"x").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config")).unwrap(),
            "safe"
        );
    }
}
