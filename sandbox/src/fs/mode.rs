//! A file renamed over a regular file keeps the replaced file's permission bits (L7).
//!
//! WASI (preview 2) has no file modes: a file a plugin creates gets the host's default (0666
//! less the umask). The shipped tools replace files atomically (a temporary file beside the
//! target, renamed over it), so without this an executable script that `edit_file` touched
//! would lose its executable bit. Before a rename replaces a regular file, the host gives the
//! incoming regular file the `rwxrwxrwx` bits of the one it replaces.
//!
//! It grants nothing new: a plugin that may rename over a file may also open it and write into
//! it, which keeps its mode anyway. Set-id and sticky bits are never carried. Both ends are
//! looked at without following a final symlink, the source through a handle (`O_PATH`), so the
//! inode whose mode is changed is the one that was checked.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The permission bits carried: read, write, execute for user, group and others.
const CARRIED: libc::mode_t = 0o777;

/// Gives `from` (a name in `from_dir`) the permission bits of `to` (a name in `to_dir`) when
/// both are regular files. Best effort: a rename is never refused for a mode it could not copy.
pub(crate) fn carry_mode(from_dir: &File, from: &str, to_dir: &File, to: &str) {
    let (Ok(from), Ok(to)) = (CString::new(from), CString::new(to)) else {
        return;
    };
    let Some(replaced) = stat_at(to_dir, &to) else {
        return;
    };
    if replaced.st_mode & libc::S_IFMT != libc::S_IFREG {
        return;
    }
    // SAFETY: a valid directory descriptor and a NUL-terminated name; the result is checked.
    let raw = unsafe {
        libc::openat(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return;
    }
    // SAFETY: `raw` is a descriptor this function just opened and owns.
    let incoming = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: an all-zero `stat` is a valid value for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a pointer to a `stat` that lives across the call.
    if unsafe { libc::fstat(incoming.as_raw_fd(), &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFREG
    {
        return;
    }
    let wanted = replaced.st_mode & CARRIED;
    if st.st_mode & (CARRIED | libc::S_ISUID | libc::S_ISGID | libc::S_ISVTX) == wanted {
        return;
    }
    // An `O_PATH` descriptor cannot be fchmod-ed; its /proc link names exactly that inode.
    let Ok(link) = CString::new(format!("/proc/self/fd/{}", incoming.as_raw_fd())) else {
        return;
    };
    // SAFETY: a NUL-terminated path; chmod reads it and returns.
    unsafe { libc::chmod(link.as_ptr(), wanted) };
}

/// `fstatat` without following a final symlink.
fn stat_at(dir: &File, name: &CString) -> Option<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid directory descriptor, a NUL-terminated name, a live `stat`.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (rc == 0).then_some(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    #[test]
    fn the_replaced_files_bits_are_carried_but_never_set_id() {
        let dir = tempfile::tempdir().unwrap();
        let d = File::open(dir.path()).unwrap();
        let (old, new) = (dir.path().join("run.sh"), dir.path().join(".run.sh.tmp"));
        std::fs::write(&old, "old").unwrap();
        std::fs::write(&new, "new").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o4750)).unwrap();
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o600)).unwrap();
        carry_mode(&d, ".run.sh.tmp", &d, "run.sh");
        assert_eq!(mode(&new), 0o750);
    }

    #[test]
    fn symlinks_and_directories_are_left_alone_at_either_end() {
        let dir = tempfile::tempdir().unwrap();
        let d = File::open(dir.path()).unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o640)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.path().join("link")).unwrap();
        std::fs::write(dir.path().join("exe"), "x").unwrap();
        std::fs::set_permissions(
            dir.path().join("exe"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        // The source is a symlink: its target is not changed.
        carry_mode(&d, "link", &d, "exe");
        assert_eq!(mode(&outside), 0o640);
        // The replaced name is a symlink or a directory: nothing is carried.
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("plain"), "x").unwrap();
        std::fs::set_permissions(
            dir.path().join("plain"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        carry_mode(&d, "plain", &d, "link");
        carry_mode(&d, "plain", &d, "sub");
        assert_eq!(mode(&dir.path().join("plain")), 0o600);
    }
}
