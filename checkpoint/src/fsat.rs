//! File operations relative to an open directory, never following a symlink: the only way
//! this crate touches a mount. A path below the root is opened one component at a time with
//! `O_NOFOLLOW | O_DIRECTORY`, so a directory swapped for a symlink (to `/`, to another
//! mount) fails the open instead of leading out; nothing is ever resolved by name from `/`.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags, Stat};

/// Opens the directory `name` in `dir`, refusing a symlink or anything not a directory.
pub fn open_dir(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Opens the directory at `rel` below `root`, one component at a time (see the module doc).
/// `rel` must be plain (only normal components).
pub fn open_below(root: BorrowedFd<'_>, rel: &Path) -> std::io::Result<OwnedFd> {
    let mut fd = rustix::io::dup(root)?;
    for part in rel.components() {
        match part {
            Component::Normal(name) => fd = open_dir(fd.as_fd(), name)?,
            Component::CurDir => {}
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{} is not a plain relative path", rel.display()),
                ));
            }
        }
    }
    Ok(fd)
}

/// `lstat` of `name` in `dir`.
pub fn stat(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<Stat> {
    Ok(rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
}

/// Opens the regular file `name` in `dir` for reading; a FIFO swapped in does not block
/// (`O_NONBLOCK`) and is refused by the caller's `fstat`.
pub fn open_file(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?)
}

pub fn is_dir(st: &Stat) -> bool {
    rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
}

pub fn is_file(st: &Stat) -> bool {
    rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
}

pub fn is_link(st: &Stat) -> bool {
    rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
}

/// The names a directory holds (without `.` and `..`).
pub fn list(dir: BorrowedFd<'_>) -> std::io::Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut reader = rustix::fs::Dir::read_from(dir)?;
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(out)
}
