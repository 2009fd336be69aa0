//! One `exec` run's confinement, derived from its call (K1, K2): what the program may read and
//! write, which protected paths are bound read-only, its private temporary directory, and
//! the clean-up of protected paths it created.
//!
//! Existing protected paths are bound read-only below the name (a mount), so no spelling,
//! symlink or hard link writes them. A protected path that does *not* exist yet cannot be
//! covered by a mount; the run may create it (say `.cargo/config.toml` at a mount's root), and
//! paddock removes it when the run is over, with a note in the program's stderr. When that
//! happens, every process of the run is already dead (see `confine`), so nothing races it.

use std::path::{Path, PathBuf};

pub(super) use super::confine::{ConfinedChild, Program};
use super::confine::{FsAccess, Jail, JailSpec, ProcessLimits};
use super::grant::{ExecGrant, Mount, MountMode};
use super::protect::Protect;

pub(super) struct Confined {
    pub tmp: tempfile::TempDir,
    spec: Option<JailSpec>,
    /// Protected paths that did not exist when the run started, by mount root.
    absent: Vec<(PathBuf, PathBuf)>,
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
        let mut absent = Vec::new();
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
                    for path in protect.roots_under(&root) {
                        if path.symlink_metadata().is_ok() {
                            protected.push(path);
                        } else {
                            absent.push((root.clone(), path));
                        }
                    }
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
            absent,
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
        for (root, path) in &self.absent {
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            let rel = path.strip_prefix(root).unwrap_or(path).display();
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

fn real(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}
