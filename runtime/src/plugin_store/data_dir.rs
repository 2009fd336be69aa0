//! The data directory's files as the store writes and lists them: each written whole or not
//! at all (a temporary file beside it, renamed over it), private to the user (0600 files in
//! 0700 directories), and a directory's entries listed by name.

use std::path::Path;

use paddock_sandbox::create_private_dir;

use super::StoreError;

/// An I/O error on `path`, as a `StoreError` that says what was being done.
pub(super) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let path = path.display().to_string();
    move |source| StoreError::Io { what, path, source }
}

/// Writes `bytes` to `path` atomically, creating its directory private if it is missing.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(io("cannot create", dir))?;
    // NamedTempFile creates the file 0600.
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io("cannot write in", dir))?;
    tmp.write_all(bytes).map_err(io("cannot write", path))?;
    tmp.persist(path)
        .map_err(|e| io("cannot write", path)(e.error))?;
    Ok(())
}

/// The names of the files in `dir` that end in `suffix`, without it, sorted; none when `dir`
/// does not exist.
pub(super) fn names_in(dir: &Path, suffix: &str) -> Result<Vec<String>, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("cannot list", dir)(e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(suffix)
                .map(str::to_string)
        })
        .collect();
    names.sort();
    Ok(names)
}
