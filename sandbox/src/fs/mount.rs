//! Mounts held by handle (K3): a mount's host directory is opened once per session, refusing a
//! symlink anywhere in its path, and every call uses that open directory, never the name.
//!
//! A plugin with `.` mounted read-write can replace a nested mount directory (`./out`) with a
//! symlink to `/`. Re-opening the mount by name on the next call would then hand the whole disk
//! to that call; holding the directory open and opening `/proc/self/fd/N` (the kernel's link
//! to the held directory, whatever now stands at its old name) never follows the swap. Before
//! each call the name is also checked: if it no longer refers to the same directory (device and
//! inode), the call is refused, naming the mount, so the user learns something moved.
//!
//! The exec side binds its rules (Landlock, working directory) to the same handle:
//! `MountHandle::fd` and `MountHandle::proc_path`.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An open mount directory and the identity it had when opened.
#[derive(Debug)]
pub struct MountHandle {
    fd: OwnedFd,
    dev: u64,
    ino: u64,
    /// The absolute path it was opened at (symlink-free when opened).
    path: PathBuf,
}

impl PartialEq for MountHandle {
    fn eq(&self, other: &MountHandle) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }
}

impl Eq for MountHandle {}

impl MountHandle {
    /// Opens the directory at `path` (absolute) without following any symlink on the way
    /// (`openat2` with `RESOLVE_NO_SYMLINKS`; where the kernel lacks `openat2`, `O_NOFOLLOW`
    /// on the last component after checking the rest is already canonical).
    pub fn open(path: &Path) -> std::io::Result<MountHandle> {
        if !path.is_absolute() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not an absolute path", path.display()),
            ));
        }
        let fd = open_no_symlinks(path)?;
        let file = std::fs::File::from(fd);
        let meta = file.metadata()?;
        if !meta.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", path.display()),
            ));
        }
        let fd = OwnedFd::from(file);
        // The kernel's name for what was opened: `..` and `.` resolved.
        let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .unwrap_or_else(|_| path.to_path_buf());
        Ok(MountHandle {
            fd,
            dev: meta.dev(),
            ino: meta.ino(),
            path,
        })
    }

    /// The held directory, for `openat`-style use (Landlock rules, `fchdir`).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// `/proc/self/fd/N`: opening it reopens the held directory itself, not whatever now
    /// stands at the name.
    pub fn proc_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// Device and inode of the held directory.
    pub fn identity(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    /// The path the directory was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Does the name still refer to the held directory? `Err` says what changed.
    pub fn verify(&self) -> Result<(), String> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                Err("it was replaced by a symbolic link".to_string())
            }
            Ok(meta) if (meta.dev(), meta.ino()) != (self.dev, self.ino) => Err(format!(
                "it now refers to another {} (device {} inode {}, was device {} inode {})",
                if meta.is_dir() { "directory" } else { "file" },
                meta.dev(),
                meta.ino(),
                self.dev,
                self.ino
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(format!("it cannot be found any more ({e})")),
        }
    }
}

/// The kernel's `struct open_how` (libc's is `non_exhaustive`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, flags, resolve)`; `Err(ENOSYS)` on kernels before 5.6.
pub(crate) fn openat2(
    dir: libc::c_int,
    path: &Path,
    flags: libc::c_int,
    resolve: u64,
) -> std::io::Result<OwnedFd> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve,
    };
    // SAFETY: `c_path` is a valid NUL-terminated string and `how` a valid `open_how` of the
    // size passed; the kernel writes nothing back.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            c_path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Opens the regular file at `path` (absolute, canonical) for reading with no symlink anywhere
/// on the way, so what is read is the file that path names now, whatever was swapped in since
/// it was checked: for files paddock itself reads from places a session may write (a skill's).
pub fn open_file_no_symlinks(path: &Path) -> std::io::Result<std::fs::File> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW;
    let file = std::fs::File::from(open_path_no_symlinks(path, flags)?);
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

/// Opens the directory at `path` with no symlink anywhere on the way.
fn open_no_symlinks(path: &Path) -> std::io::Result<OwnedFd> {
    open_path_no_symlinks(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)
}

/// Opens `path` with `flags` and no symlink anywhere on the way.
fn open_path_no_symlinks(path: &Path, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    match openat2(libc::AT_FDCWD, path, flags, libc::RESOLVE_NO_SYMLINKS) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
        other => return other,
    }
    // Older kernel: every component but the last must already be what it is canonically
    // (callers pass a canonical path), and O_NOFOLLOW refuses a symlink as the last.
    if path.parent().and_then(|p| p.canonicalize().ok()).as_deref() != path.parent() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a canonical path", path.display()),
        ));
    }
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a valid C string and plain flags.
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_mount_notices_a_symlink_swap_and_still_reopens_the_original() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let out = root.join("out");
        std::fs::create_dir(&out).expect("mkdir");
        std::fs::write(out.join("inside"), "x").expect("write");
        let handle = MountHandle::open(&out).expect("open");
        assert!(handle.verify().is_ok());

        std::fs::rename(&out, root.join("moved")).expect("rename");
        std::os::unix::fs::symlink("/", &out).expect("symlink");
        let err = handle.verify().expect_err("swap noticed");
        assert!(err.contains("symbolic link"), "{err}");
        // The proc path still reaches the original directory, not `/`.
        assert!(handle.proc_path().join("inside").exists());
        assert!(!handle.proc_path().join("etc").exists());
    }

    #[test]
    fn opening_refuses_symlinks_on_the_way() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("real")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).expect("symlink");
        assert!(MountHandle::open(&root.join("link")).is_err());
        std::fs::create_dir(root.join("real/sub")).expect("mkdir");
        assert!(MountHandle::open(&root.join("link/sub")).is_err());
        assert!(MountHandle::open(&root.join("real/sub")).is_ok());
    }
}
