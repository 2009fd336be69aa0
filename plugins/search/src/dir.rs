//! One directory's listing. In the sandbox it goes straight to `wasi:filesystem`
//! (`open-at` from the mount's preopen, `read-directory`): wasi-libc's `readdir`, under
//! `std::fs::read_dir`, calls `metadata-hash-at` for every entry to fill `d_ino`, a host call
//! and a `statx` per file the walk never uses (7,313 extra host calls for 6,945 files,
//! docs/scale.md). Natively (the unit tests) it is `std::fs::read_dir`.

use std::ffi::OsString;
use std::path::Path;

/// What a walk keeps of an entry: files and directories; symlinks and the rest are skipped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    File,
    Dir,
}

/// The files and subdirectories of `dir`, unsorted.
#[cfg(target_arch = "wasm32")]
pub fn read(dir: &Path) -> std::io::Result<Vec<(OsString, Kind)>> {
    wasi::read(dir).unwrap_or_else(|| read_std(dir))
}

/// The files and subdirectories of `dir`, unsorted.
#[cfg(not(target_arch = "wasm32"))]
pub fn read(dir: &Path) -> std::io::Result<Vec<(OsString, Kind)>> {
    read_std(dir)
}

fn read_std(dir: &Path) -> std::io::Result<Vec<(OsString, Kind)>> {
    Ok(std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let kind = match e.file_type() {
                Ok(t) if t.is_file() => Kind::File,
                Ok(t) if t.is_dir() => Kind::Dir,
                _ => return None,
            };
            Some((e.file_name(), kind))
        })
        .collect())
}

#[cfg(target_arch = "wasm32")]
mod wasi {
    use std::cell::OnceCell;
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    use wasip2::filesystem::preopens::get_directories;
    use wasip2::filesystem::types::{
        Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags,
    };

    use super::Kind;

    thread_local! {
        /// The mounts' directories as the call was given them (one instance serves one call).
        static PREOPENS: OnceCell<Vec<(Descriptor, PathBuf)>> = const { OnceCell::new() };
    }

    fn error(e: ErrorCode) -> std::io::Error {
        std::io::Error::other(format!("{e:?}"))
    }

    /// `None` when no mount holds `dir` (then std answers, as for any other path).
    pub(super) fn read(dir: &Path) -> Option<std::io::Result<Vec<(OsString, Kind)>>> {
        PREOPENS.with(|cell| {
            let preopens = cell.get_or_init(|| {
                get_directories()
                    .into_iter()
                    .map(|(fd, guest)| (fd, PathBuf::from(guest)))
                    .collect()
            });
            // The innermost mount holding `dir`, as a nested mount shadows its parent.
            let (base, rel) = preopens
                .iter()
                .filter_map(|(fd, guest)| Some((fd, guest, dir.strip_prefix(guest).ok()?)))
                .max_by_key(|(_, guest, _)| guest.as_os_str().len())
                .map(|(fd, _, rel)| (fd, rel))?;
            Some(list(base, rel))
        })
    }

    fn list(base: &Descriptor, rel: &Path) -> std::io::Result<Vec<(OsString, Kind)>> {
        let rel = match rel.to_str() {
            Some("") => ".",
            Some(rel) => rel,
            None => return Err(std::io::Error::other("path is not UTF-8")),
        };
        let dir = base
            .open_at(
                PathFlags::SYMLINK_FOLLOW,
                rel,
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map_err(error)?;
        let stream = dir.read_directory().map_err(error)?;
        let mut entries = Vec::new();
        // An entry that cannot be read ends the listing with what was read, as `read_dir`'s
        // unreadable entries were skipped.
        while let Ok(Some(entry)) = stream.read_directory_entry() {
            let kind = match entry.type_ {
                DescriptorType::RegularFile => Kind::File,
                DescriptorType::Directory => Kind::Dir,
                _ => continue,
            };
            entries.push((OsString::from(entry.name), kind));
        }
        Ok(entries)
    }
}
