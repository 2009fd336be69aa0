//! Files only their owner may read, hidden from a program paddock runs as root (K1).
//!
//! A confined program keeps paddock's uid (mapped to itself in its user namespace). When that
//! is 0, the owner check lets it read `/etc/shadow`, `/etc/ssl/private/*`, host keys: the
//! system locations Landlock opens for reading hold secrets that DAC alone protected. So when
//! paddock runs as root, every entry under `/etc` that is not world-readable is covered in the
//! program's mount namespace: a file by `/dev/null`, a directory by an empty read-only tmpfs.
//! The list is read once per process (`/etc` is small); for any other uid nothing is needed.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::OnceLock;

/// A path to cover, and whether it is a directory.
pub(super) type Masked = (CString, bool);

/// What to hide for a program started by a process of uid `uid`.
pub(super) fn for_uid(uid: libc::uid_t) -> &'static [Masked] {
    static ROOT: OnceLock<Vec<Masked>> = OnceLock::new();
    if uid != 0 {
        return &[];
    }
    ROOT.get_or_init(|| {
        let mut found = Vec::new();
        owner_only(Path::new("/etc"), &mut found);
        found
    })
}

/// Entries below `dir` that others may not read (not descending into them), no symlinks.
fn owner_only(dir: &Path, found: &mut Vec<Masked>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let kind = meta.file_type();
        if kind.is_symlink() || !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        if meta.permissions().mode() & 0o004 == 0 {
            if let Ok(path) = CString::new(entry.path().as_os_str().as_bytes()) {
                found.push((path, kind.is_dir()));
            }
        } else if kind.is_dir() {
            owner_only(&entry.path(), found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_root_paddock_hides_anything_and_only_what_others_cannot_read() {
        assert!(for_uid(1000).is_empty());
        for (path, dir) in for_uid(0) {
            let path = Path::new(std::ffi::OsStr::from_bytes(path.as_bytes()));
            let meta = path.symlink_metadata().unwrap();
            assert_eq!(meta.permissions().mode() & 0o004, 0, "{}", path.display());
            assert_eq!(meta.is_dir(), *dir);
        }
    }
}
