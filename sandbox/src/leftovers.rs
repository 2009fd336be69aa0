//! Temporary files a killed write leaves (L7): the shipped tools replace a file through a
//! temporary file beside it, renamed over it; killed before the rename, paddock leaves that
//! temporary file, full size, in the project. Its name ties it to its call, so `resume`, which
//! settles the calls a crash interrupted, removes exactly those files and nothing else.
//!
//! - The host gives each plugin call a tag in `PADDOCK_CALL_TAG` ([`call_tag`]: 16 hex digits
//!   of the SHA-256 of the session id and the call id, so a model's id never reaches a file
//!   name and two sessions never share a tag); a tool names its temporary file
//!   `.NAME.paddock-TAG.tmp` beside the target `NAME` ([`temp_name`]).
//! - [`remove_temp`] removes that one name beside the path an interrupted call named, by
//!   descriptor: from the mount's held directory, each directory on the way opened with
//!   `O_NOFOLLOW` (a symlink anywhere stops it), the name checked to be a regular file without
//!   following it, and removed with `unlinkat` relative to its held parent.
//!
//! What it does not do: a write through a symlink puts its temporary file beside the file the
//! link names, which may be elsewhere in the mount; only the named path's directory is looked
//! at, so that file stays (its name still carries the tag).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::grant::Mount;

/// The variable a plugin call finds its tag in.
pub const CALL_TAG_VAR: &str = "PADDOCK_CALL_TAG";

/// The tag of call `call_id` of session `session`: 16 lower-case hex digits.
pub fn call_tag(session: &str, call_id: &str) -> String {
    // The session's length first, so no pair of strings runs into another.
    let mut hash = Sha256::new();
    hash.update((session.len() as u64).to_le_bytes());
    hash.update(session.as_bytes());
    hash.update(call_id.as_bytes());
    hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The temporary file a call tagged `tag` writes before it replaces `name`.
pub fn temp_name(name: &str, tag: &str) -> String {
    format!(".{name}.paddock-{tag}.tmp")
}

/// Removes the temporary file the call tagged `tag` left beside `guest` (a tool's path
/// argument, relative ones against the first mount, as the tools resolve them), if there is
/// one. `Ok(true)` when a file was removed; `Ok(false)` when there was none, or the path leaves
/// every mount, or crosses a symlink, or names something other than a regular file.
pub fn remove_temp(guest: &str, mounts: &[Mount], tag: &str) -> io::Result<bool> {
    let Some((mount, rest)) = inside_mount(guest, mounts) else {
        return Ok(false);
    };
    let Some(name) = rest.file_name().and_then(|n| n.to_str()) else {
        return Ok(false);
    };
    let temp = CString::new(temp_name(name, tag))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let handle = mount.held()?;
    if handle.verify().is_err() {
        // Something else stands at the mount's name now: not ours to clean.
        return Ok(false);
    }
    let Some(dir) = open_beneath(handle.fd(), rest.parent().unwrap_or(Path::new("")))? else {
        return Ok(false);
    };
    // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid directory descriptor, a NUL-terminated name and a `stat` that lives
    // across the call; AT_SYMLINK_NOFOLLOW looks at the name itself.
    let found = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            temp.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if found != 0 {
        let error = io::Error::last_os_error();
        return match error.kind() {
            io::ErrorKind::NotFound => Ok(false),
            _ => Err(error),
        };
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Ok(false);
    }
    // SAFETY: a valid directory descriptor and a NUL-terminated name; unlinkat removes the
    // name in that directory and never follows it.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), temp.as_ptr(), 0) } != 0 {
        let error = io::Error::last_os_error();
        return match error.kind() {
            io::ErrorKind::NotFound => Ok(false),
            _ => Err(error),
        };
    }
    Ok(true)
}

/// The mount `guest` falls in (the longest guest prefix) and the path inside it, with `.` and
/// `..` applied lexically; `None` when it leaves every mount.
fn inside_mount<'m>(guest: &str, mounts: &'m [Mount]) -> Option<(&'m Mount, PathBuf)> {
    let base = mounts.first().map_or("/workspace", |m| m.guest.as_str());
    let mut full = PathBuf::new();
    for component in Path::new(base).join(guest).components() {
        match component {
            Component::ParentDir => {
                full.pop();
            }
            Component::CurDir => {}
            other => full.push(other),
        }
    }
    let mount = mounts
        .iter()
        .filter(|m| full.starts_with(&m.guest))
        .max_by_key(|m| m.guest.len())?;
    let rest = full.strip_prefix(&mount.guest).ok()?.to_path_buf();
    Some((mount, rest))
}

/// Opens directory `rest` under `root` one component at a time, refusing a symlink at each
/// (`O_NOFOLLOW`); `None` when a component is missing, a symlink or not a directory.
fn open_beneath(root: BorrowedFd<'_>, rest: &Path) -> io::Result<Option<OwnedFd>> {
    // SAFETY: dup of a valid descriptor; the result is checked and owned below.
    let raw = unsafe { libc::fcntl(root.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` was just returned by the kernel and nothing else owns it.
    let mut dir = unsafe { OwnedFd::from_raw_fd(raw) };
    for component in rest.components() {
        let Component::Normal(name) = component else {
            return Ok(None);
        };
        let name = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        let raw = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let error = io::Error::last_os_error();
            return match error.raw_os_error() {
                Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR) => Ok(None),
                _ => Err(error),
            };
        }
        // SAFETY: `raw` was just returned by the kernel and nothing else owns it.
        dir = unsafe { OwnedFd::from_raw_fd(raw) };
    }
    Ok(Some(dir))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MountMode;

    fn mount(host: &Path) -> Mount {
        Mount::open(host, "/workspace", MountMode::Rw).expect("mount")
    }

    #[test]
    fn tags_are_hex_and_tie_a_call_to_its_session() {
        let tag = call_tag("s1", "call_0");
        assert_eq!(tag.len(), 16);
        assert!(tag.bytes().all(|b| b.is_ascii_hexdigit()), "{tag}");
        assert_eq!(tag, call_tag("s1", "call_0"));
        assert_ne!(tag, call_tag("s2", "call_0"));
        assert_ne!(call_tag("s1", "a\0b"), call_tag("s1\0a", "b"));
        assert_eq!(
            temp_name("a.txt", &tag),
            format!(".a.txt.paddock-{tag}.tmp")
        );
    }

    #[test]
    fn only_the_exact_temporary_file_of_the_call_is_removed_never_through_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let mounts = [mount(&ws)];
        let tag = call_tag("s", "c1");
        let other = call_tag("s", "c2");
        let mine = ws.join("sub").join(temp_name("a.txt", &tag));
        let theirs = ws.join("sub").join(temp_name("a.txt", &other));
        std::fs::write(&mine, "partial").unwrap();
        std::fs::write(&theirs, "another call's").unwrap();
        assert!(remove_temp("sub/a.txt", &mounts, &tag).unwrap());
        assert!(!mine.exists());
        assert!(theirs.exists(), "another call's file stays");
        assert!(
            !remove_temp("sub/a.txt", &mounts, &tag).unwrap(),
            "gone already"
        );
        // A directory on the way swapped for a symlink to elsewhere: nothing there is touched.
        let decoy = outside.path().join(temp_name("a.txt", &tag));
        std::fs::write(&decoy, "outside").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("link")).unwrap();
        assert!(!remove_temp("/workspace/link/a.txt", &mounts, &tag).unwrap());
        assert!(decoy.exists());
        // The exact name as a symlink: not a regular file, left alone (its target too).
        std::os::unix::fs::symlink(&decoy, ws.join(temp_name("b.txt", &tag))).unwrap();
        assert!(!remove_temp("b.txt", &mounts, &tag).unwrap());
        assert!(decoy.exists());
        // A path that climbs out of the mount is not looked at.
        assert!(!remove_temp("../../x", &mounts, &tag).unwrap());
    }
}
