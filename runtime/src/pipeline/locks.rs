//! Per-path locks (X1): which real paths a call touches, and whether two calls must not
//! overlap. Two calls conflict when one of their `path-params` resolves to the same real path
//! and either call writes (its tool is not declared read-only).
//!
//! A guest path resolves on the host side: relative paths against the first mount's guest
//! directory (as the SDK resolves them), then through the mount with the longest matching guest
//! prefix to its host path, then canonicalized so that symlinks and `..` collapse. A path that
//! does not exist yet canonicalizes its parent and joins the name; failing that, the lexical
//! path is the key. This only orders calls; it grants nothing (the sandbox confines them).
//!
//! Across sessions, `PathLocks` is the table a session and its subagents share: a call holds
//! the lock of each file it names (shared when it only reads, exclusive when it writes) while
//! it runs, so a parent's and its children's writes to one file never overlap. A file is
//! keyed by what the kernel says it is, not by how it was spelt: the device and inode of the
//! directory that holds it, and its name there (a file's own inode would not do: a write
//! replaces the file by a rename, so the next writer would meet another inode).

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::Value;
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use paddock_sandbox::Mount;
use paddock_types::contract::ToolSpec;

/// The real paths one call touches, and whether it may write them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub paths: Vec<PathBuf>,
    pub writes: bool,
}

impl Access {
    /// The access of a call to `spec` with validated `args` under `mounts`.
    pub fn of(spec: &ToolSpec, args: &Value, mounts: &[Mount]) -> Access {
        let paths = path_arguments(spec, args)
            .into_iter()
            .map(|guest| real_path(guest, mounts))
            .collect();
        Access {
            paths,
            writes: !spec.meta.is_read_only(),
        }
    }

    /// Whether the two calls must run one after the other.
    pub fn conflicts_with(&self, other: &Access) -> bool {
        (self.writes || other.writes) && self.paths.iter().any(|p| other.paths.contains(p))
    }
}

/// One file as the lock table knows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum FileKey {
    /// The entry `name` of the directory with this (device, inode).
    Entry { dir: (u64, u64), name: OsString },
    /// A path whose directory does not exist (yet): its real path as resolved.
    Unresolved(PathBuf),
}

impl FileKey {
    fn of(path: &Path) -> FileKey {
        let entry = path.parent().zip(path.file_name()).and_then(|(dir, name)| {
            let held = std::fs::metadata(dir).ok()?;
            Some(FileKey::Entry {
                dir: (held.dev(), held.ino()),
                name: name.to_os_string(),
            })
        });
        entry.unwrap_or_else(|| FileKey::Unresolved(path.to_path_buf()))
    }
}

/// The per-file locks a session shares with its subagents (clones share one table).
#[derive(Clone, Default)]
pub struct PathLocks(Arc<Mutex<HashMap<FileKey, Weak<RwLock<()>>>>>);

impl std::fmt::Debug for PathLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PathLocks")
    }
}

/// The locks one running call holds, released when dropped.
pub struct Held {
    _read: Vec<OwnedRwLockReadGuard<()>>,
    _write: Vec<OwnedRwLockWriteGuard<()>>,
}

impl PathLocks {
    /// Waits for and holds the lock of every file `access` names: exclusive when it writes,
    /// shared otherwise. Locks are taken in one order (by key), so two calls that name the
    /// same files never wait on each other in a circle.
    pub async fn hold(&self, access: &Access) -> Held {
        let mut keys: Vec<FileKey> = access.paths.iter().map(|p| FileKey::of(p)).collect();
        keys.sort();
        keys.dedup();
        let locks: Vec<Arc<RwLock<()>>> = {
            let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            table.retain(|_, lock| lock.strong_count() > 0);
            keys.into_iter()
                .map(|key| match table.get(&key).and_then(Weak::upgrade) {
                    Some(lock) => lock,
                    None => {
                        let lock = Arc::new(RwLock::new(()));
                        table.insert(key, Arc::downgrade(&lock));
                        lock
                    }
                })
                .collect()
        };
        let mut held = Held {
            _read: Vec::new(),
            _write: Vec::new(),
        };
        for lock in locks {
            if access.writes {
                held._write.push(lock.write_owned().await);
            } else {
                held._read.push(lock.read_owned().await);
            }
        }
        held
    }
}

/// The paths a call to `spec` names in `args`, as written: its declared path parameters, each
/// a string or a list of them.
pub(super) fn path_arguments<'a>(spec: &ToolSpec, args: &'a Value) -> Vec<&'a str> {
    spec.meta
        .path_params
        .iter()
        .filter_map(|param| args.get(param))
        .flat_map(|value| match value {
            Value::String(path) => vec![path.as_str()],
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The host path `guest` means under `mounts`, as real as the file system allows.
pub fn real_path(guest: &str, mounts: &[Mount]) -> PathBuf {
    let base = mounts.first().map_or("/workspace", |m| m.guest.as_str());
    let guest = lexical(&Path::new(base).join(guest));
    let mount = mounts
        .iter()
        .filter(|m| guest.starts_with(&m.guest))
        .max_by_key(|m| m.guest.len());
    let Some(mount) = mount else {
        return guest;
    };
    let rest = guest.strip_prefix(&mount.guest).unwrap_or(Path::new(""));
    let host = lexical(&mount.host.join(rest));
    if let Ok(real) = host.canonicalize() {
        return real;
    }
    match (host.parent().map(Path::canonicalize), host.file_name()) {
        (Some(Ok(parent)), Some(name)) => parent.join(name),
        _ => host,
    }
}

/// `.` dropped and `..` applied, without touching the file system; never climbs above `/`.
pub(super) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use paddock_sandbox::MountMode;
    use paddock_types::contract::RuntimeMeta;
    use serde_json::json;

    fn mounts(host: &Path) -> Vec<Mount> {
        vec![Mount {
            host: host.to_path_buf(),
            guest: "/workspace".into(),
            mode: MountMode::Rw,
            handle: None,
        }]
    }

    fn spec(read_only: bool) -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: String::new(),
            parameters: json!({}),
            examples: Vec::new(),
            meta: RuntimeMeta {
                read_only: Some(read_only),
                path_params: vec!["path".into()],
                ..RuntimeMeta::default()
            },
        }
    }

    #[test]
    fn spellings_of_one_file_resolve_to_one_real_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        let m = mounts(dir.path());
        let real = real_path("src/a.rs", &m);
        for spelling in [
            "./src/a.rs",
            "/workspace/src/a.rs",
            "src/../src/a.rs",
            "/workspace/./src//a.rs",
        ] {
            assert_eq!(real_path(spelling, &m), real, "{spelling}");
        }
    }

    #[test]
    fn a_file_not_yet_written_resolves_through_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let m = mounts(dir.path());
        let expected = dir.path().canonicalize().unwrap().join("new.txt");
        assert_eq!(real_path("new.txt", &m), expected);
        assert_eq!(real_path("./sub/../new.txt", &m), expected);
    }

    #[test]
    fn a_symlink_resolves_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("target.txt"), "").unwrap();
        std::os::unix::fs::symlink(dir.path().join("target.txt"), dir.path().join("link.txt"))
            .unwrap();
        let m = mounts(dir.path());
        assert_eq!(real_path("link.txt", &m), real_path("target.txt", &m));
    }

    #[tokio::test]
    async fn a_writer_waits_for_the_holder_of_the_same_file_however_it_is_spelt() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("src"), dir.path().join("alias")).unwrap();
        let m = mounts(dir.path());
        let locks = PathLocks::default();
        let first = Access::of(&spec(false), &json!({"path": "src/a.rs"}), &m);
        // Through another directory entry and another table handle (a subagent's clone).
        let second = Access {
            paths: vec![dir.path().join("alias/a.rs")],
            writes: true,
        };
        let other = Access::of(&spec(false), &json!({"path": "src/b.rs"}), &m);
        let held = locks.hold(&first).await;
        let shared = locks.clone();
        let waiting = tokio::spawn(async move { shared.hold(&second).await });
        // Another file is not held up.
        drop(locks.hold(&other).await);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the same file was locked twice");
        drop(held);
        waiting.await.unwrap();
    }

    #[tokio::test]
    async fn readers_share_a_file_and_a_writer_waits_for_them() {
        let dir = tempfile::tempdir().unwrap();
        let m = mounts(dir.path());
        let locks = PathLocks::default();
        let read = Access::of(&spec(true), &json!({"path": "a"}), &m);
        let one = locks.hold(&read).await;
        let two = locks.hold(&read).await;
        let write = Access::of(&spec(false), &json!({"path": "a"}), &m);
        let shared = locks.clone();
        let writer = tokio::spawn(async move { shared.hold(&write).await });
        tokio::task::yield_now().await;
        assert!(!writer.is_finished());
        drop((one, two));
        writer.await.unwrap();
    }

    #[test]
    fn only_a_write_to_a_shared_path_conflicts() {
        let dir = tempfile::tempdir().unwrap();
        let m = mounts(dir.path());
        let read_a = Access::of(&spec(true), &json!({"path": "a"}), &m);
        let write_a = Access::of(&spec(false), &json!({"path": "./a"}), &m);
        let write_b = Access::of(&spec(false), &json!({"path": "b"}), &m);
        assert!(!read_a.conflicts_with(&read_a.clone()));
        assert!(read_a.conflicts_with(&write_a));
        assert!(write_a.conflicts_with(&write_a.clone()));
        assert!(!write_a.conflicts_with(&write_b));
        let no_path = Access::of(&spec(false), &json!({}), &m);
        assert!(!no_path.conflicts_with(&write_a));
    }
}
