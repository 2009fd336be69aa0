//! One `exec` run's confinement, derived from its call (K1, K2): what the program may read and
//! write, which protected paths are bound read-only, its private temporary directory, and
//! the clean-up of protected paths it created.
//!
//! Existing protected paths, at any depth of a writable mount (`protect_walk`), are bound
//! read-only below the name (a mount), so no spelling, symlink or hard link writes them. A
//! protected path that does *not* exist yet cannot be covered by a mount; the run may create
//! it (say `.cargo/config.toml`, or `sub/.git/config` in a new directory), and paddock finds
//! and removes it when the run is over, with a note in the program's stderr. When that
//! happens, every process of the run is already dead (see `confine`), so nothing races it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub(super) use super::confine::{ConfinedChild, Program};
use super::confine::{FsAccess, Jail, JailSpec, ProcessLimits};
use super::grant::{ExecGrant, Mount, MountMode};
use super::protect::Protect;
use super::protect_walk;

pub(super) struct Confined {
    pub tmp: tempfile::TempDir,
    spec: Option<JailSpec>,
    /// Each writable mount's root and the identities (device, inode) of its protected paths
    /// when the run started: one the run moved (a parent directory renamed) is still theirs.
    writable: Vec<(PathBuf, BTreeSet<(u64, u64)>)>,
    protect: Protect,
    key: String,
    /// Keeps the mounts' descriptors (named by the paths above) open for the whole run.
    _held: Vec<std::sync::Arc<super::mount::MountHandle>>,
}

impl Confined {
    pub(super) fn prepare(
        mounts: &[Mount],
        protect: &Protect,
        grant: &ExecGrant,
        program: &Path,
        key: &str,
    ) -> Result<Confined, String> {
        let tmp = tempfile::Builder::new()
            .prefix("paddock-exec-")
            .tempdir()
            .map_err(|e| format!("cannot create the program's private temporary directory: {e}"))?;
        let mut fs = FsAccess::default();
        let mut protected = Vec::new();
        let mut writable = Vec::new();
        let mut held = Vec::new();
        for mount in mounts {
            // Every path below goes through the mount's held directory (K3): `/proc/self/fd/N`
            // in paddock, and the same descriptor number in the cloned child, whose
            // descriptor table is a copy. A name swapped for a symlink gains nothing.
            let handle = mount
                .held()
                .map_err(|e| format!("mount {} -> {}: {e}", mount.host.display(), mount.guest))?;
            let root = handle.proc_path();
            held.push(handle);
            match mount.mode {
                MountMode::Ro => fs.read.push(root),
                MountMode::Rw => {
                    let existing = protect_walk::existing(&root, protect);
                    let ids = existing.iter().filter_map(|p| identity(p)).collect();
                    protected.extend(existing);
                    writable.push((root.clone(), ids));
                    fs.write.push(root);
                }
            }
        }
        // The program itself (say a toolchain under the home directory) must be readable.
        if let Some(dir) = real(program).ok().as_deref().and_then(Path::parent) {
            fs.read.push(dir.to_path_buf());
        }
        fs.read
            .extend(grant.read.iter().filter(|p| p.exists()).cloned());
        fs.write
            .extend(grant.write.iter().filter(|p| p.exists()).cloned());
        fs.write.push(real(tmp.path())?);
        let timeout_secs = grant.timeout.as_secs().saturating_add(1);
        Ok(Confined {
            tmp,
            spec: Some(JailSpec {
                fs,
                protected,
                network: grant.network,
                limits: ProcessLimits {
                    cpu_secs: timeout_secs,
                    address_space_bytes: grant.memory_bytes,
                    processes: grant.processes,
                    file_bytes: grant.file_bytes,
                    open_files: 4096,
                },
            }),
            writable,
            protect: protect.clone(),
            key: key.to_string(),
            _held: held,
        })
    }

    /// The jail the child enters. Called once.
    pub(super) fn jail_for_child(&mut self) -> Result<Jail, String> {
        let spec = self.spec.take().ok_or("the jail was already prepared")?;
        Jail::prepare(spec, &self.key)
    }

    /// Removes protected paths the run created, and says so.
    pub(super) fn undo_protected_creations(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let created = self.writable.iter().flat_map(|(root, before)| {
            protect_walk::existing(root, &self.protect)
                .into_iter()
                .filter(|path| identity(path).is_some_and(|id| !before.contains(&id)))
                .map(move |path| (root, path))
        });
        for (root, path) in created {
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            let rel = path.strip_prefix(root).unwrap_or(&path).display();
            notes.push(match removed {
                Ok(()) => format!(
                    "\n[paddock] removed `{rel}`, which the program created: it is a protected \
                     path (K2); to let programs write it, add it to `writable_protected` in the preset\n"
                ),
                Err(e) => format!("\n[paddock] the program created protected path `{rel}` and it could not be removed: {e}\n"),
            });
        }
        notes
    }
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    path.symlink_metadata().ok().map(|m| (m.dev(), m.ino()))
}

fn real(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}
