//! Project instruction files (`AGENTS.md`, and `CLAUDE.md` when present) in the project root
//! and in every directory between it and the working directory, nearest last (`root.rs`):
//! appended to the system prompt in that order, each named (relative to the root) in the
//! banner, recorded with its hash in `session/start`. They are project configuration (T1): `trust.rs` hashes them with the
//! project's presets, and they are read only for a trusted directory.
//!
//! A hostile repository could make `AGENTS.md` a symbolic link to a private file (a key) and
//! have it sent to the model: the file is opened without following a symbolic link
//! (`O_NOFOLLOW`) and must be a regular file of bounded size.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The instruction files, in the order they are appended.
pub const INSTRUCTION_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Largest instruction file read; a larger one is left out with a notice.
const MAX_BYTES: u64 = 64 * 1024;

/// One instruction file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    pub name: String,
    /// SHA-256 of the bytes, in hex.
    pub sha256: String,
    pub text: String,
}

/// Every instruction file present (a link too: it is refused when read, but counts) from the
/// project root of `cwd` down to `cwd`, the root's first: its name relative to the root, and
/// its path.
pub fn instruction_paths(cwd: &Path) -> Vec<(String, PathBuf)> {
    let dirs = super::root_to(cwd);
    let root = dirs.first().cloned().unwrap_or_default();
    let mut found = Vec::new();
    for dir in &dirs {
        for name in INSTRUCTION_FILES {
            let path = dir.join(name);
            if path.symlink_metadata().is_ok() {
                let relative = path.strip_prefix(&root).unwrap_or(&path);
                found.push((relative.display().to_string(), path));
            }
        }
    }
    found
}

/// The instruction files from the project root of `cwd` down to `cwd` (nearest last), and a
/// notice for each one present but left out (a symbolic link, not a regular file, too large,
/// not UTF-8).
pub fn read_instructions(cwd: &Path) -> (Vec<InstructionFile>, Vec<String>) {
    let mut files = Vec::new();
    let mut notices = Vec::new();
    for (name, path) in instruction_paths(cwd) {
        match read_one(&path) {
            Ok(Some(text)) => files.push(InstructionFile {
                name: name.clone(),
                sha256: paddock_types::stamp::sha256_hex(text.as_bytes()),
                text,
            }),
            Ok(None) => {}
            Err(why) => notices.push(format!("ignoring {name}: {why}")),
        }
    }
    (files, notices)
}

/// The file's text; `None` when there is no such file.
fn read_one(path: &Path) -> Result<Option<String>, String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(
                "it is a symbolic link; instruction files must be regular files in the project"
                    .into(),
            );
        }
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > MAX_BYTES {
        return Err(format!("it is {} bytes; at most {MAX_BYTES}", meta.len()));
    }
    let mut text = String::new();
    file.take(MAX_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read it as UTF-8 text: {e}"))?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use cargo.\n").unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "key").unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join("CLAUDE.md")).unwrap();
        let (files, notices) = read_instructions(dir.path());
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].name, "AGENTS.md");
        assert_eq!(files[0].text, "Use cargo.\n");
        assert_eq!(notices.len(), 1);
        assert!(
            notices[0].contains("CLAUDE.md: it is a symbolic link"),
            "{notices:?}"
        );
    }
}
