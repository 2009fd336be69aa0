//! Crash-atomic file replacement (L7), shared by write_file and edit_file: the new content goes
//! to a temporary file in the target's own directory, is synced, and is renamed over the
//! target. A crash (of the guest, or of paddock around it) leaves the old content or the new,
//! never an empty or half-written file.
//!
//! - A symlink is followed to the file it names (as a plain write would), and that file is
//!   replaced; the link stays a link.
//! - A file that cannot be opened for writing is refused as before (rename alone would bypass
//!   its permissions).
//! - Mode: the existing file's permissions are copied to the temporary file where the host
//!   allows it. Natively that is the whole mode; WASI (preview 2) has no file modes at all, so
//!   inside the sandbox paddock's host does it: a file renamed over a regular file gets that
//!   file's `rwxrwxrwx` bits (`sandbox/src/fs/mode.rs`), so an executable stays one.
//! - The temporary name is `.NAME.paddock-TAG.tmp` beside the target, `TAG` the call's tag
//!   from the host (`PADDOCK_CALL_TAG`, 16 hex digits): a plain file name, never a protected
//!   one (`.git`, `.paddock`, `.cargo/config*`), and removed on any failure. If paddock is
//!   killed before the rename, `paddock resume` finds the file by that name and removes it
//!   (`sandbox/src/leftovers.rs`). Without a tag (or if that name is taken), a random
//!   `XXXXXXXX` stands for it.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replaces the content of `path` (created if missing) with `bytes`, atomically.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = follow_links(path)?;
    let existing = match std::fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory",
            ));
        }
        Ok(meta) => {
            // The permission check a plain write would have made.
            OpenOptions::new().write(true).open(&target)?;
            Some(meta.permissions())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (temp, mut file) = create_temp(&dir, &name)?;
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(permissions) = existing {
            // Not supported under WASI; the host's default mode then applies (module doc).
            let _ = file.set_permissions(permissions);
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temp, &target)
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    // Durability of the rename itself; not every host lets a directory be synced.
    if let Ok(dir) = File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The file `path` finally names, following symlinks (at most 40, as the kernel does).
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The variable the host puts the call's tag in.
const CALL_TAG_VAR: &str = "PADDOCK_CALL_TAG";

/// The call's tag, if the host gave a well-formed one (16 lower-case hex digits).
fn call_tag() -> Option<String> {
    let tag = std::env::var(CALL_TAG_VAR).ok()?;
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    (tag.len() == 16 && tag.bytes().all(hex)).then_some(tag)
}

/// A new, empty temporary file beside the target, under a name no other writer uses: the
/// call's tagged name first, else a random one.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let create = |temp: PathBuf| {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map(|file| (temp, file))
    };
    let mut last = None;
    if let Some(tag) = call_tag() {
        match create(dir.join(format!(".{name}.paddock-{tag}.tmp"))) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            other => return other,
        }
    }
    for attempt in 0..16u64 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(attempt);
        let temp = dir.join(format!(
            ".{name}.paddock-{:08x}.tmp",
            hasher.finish() as u32
        ));
        match create(temp) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temp dir, removed when dropped.
    struct TempDir(PathBuf);
    impl TempDir {
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tempdir() -> TempDir {
        let temp = std::env::temp_dir();
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let dir = temp.join(format!("fs-atomic-{:016x}", hasher.finish()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn temps(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn the_content_is_replaced_and_no_temporary_file_is_left() {
        let dir = tempdir();
        let path = dir.path().join("a.txt");
        replace(&path, b"first").unwrap();
        replace(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert!(temps(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn the_mode_is_kept_where_the_host_allows_it_and_links_stay_links() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempdir();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
        let link = dir.path().join("link.sh");
        std::os::unix::fs::symlink("run.sh", &link).unwrap();
        replace(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&script).unwrap(), b"new");
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o750);
    }

    #[test]
    fn a_directory_is_refused_and_leaves_nothing_behind() {
        let dir = tempdir();
        let error = replace(dir.path(), b"x").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory);
        assert!(temps(dir.path()).is_empty());
    }
}
