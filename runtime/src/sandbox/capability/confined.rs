//! One confined program's confinement, derived from its call or its MCP server's preset
//! entry (K1, K2): what the program may read and write, which protected paths are held, its
//! environment and private temporary directory, and, however it ends, the clean-up.
//!
//! Protected paths are held three ways, all before the program starts:
//! - at each writable root, those that do not exist cannot be created (`placeholder`);
//! - those that exist, at any depth, are bound read-only below the name (`protect_walk`
//!   finds them by descriptor), so no spelling, symlink or hard link writes them;
//! - the only thing left, a protected path created deeper down (`sub/.git` in a directory
//!   the run made), is found after the run and removed by descriptor (`protect_walk`).
//!
//! `ConfinedRun` owns the running program and its confinement together: whether the run
//! ends, times out, is cancelled, its future is dropped, its server restarted or the session
//! ends, the program and everything it started are dead before the clean-up looks, and the
//! clean-up always runs.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sandbox::fs::mount::MountHandle;
use crate::sandbox::fs::placeholder::RootHold;
use crate::sandbox::fs::protect::Protect;
use crate::sandbox::fs::protect_walk;
use crate::sandbox::grant::{ExecGrant, Mount, MountMode};
use paddock_jail::{BindMode, FsAccess, Jail, JailSpec, ProcessLimits};
pub(in crate::sandbox) use paddock_jail::{ConfinedChild, Program};

pub(in crate::sandbox) struct Confined {
    pub tmp: tempfile::TempDir,
    spec: Option<JailSpec>,
    /// Each writable root, the identities (device, inode) of its protected paths when the
    /// run started (one the run moved is still theirs), and its placeholders.
    writable: Vec<WritableRoot>,
    protect: Protect,
    key: String,
    /// Keeps the read-only mounts' descriptors (named by the paths above) open for the run.
    _held: Vec<Arc<MountHandle>>,
}

struct WritableRoot {
    handle: Arc<MountHandle>,
    before: BTreeSet<(u64, u64)>,
    /// Released (placeholders removed) only after the run's processes are dead.
    _hold: RootHold,
}

impl Confined {
    pub(in crate::sandbox) fn prepare(
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
        let mut binds: Vec<(PathBuf, BindMode)> = Vec::new();
        let mut writable = Vec::new();
        let mut held = Vec::new();
        for mount in mounts {
            // Every path below goes through the mount's held directory (K3): `/proc/self/fd/N`
            // in paddock, and the same descriptor number in the cloned child, whose
            // descriptor table is a copy. A name swapped for a symlink gains nothing.
            let shown = || format!("mount {} -> {}", mount.host.display(), mount.guest);
            let handle = mount.held().map_err(|e| format!("{}: {e}", shown()))?;
            let root = handle.proc_path();
            match mount.mode {
                MountMode::Ro => {
                    fs.read.push(root);
                    held.push(handle);
                }
                MountMode::Rw => {
                    let hold = RootHold::prepare(&handle, protect)
                        .map_err(|e| format!("{}: {e}", shown()))?;
                    let existing = protect_walk::existing(handle.fd(), protect)
                        .map_err(|e| format!("{}: {e}", shown()))?;
                    binds.extend(hold.pins.iter().map(|p| (p.clone(), BindMode::Pin)));
                    binds.extend(
                        hold.read_only
                            .iter()
                            .map(|p| (p.clone(), BindMode::ReadOnly)),
                    );
                    binds.extend(
                        existing
                            .iter()
                            .map(|e| (root.join(&e.rel), BindMode::ReadOnly)),
                    );
                    writable.push(WritableRoot {
                        before: existing.iter().map(|e| e.identity).collect(),
                        handle,
                        _hold: hold,
                    });
                    fs.write.push(root);
                }
            }
        }
        // Pins first: a read-only bind below a pinned directory must land on top of the pin.
        binds.sort_by_key(|(path, mode)| (*mode != BindMode::Pin, path.clone()));
        binds.dedup_by(|a, b| a.0 == b.0);
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
                binds,
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

    /// The program's environment: the variables `allowed` names, as the host has them; its
    /// private `TMPDIR`; and, unless `allowed` passes it, `GIT_CONFIG_GLOBAL=/dev/null`: the
    /// user's own git configuration lies outside the jail, and git refuses to run when it
    /// cannot read it.
    pub(in crate::sandbox) fn environment(&self, allowed: &[String]) -> Vec<(String, OsString)> {
        let mut env: Vec<(String, OsString)> = allowed
            .iter()
            .filter(|name| *name != "TMPDIR")
            .filter_map(|name| std::env::var_os(name).map(|value| (name.clone(), value)))
            .collect();
        env.push(("TMPDIR".into(), self.tmp.path().into()));
        if !allowed.iter().any(|name| name == "GIT_CONFIG_GLOBAL") {
            env.push(("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()));
        }
        env
    }

    /// Starts `program` in this confinement.
    pub(in crate::sandbox) fn start(mut self, program: Program<'_>) -> Result<ConfinedRun, String> {
        let spec = self.spec.take().ok_or("the jail was already prepared")?;
        let child = Jail::prepare(spec, &self.key)?.spawn(program)?;
        Ok(ConfinedRun {
            child,
            confined: Some(self),
        })
    }

    /// Removes protected paths the run created, by descriptor, and says so. `Err` when a
    /// directory cannot be listed (what is below it could not be checked).
    fn undo_protected_creations(&self) -> Result<Vec<String>, String> {
        let mut notes = Vec::new();
        for root in &self.writable {
            let created = protect_walk::created(root.handle.fd(), &self.protect, &root.before)
                .map_err(|e| {
                    format!(
                        "after the program ended, paddock could not check the mount {} for \
                         protected paths it created: {e}",
                        root.handle.path().display()
                    )
                })?;
            for entry in created {
                let rel = entry.rel.display();
                notes.push(match protect_walk::remove(&entry) {
                    Ok(_) => format!(
                        "\n[paddock] removed `{rel}`, which the program created: it is a \
                         protected path (K2); to let programs write it, add it to \
                         `writable_protected` in the preset\n"
                    ),
                    Err(e) => format!(
                        "\n[paddock] the program created protected path `{rel}` and it could \
                         not be removed: {e}\n"
                    ),
                });
            }
        }
        Ok(notes)
    }
}

/// A running confined program with its confinement. Dropped in any state, it kills the
/// program, waits until every process of it is gone, and cleans up.
pub(in crate::sandbox) struct ConfinedRun {
    child: ConfinedChild,
    confined: Option<Confined>,
}

impl ConfinedRun {
    pub(in crate::sandbox) fn child(&mut self) -> &mut ConfinedChild {
        &mut self.child
    }

    /// Kills the program and everything it started.
    pub(in crate::sandbox) fn kill(&self) {
        self.child.kill();
    }

    /// Waits for the program to end: its exit code, or `None` after a signal.
    pub(in crate::sandbox) async fn wait(&mut self) -> Option<i32> {
        self.child.wait().await.ok().flatten()
    }

    /// Ends the run: the program (and, with it, every process of its namespace) killed and
    /// waited for, then the protected paths it created removed. The notes say what was
    /// removed; `Err` when the clean-up could not look everywhere.
    pub(in crate::sandbox) async fn finish(mut self) -> Result<Vec<String>, String> {
        self.child.kill();
        let _ = self.child.wait().await;
        let Some(confined) = self.confined.take() else {
            return Ok(Vec::new());
        };
        let notes = confined.undo_protected_creations();
        // The namespace goes first (the child's drop retires it), then the placeholders,
        // both off the call's path: removing a placeholder while it is still a mount point
        // in the program's namespace would wait for an RCU grace period here.
        drop(self);
        paddock_jail::retire(Box::new(confined));
        notes
    }
}

impl Drop for ConfinedRun {
    /// Cancelled, timed out, dropped, restarted, unwound by a panic or ended with the session:
    /// the same order as `finish`, synchronously.
    fn drop(&mut self) {
        let Some(confined) = self.confined.take() else {
            return;
        };
        self.child.kill();
        // The namespace's init is reaped only after every process in it is gone.
        self.child.reap_blocking();
        if let Err(e) = confined.undo_protected_creations() {
            tracing::warn!("{e}");
        }
    }
}

fn real(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}
