//! `paddock.lock`: what a project (or a user) approved of its installed plugins and MCP
//! servers. For each installed plugin: where it came from, the SHA-256 and size of its bytes,
//! its OCI digests and signer, its imports, a hash of its tool list (and of each tool), and a
//! hash of the grant each preset gives it. For each MCP server: a hash of each tool its
//! `tools/list` gave. Sessions compare against it (`session/lock.rs`), `paddock lock` shows and
//! accepts, `plugin install --locked` installs exactly what it names (`locked.rs`).
//!
//! Where: `<project root>/.paddock/paddock.lock` when the project has a `.paddock/` directory
//! (a protected name: no tool or program a session runs can write it), else `paddock.lock` in
//! the data directory. The directory is opened once, `.paddock` without following a link
//! (`LockPlace`), and the lock is read and written through that descriptor: a `.paddock`
//! swapped for a link after it was found cannot send the lock elsewhere. Read without
//! following a symlink, with a size cap; written whole, atomically (a temporary file in the
//! same directory, renamed over it); updated under an exclusive `flock` on the directory,
//! what a session recorded applied to the lock as it is then (`LockPlace::update`).

pub mod pin;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use pin::{ToolChange, ToolPin};

use super::{Installed, Origin};
use crate::contract::ToolSpec;

/// The file's name, in `.paddock/` or the data directory.
pub const LOCK_FILE: &str = "paddock.lock";
/// The largest lock read: thousands of entries fit in far less.
pub const MAX_LOCK_BYTES: u64 = 4 << 20;
/// How long an update waits for another writer's `flock` on the lock's directory (a second
/// in the unit tests, which wait it out).
const LOCK_WAIT: std::time::Duration =
    std::time::Duration::from_secs(if cfg!(test) { 1 } else { 10 });
const HEADER: &str = "# paddock.lock: the installed plugins and MCP tools this project approved.\n\
# Written by paddock (sessions record what they first use; `paddock lock accept NAME` records a\n\
# change). Commit it; do not edit it by hand. `paddock plugin install --locked` installs exactly\n\
# the plugins it names. docs/plugins-distribution.md#lock\n";

/// The lock's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    #[serde(default = "version_one")]
    pub version: u32,
    /// Installed plugins by their installed name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, PluginLock>,
    /// MCP servers by their preset name (`[mcp.NAME]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, McpLock>,
}

fn version_one() -> u32 {
    1
}

impl Default for LockFile {
    fn default() -> LockFile {
        LockFile {
            version: version_one(),
            plugins: BTreeMap::new(),
            mcp: BTreeMap::new(),
        }
    }
}

/// One installed plugin as the lock pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginLock {
    /// Where it was installed from (a file, `oci://…`, `https://…`).
    pub installed_from: String,
    pub sha256: String,
    pub size: u64,
    /// `tools` or `hook`.
    pub kind: String,
    pub imports: Vec<String>,
    /// SHA-256 of the canonical JSON of the tool list `describe` gives.
    pub tools_sha256: String,
    /// Each tool, so that a refusal can say which one changed and how.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolPin>,
    /// SHA-256 of the canonical grant each preset (by name) gives the plugin.
    #[serde(default)]
    pub grants: BTreeMap<String, String>,
    /// OCI digests and signer, or URL and SHA-256, of a remote install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// One MCP server's tools as first approved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpLock {
    #[serde(default)]
    pub tools: BTreeMap<String, ToolPin>,
}

impl PluginLock {
    /// The entry for `record` whose component describes `tools`.
    pub fn of(record: &Installed, tools: &[ToolSpec]) -> PluginLock {
        PluginLock {
            installed_from: record.installed_from.clone(),
            sha256: record.sha256.clone(),
            size: record.size,
            kind: record.kind.clone(),
            imports: record.imports.clone(),
            tools_sha256: pin::tools_sha256(tools),
            tools: tool_pins(tools),
            grants: BTreeMap::new(),
            origin: record.origin.clone(),
        }
    }

    /// What differs between this entry and the plugin now (bytes `sha256`, `tools`), as
    /// lines; empty when it matches.
    pub fn differences(&self, sha256: &str, tools: &[ToolSpec]) -> Vec<String> {
        let mut lines = Vec::new();
        if self.sha256 != sha256 {
            lines.push(format!(
                "bytes: the lock has sha256 {}, the installed plugin is sha256 {sha256}",
                self.sha256
            ));
        }
        if self.tools_sha256 != pin::tools_sha256(tools) {
            let changes = pin::diff(&self.tools, &tool_pins(tools), "metadata");
            let what = if changes.is_empty() {
                "the tool list changed (order)".to_string()
            } else {
                pin::describe_changes(&changes)
            };
            lines.push(format!("tools: {what}"));
        }
        lines
    }
}

/// Each tool's pin by name.
pub fn tool_pins(tools: &[ToolSpec]) -> BTreeMap<String, ToolPin> {
    tools
        .iter()
        .map(|t| (t.name.clone(), pin::plugin_tool(t)))
        .collect()
}

/// SHA-256 of the canonical JSON of `grant` (what the preset gives a plugin).
pub fn grant_sha256(grant: &impl Serialize) -> String {
    let value = serde_json::to_value(grant).unwrap_or(serde_json::Value::Null);
    crate::stamp::sha256_hex(pin::canonical_json(&value).as_bytes())
}

/// Why the lock could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{path} is a symbolic link; paddock reads its lock only as a regular file, never \
         through a link (it could point anywhere). Replace it with the file itself"
    )]
    Symlink { path: String },
    #[error("{path} is not a regular file; remove it (paddock writes its lock there)")]
    NotAFile { path: String },
    #[error(
        "{path}: its directory stayed locked by another process for {secs} s, so nothing was \
         recorded in it. Another paddock may be writing it; if not, a program holds a flock \
         on the directory: find it with `fuser -v` on the directory, stop it, and run again"
    )]
    Busy { path: String, secs: u64 },
    #[error("{path} is over {max} bytes; a lock is far smaller: remove or repair it")]
    TooLarge { path: String, max: u64 },
    #[error(
        "{path} is not a lock paddock reads: {detail}. Restore it from version control, or \
         remove it to record afresh"
    )]
    Damaged { path: String, detail: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

/// Where a lock is: its directory, held open from the moment it was found, and the file's
/// name in it. Reading and writing go through the held directory (`/proc/self/fd/N`, the
/// kernel's link to what was opened), never through the directory's name again.
pub struct LockPlace {
    dir: File,
    name: OsString,
    /// The lock's path as found, for messages.
    shown: PathBuf,
}

impl LockPlace {
    /// The lock of a session in `cwd`: the project's `.paddock/paddock.lock` when the project
    /// root (`preset::project_root`) has a `.paddock` directory (not a link to one), else
    /// `paddock.lock` in `data_dir` (created if missing).
    pub fn find(cwd: &Path, data_dir: &Path) -> Result<LockPlace, LockError> {
        let dot = crate::preset::project_root(cwd).join(".paddock");
        match open_dir(&dot, libc::O_NOFOLLOW) {
            Ok(dir) => return Ok(LockPlace::new(dir, &dot, LOCK_FILE)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)) => {
            }
            Err(source) => return Err(io_error("cannot open", &dot, source)),
        }
        std::fs::create_dir_all(data_dir).map_err(|e| io_error("cannot create", data_dir, e))?;
        let dir = open_dir(data_dir, 0).map_err(|e| io_error("cannot open", data_dir, e))?;
        Ok(LockPlace::new(dir, data_dir, LOCK_FILE))
    }

    /// A lock the user named (`--lock FILE`): its directory as named; the file itself is
    /// still never followed if it is a link.
    pub fn at(path: &Path) -> Result<LockPlace, LockError> {
        let Some(name) = path.file_name() else {
            return Err(LockError::NotAFile {
                path: path.display().to_string(),
            });
        };
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = open_dir(parent, 0).map_err(|e| io_error("cannot open", parent, e))?;
        Ok(LockPlace {
            dir,
            name: name.to_os_string(),
            shown: path.to_path_buf(),
        })
    }

    fn new(dir: File, dir_path: &Path, name: &str) -> LockPlace {
        LockPlace {
            dir,
            name: name.into(),
            shown: dir_path.join(name),
        }
    }

    /// The lock's path as it was found (for messages; never opened again).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The held directory as a path the kernel resolves to it, whatever its name is now.
    fn held(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
    }

    /// The lock (empty when there is none), read without following a symlink.
    pub fn read(&self) -> Result<LockFile, LockError> {
        read_file(&self.held().join(&self.name), &self.shown)
    }

    /// Writes `lock` whole: a temporary file in the held directory, renamed over the lock.
    pub fn write(&self, lock: &LockFile) -> Result<(), LockError> {
        write_file(&self.held(), &self.name, &self.shown, lock)
    }

    /// Applies `change` to the lock as it is on disk now and writes it, holding an exclusive
    /// `flock` on the directory meanwhile: two sessions (or a session and `paddock lock
    /// accept`) recording at once both keep what they recorded.
    ///
    /// The wait is bounded: the project's `.paddock` is visible (read-only) to the programs a
    /// session runs, and one of them could hold a `flock` on it forever.
    pub fn update(&self, change: impl FnOnce(&mut LockFile)) -> Result<(), LockError> {
        let started = std::time::Instant::now();
        loop {
            match self.dir.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(LockError::Busy {
                        path: self.shown.display().to_string(),
                        secs: LOCK_WAIT.as_secs(),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(io_error("cannot lock the directory of", &self.shown, e));
                }
            }
        }
        let result = self.read().and_then(|mut lock| {
            change(&mut lock);
            self.write(&lock)
        });
        // Closing the descriptor would release it too; the place may be used again.
        let _ = self.dir.unlock();
        result
    }
}

/// What a session adds to the lock, applied to the lock as it is when the session saves it.
#[derive(Debug, Clone)]
pub enum Recorded {
    /// A plugin's first use. Another writer's entry for it, recorded meanwhile, is kept: if
    /// its bytes differ from these, the next session is refused and shows both.
    Plugin {
        name: String,
        entry: Box<PluginLock>,
    },
    /// The hash of the grant `preset` gives an already locked plugin.
    Grant {
        name: String,
        preset: String,
        sha256: String,
    },
    /// An MCP server's tools at its first approval (another writer's entry is kept).
    Mcp { server: String, entry: McpLock },
}

impl Recorded {
    pub fn apply(self, lock: &mut LockFile) {
        match self {
            Recorded::Plugin { name, entry } => {
                lock.plugins.entry(name).or_insert(*entry);
            }
            Recorded::Grant {
                name,
                preset,
                sha256,
            } => {
                if let Some(entry) = lock.plugins.get_mut(&name) {
                    entry.grants.insert(preset, sha256);
                }
            }
            Recorded::Mcp { server, entry } => {
                lock.mcp.entry(server).or_insert(entry);
            }
        }
    }
}

/// Opens the directory at `path` (`extra`: `O_NOFOLLOW` to refuse a link as its last name).
fn open_dir(path: &Path, extra: libc::c_int) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC | extra)
        .open(path)
}

fn io_error(what: &'static str, path: &Path, source: std::io::Error) -> LockError {
    LockError::Io {
        what,
        path: path.display().to_string(),
        source,
    }
}

/// The lock at `path` (empty when there is none), read without following a symlink;
/// messages name it `shown`.
fn read_file(path: &Path, shown: &Path) -> Result<LockFile, LockError> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = || shown.display().to_string();
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::default()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(LockError::Symlink { path: shown() });
        }
        Err(source) => {
            return Err(LockError::Io {
                what: "cannot read",
                path: shown(),
                source,
            });
        }
    };
    let meta = file.metadata().map_err(|source| LockError::Io {
        what: "cannot read",
        path: shown(),
        source,
    })?;
    if !meta.is_file() {
        return Err(LockError::NotAFile { path: shown() });
    }
    let mut bytes = Vec::new();
    file.take(MAX_LOCK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| LockError::Io {
            what: "cannot read",
            path: shown(),
            source,
        })?;
    if bytes.len() as u64 > MAX_LOCK_BYTES {
        return Err(LockError::TooLarge {
            path: shown(),
            max: MAX_LOCK_BYTES,
        });
    }
    let damaged = |detail: String| LockError::Damaged {
        path: shown(),
        detail,
    };
    let text = String::from_utf8(bytes).map_err(|_| damaged("it is not UTF-8".into()))?;
    let lock: LockFile = toml::from_str(&text).map_err(|e| damaged(e.message().to_string()))?;
    if lock.version != 1 {
        return Err(damaged(format!(
            "version {} (this paddock reads version 1)",
            lock.version
        )));
    }
    Ok(lock)
}

/// Writes `lock` whole as `name` in `dir`: a temporary file beside it, renamed over it. A
/// symlink there is refused (the rename would replace the link, but a link there means
/// someone else placed it). Messages name it `shown`.
fn write_file(dir: &Path, name: &std::ffi::OsStr, shown: &Path, lock: &LockFile) -> Result<(), LockError> {
    use std::io::Write;
    let path = dir.join(name);
    if path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(LockError::Symlink {
            path: shown.display().to_string(),
        });
    }
    let body = toml::to_string(lock).map_err(|e| LockError::Damaged {
        path: shown.display().to_string(),
        detail: format!("cannot encode it: {e}"),
    })?;
    let io = |what: &'static str| move |source: std::io::Error| io_error(what, shown, source);
    let mut tmp = tempfile::Builder::new()
        .prefix(".paddock.lock.")
        .tempfile_in(dir)
        .map_err(io("cannot write beside"))?;
    tmp.write_all(HEADER.as_bytes())
        .and_then(|()| tmp.write_all(body.as_bytes()))
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(io("cannot write"))?;
    // Committed with the project: readable by others as any source file is.
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(io("cannot write"))?;
    tmp.persist(&path).map_err(|e| io("cannot write")(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> PluginLock {
        PluginLock {
            installed_from: "oci://127.0.0.1:5000/plugins/fs:1.0".into(),
            sha256: "ab".repeat(32),
            size: 12,
            kind: "tools".into(),
            imports: vec!["wasi:cli/environment@0.2.0".into()],
            tools_sha256: "cd".repeat(32),
            tools: BTreeMap::from([(
                "read_file".to_string(),
                ToolPin {
                    sha256: "1".into(),
                    description: "2".into(),
                    schema: "3".into(),
                    meta: "4".into(),
                },
            )]),
            grants: BTreeMap::from([("coding".to_string(), "ef".repeat(32))]),
            origin: Some(Origin::Oci {
                reference: "oci://127.0.0.1:5000/plugins/fs:1.0".into(),
                registry: "127.0.0.1:5000".into(),
                repository: "plugins/fs".into(),
                tag: Some("1.0".into()),
                manifest_digest: format!("sha256:{}", "01".repeat(32)),
                config_digest: format!("sha256:{}", "02".repeat(32)),
                config_media_type: "application/vnd.wasm.config.v0+json".into(),
                layer_digest: format!("sha256:{}", "ab".repeat(32)),
                layer_media_type: "application/wasm".into(),
                signature: Some(Box::new(super::super::SignatureRecord {
                    key: Some("acme".into()),
                    fingerprint: Some(format!("sha256:{}", "03".repeat(32))),
                    signature_manifest: None,
                    unsigned_allowed: false,
                    payload: None,
                    signature: None,
                })),
            }),
        }
    }

    #[test]
    fn a_lock_is_written_with_its_header_and_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let place = LockPlace::at(&path).unwrap();
        assert_eq!(place.read().unwrap(), LockFile::default(), "none yet: empty");
        let mut lock = LockFile::default();
        lock.plugins.insert("fs".into(), entry());
        lock.mcp.insert(
            "py".into(),
            McpLock {
                tools: entry().tools,
            },
        );
        place.write(&lock).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# paddock.lock"), "{text}");
        assert_eq!(place.read().unwrap(), lock, "{text}");
    }

    #[test]
    fn a_symlinked_oversized_or_damaged_lock_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("elsewhere.lock");
        std::fs::write(&real, "version = 1\n").unwrap();
        let link = dir.path().join(LOCK_FILE);
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let place = LockPlace::at(&link).unwrap();
        assert!(matches!(place.read(), Err(LockError::Symlink { .. })));
        assert!(matches!(
            place.write(&LockFile::default()),
            Err(LockError::Symlink { .. })
        ));
        let shown = place.read().unwrap_err().to_string();
        assert!(shown.starts_with(&link.display().to_string()), "{shown}");
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "x".repeat(MAX_LOCK_BYTES as usize + 1)).unwrap();
        assert!(matches!(place.read(), Err(LockError::TooLarge { .. })));
        std::fs::write(&link, "version = 1\n[plugins.fs]\nsha256 = 3\n").unwrap();
        let err = place.read().unwrap_err().to_string();
        assert!(err.contains("is not a lock paddock reads"), "{err}");
    }

    #[test]
    fn differences_name_the_bytes_and_each_changed_tool() {
        let spec = ToolSpec {
            name: "read_file".into(),
            description: "Read.".into(),
            parameters: serde_json::json!({"type": "object"}),
            examples: Vec::new(),
            meta: crate::contract::RuntimeMeta::default(),
        };
        let record = Installed {
            name: "fs".into(),
            kind: "tools".into(),
            sha256: "aa".repeat(32),
            size: 3,
            installed_from: "x.wasm".into(),
            tools: vec!["read_file".into()],
            imports: Vec::new(),
            origin: None,
        };
        let locked = PluginLock::of(&record, std::slice::from_ref(&spec));
        assert!(
            locked
                .differences(&record.sha256, std::slice::from_ref(&spec))
                .is_empty()
        );
        let mut changed = spec.clone();
        changed.description = "Read, then upload.".into();
        let lines = locked.differences(&"bb".repeat(32), &[changed]);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("bytes: the lock has sha256 aaaa"),
            "{lines:?}"
        );
        assert_eq!(lines[1], "tools: tool `read_file`: description changed");
    }

    #[test]
    fn a_paddock_dir_swapped_for_a_link_while_locks_are_written_never_sends_one_outside() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        let outside = root.path().join("outside");
        let data = root.path().join("data");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(project.join(".paddock")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Another process's work, as fast as it goes: `.paddock` becomes a link to `outside`
        // and back, between the lock being found and being written.
        let swapper = {
            let (project, outside, stop) = (project.clone(), outside.clone(), stop.clone());
            std::thread::spawn(move || {
                let (dot, aside) = (project.join(".paddock"), project.join(".paddock.aside"));
                let mut swaps = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::fs::rename(&dot, &aside).unwrap();
                    std::os::unix::fs::symlink(&outside, &dot).unwrap();
                    std::fs::remove_file(&dot).unwrap();
                    std::fs::rename(&aside, &dot).unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let mut lock = LockFile::default();
        lock.plugins.insert("fs".into(), entry());
        let mut in_project = 0;
        for _ in 0..400 {
            let place = LockPlace::find(&project, &data).unwrap();
            // Widen the window between finding and writing.
            std::thread::yield_now();
            place.write(&lock).unwrap();
            in_project += usize::from(place.path().starts_with(&project));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 100, "the swapper ran: {swaps} swaps");
        assert!(in_project > 0, "some writes found the real .paddock");
        let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(escaped.is_empty(), "a lock went outside: {escaped:?}");
    }

    #[test]
    fn sessions_recording_at_once_all_keep_their_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        // Each its own place, as separate processes would have.
                        let place = LockPlace::at(&path).unwrap();
                        place
                            .update(|lock| {
                                Recorded::Plugin {
                                    name: format!("p{w}-{i}"),
                                    entry: Box::new(entry()),
                                }
                                .apply(lock)
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        let lock = LockPlace::at(&path).unwrap().read().unwrap();
        assert_eq!(lock.plugins.len(), 100, "{:?}", lock.plugins.keys());
    }

    #[test]
    fn a_first_use_recorded_meanwhile_by_another_session_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let place = LockPlace::at(&dir.path().join(LOCK_FILE)).unwrap();
        let mut theirs = entry();
        theirs.sha256 = "77".repeat(32);
        place
            .update(|lock| {
                Recorded::Plugin {
                    name: "fs".into(),
                    entry: Box::new(theirs.clone()),
                }
                .apply(lock)
            })
            .unwrap();
        place
            .update(|lock| {
                Recorded::Plugin {
                    name: "fs".into(),
                    entry: Box::new(entry()),
                }
                .apply(lock);
                Recorded::Grant {
                    name: "fs".into(),
                    preset: "review".into(),
                    sha256: "88".repeat(32),
                }
                .apply(lock);
            })
            .unwrap();
        let fs = &place.read().unwrap().plugins["fs"];
        assert_eq!(fs.sha256, theirs.sha256, "the first record stands");
        assert_eq!(fs.grants["review"], "88".repeat(32));
    }

    #[test]
    fn a_directory_held_locked_by_another_process_is_a_clear_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        // A flock taken through another open file description, as another process's would be.
        let holder = File::open(dir.path()).unwrap();
        holder.lock().unwrap();
        let place = LockPlace::at(&path).unwrap();
        let started = std::time::Instant::now();
        let err = place.update(|_| {}).unwrap_err();
        assert!(matches!(err, LockError::Busy { .. }), "{err}");
        assert!(started.elapsed() >= LOCK_WAIT, "it waited for the holder first");
        assert!(err.to_string().contains("fuser -v"), "{err}");
        assert!(!path.exists(), "nothing written");
        holder.unlock().unwrap();
        place.update(|_| {}).unwrap();
        assert!(path.exists());
    }
}
