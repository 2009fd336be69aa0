//! A skill's folder held by descriptor: opened once when the skill is found (no symlink on the
//! way), then its files listed and opened only beneath that descriptor, each step `openat`
//! with `O_NOFOLLOW`, never by a path re-resolved later. A session that can write where a
//! skill lives (a preset's `skills` folder inside a writable mount) and swaps the folder, or a
//! folder inside it, for a symlink after the skill was found, leads neither the listing nor a
//! read anywhere else: the descriptor is the folder that was found, and a symlink met on the
//! way is refused.
//!
//! What it does not do: decide which files a skill may show (`Skill::read` checks the
//! relative name and the size); it only makes sure what is opened is inside the folder.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// The most files listed, and how deep below the folder the listing goes.
const MAX_LISTED: usize = 200;
const MAX_DEPTH: usize = 4;

/// Opens `relative` (normal components only) beneath the held folder `root` for reading:
/// every directory on the way and the file itself opened with `O_NOFOLLOW`, so no symlink is
/// followed; the file must be a regular file.
pub fn open_beneath(root: BorrowedFd<'_>, relative: &Path) -> std::io::Result<std::fs::File> {
    let names: Vec<&OsStr> = relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "only names inside the folder (no `/` first, no `.` or `..`)",
            )),
        })
        .collect::<std::io::Result<_>>()?;
    let Some((file, dirs)) = names.split_last() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no file named",
        ));
    };
    let mut dir: Option<OwnedFd> = None;
    for name in dirs {
        let at = dir.as_ref().map_or(root, AsFd::as_fd);
        dir = Some(open_dir(at, name)?);
    }
    let at = dir.as_ref().map_or(root, AsFd::as_fd);
    let fd = rustix::fs::openat(
        at,
        file.as_bytes(),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// The regular files beneath the held folder `root`, relative to it, in no order: at most
/// `MAX_LISTED`, at most `MAX_DEPTH` folders down, symlinks and other kinds left out.
pub fn list(root: BorrowedFd<'_>) -> Vec<String> {
    let mut out = Vec::new();
    walk(root, Path::new(""), 0, &mut out);
    out
}

fn walk(dir: BorrowedFd<'_>, rel: &Path, depth: usize, out: &mut Vec<String>) {
    let Ok(mut entries) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    while let Some(Ok(entry)) = entries.read() {
        if out.len() >= MAX_LISTED {
            return;
        }
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        // The kind of the entry itself, never of what a symlink points at.
        let kind = match entry.file_type() {
            FileType::Unknown => {
                match rustix::fs::statat(dir, name.as_bytes(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => FileType::from_raw_mode(st.st_mode),
                    Err(_) => continue,
                }
            }
            kind => kind,
        };
        match kind {
            FileType::Directory if depth < MAX_DEPTH => {
                if let Ok(sub) = open_dir(dir, name) {
                    walk(sub.as_fd(), &rel.join(name), depth + 1, out);
                }
            }
            FileType::RegularFile => out.push(rel.join(name).display().to_string()),
            _ => {}
        }
    }
}

/// Opens directory `name` of `dir`, refusing a symlink in its place.
fn open_dir(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name.as_bytes(),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}
