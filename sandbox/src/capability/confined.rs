//! One confined program's confinement, derived from its call or its MCP server's preset
//! entry (K1, K2): what the program may read and write, which protected paths are held, its
//! environment and private temporary directory, and, however it ends, the clean-up.
//!
//! Protected paths are held at every writable root (each writable mount and each directory
//! of the grant's `write`) three ways, all before the program starts:
//! - those that do not exist at the root cannot be created (`placeholder`), and neither can
//!   the root become a git directory;
//! - those that exist, at any depth, are bound read-only below the name (`protect_walk`
//!   finds them by descriptor), so no spelling, symlink or hard link writes them; so are the
//!   paths the repositories' own git configuration names (`git_config`);
//! - the only thing left, a protected path created deeper down (`sub/.git` in a directory
//!   the run made), is found after the run and removed by descriptor, never deleting what
//!   existed before the run (`protect_walk`).
//!
//! `ConfinedRun` owns the running program and its confinement together: whether the run
//! ends, times out, is cancelled, its future is dropped, its server restarted or the session
//! ends, the program and everything it started are dead before the clean-up looks, and the
//! clean-up always runs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fs::git_config;
use crate::fs::mount::MountHandle;
use crate::fs::placeholder::RootHold;
use crate::fs::protect::Protect;
use crate::fs::protect_walk::{self, Removal};
use crate::fs::walk_index;
use crate::grant::{ExecGrant, Mount, MountMode};
use paddock_jail::{BindMode, FsAccess, Jail, JailSpec, ProcessLimits};
pub(crate) use paddock_jail::{ConfinedChild, Program};

pub(crate) struct Confined {
    /// The program's private temporary directory (`TMPDIR`), shared by the runs of one shell.
    pub tmp: Arc<tempfile::TempDir>,
    spec: Option<JailSpec>,
    /// Each writable root, the identities (device, inode) of its protected paths when the
    /// run started (one the run moved is still theirs), and its placeholders.
    writable: Vec<WritableRoot>,
    key: String,
    /// The preset's `confine = "off"`: started with no confinement at all.
    unconfined: bool,
    /// Keeps the read-only mounts' descriptors (named by the paths above) open for the run.
    _held: Vec<Arc<MountHandle>>,
}

/// Longest path bound by its name below the root (the kernel's `PATH_MAX` is 4096 with the
/// terminating NUL).
const PATH_MAX: usize = 4000;

struct WritableRoot {
    handle: Arc<MountHandle>,
    /// What the walk found before the run: the protected entries (bound read-only through
    /// their held parents, so their descriptors stay open for the run) and every inode seen.
    before: protect_walk::Walk,
    /// What is protected here: the grant's, and what the repositories' configuration names.
    protect: Protect,
    /// Released (placeholders removed) only after the run's processes are dead.
    _hold: RootHold,
}

impl WritableRoot {
    /// Holds the protected paths of the writable root `handle` (`shown` names it in errors):
    /// placeholders where missing at its root, read-only binds below it.
    fn hold(
        handle: Arc<MountHandle>,
        protect: &Protect,
        shown: &str,
        binds: &mut Vec<(PathBuf, BindMode)>,
    ) -> Result<WritableRoot, String> {
        let walk = |protect: &Protect| {
            let hold = RootHold::prepare(&handle, protect).map_err(|e| format!("{shown}: {e}"))?;
            let before =
                walk_index::existing(handle.fd(), protect).map_err(|e| format!("{shown}: {e}"))?;
            Ok::<_, String>((hold, before))
        };
        let (mut hold, mut before) = walk(protect)?;
        // What the repositories' own configuration names (hooks directories, included
        // files, scripts): protected like the inventory's names, once the walk has found the
        // repositories. Walked again only when there is something to add.
        let named = config_named(&handle, &before, protect);
        let protect = if named.is_empty() {
            protect.clone()
        } else {
            let mut wider = protect.clone();
            wider.extra.extend(named);
            (hold, before) = walk(&wider)?;
            wider
        };
        binds.extend(hold.pins.iter().map(|p| (p.clone(), BindMode::Pin)));
        binds.extend(
            hold.read_only
                .iter()
                .map(|p| (p.clone(), BindMode::ReadOnly)),
        );
        // By their path below the root, resolved in the child after the pins (a bind through a
        // held parent would land under a pin, out of sight); through the held parent only
        // where that path is longer than the kernel takes (a very deep tree). The jail checks
        // each bind's identity either way.
        let root = handle.proc_path();
        binds.extend(before.protected.iter().chain(&before.too_deep).map(|e| {
            let path = root.join(&e.rel);
            let path = if path.as_os_str().len() < PATH_MAX {
                path
            } else {
                e.proc_path()
            };
            (path, BindMode::ReadOnly)
        }));
        if before.root_is_git_dir {
            // git would run what this directory's config names: all of it is protected.
            binds.push((handle.proc_path(), BindMode::ReadOnly));
        }
        Ok(WritableRoot {
            before,
            handle,
            protect,
            _hold: hold,
        })
    }
}

/// The paths below `handle`'s root that the configuration of a repository there (or of the
/// one the root lies in) names, relative to the root, less those `protect` already covers.
fn config_named(
    handle: &MountHandle,
    walk: &protect_walk::Walk,
    protect: &Protect,
) -> Vec<PathBuf> {
    let top = handle.path();
    let mut repos: Vec<git_config::Repo> = git_config::repo_above(top).into_iter().collect();
    for entry in &walk.protected {
        let at = top.join(&entry.rel);
        if entry.rel.file_name().is_some_and(|n| n == ".git") {
            repos.extend(at.parent().and_then(git_config::repo_at));
        } else {
            repos.extend(git_config::repo_at(&at));
        }
    }
    let mut named: Vec<PathBuf> = repos
        .iter()
        .flat_map(git_config::named_paths)
        .filter_map(|p| p.strip_prefix(top).ok().map(Path::to_path_buf))
        .filter(|rel| !rel.as_os_str().is_empty() && !protect.covers(rel) && !protect.opens(rel))
        .collect();
    named.sort();
    named.dedup();
    named
}

impl Confined {
    pub(crate) fn prepare(
        mounts: &[Mount],
        protect: &Protect,
        grant: &ExecGrant,
        program: &Path,
        key: &str,
    ) -> Result<Confined, String> {
        Confined::prepare_in(mounts, protect, grant, program, key, private_tmp()?)
    }

    /// As `prepare`, with `tmp` as the program's temporary directory (a shell's runs share
    /// theirs).
    pub(crate) fn prepare_in(
        mounts: &[Mount],
        protect: &Protect,
        grant: &ExecGrant,
        program: &Path,
        key: &str,
        tmp: Arc<tempfile::TempDir>,
    ) -> Result<Confined, String> {
        let mut fs = FsAccess::default();
        let mut binds: Vec<(PathBuf, BindMode)> = Vec::new();
        let mut writable = Vec::new();
        let mut held = Vec::new();
        for mount in mounts {
            // Every path below goes through the mount's held directory (K3): `/proc/self/fd/N`
            // in paddock, and the same descriptor number in the cloned child, whose
            // descriptor table is a copy. A name swapped for a symlink gains nothing.
            let shown = format!("mount {} -> {}", mount.host.display(), mount.guest);
            let handle = mount.held().map_err(|e| format!("{shown}: {e}"))?;
            let root = handle.proc_path();
            match mount.mode {
                MountMode::Ro => {
                    fs.read.push(root);
                    held.push(handle);
                }
                MountMode::Rw => {
                    writable.push(WritableRoot::hold(handle, protect, &shown, &mut binds)?);
                    fs.write.push(root);
                }
            }
        }
        // A grant's `write` directories are writable roots like the mounts: the same rule
        // holds there (a repository in a build cache has a `.git/config` as much as one in
        // the project).
        for path in grant.write.iter().filter(|p| p.exists()) {
            if !path.is_dir() {
                // A single file the preset names: it holds nothing, and is granted as named.
                fs.write.push(path.clone());
                continue;
            }
            let shown = format!("exec grant write {}", path.display());
            let handle = real(path)
                .and_then(|p| MountHandle::open(&p).map_err(|e| e.to_string()))
                .map_err(|e| format!("{shown}: {e}"))?;
            let handle = Arc::new(handle);
            fs.write.push(handle.proc_path());
            writable.push(WritableRoot::hold(handle, protect, &shown, &mut binds)?);
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
            key: key.to_string(),
            unconfined: false,
            _held: held,
        })
    }

    /// No confinement (the preset's explicit `confine = "off"`): the program runs as the
    /// user, with the same environment and temporary directory, and nothing to clean up.
    pub(crate) fn unconfined(tmp: Arc<tempfile::TempDir>, key: &str) -> Confined {
        Confined {
            tmp,
            spec: None,
            writable: Vec::new(),
            key: key.to_string(),
            unconfined: true,
            _held: Vec::new(),
        }
    }

    /// The program's environment: the variables `allowed` names, as the host has them; its
    /// private `TMPDIR`; and, unless `allowed` passes it, `GIT_CONFIG_GLOBAL=/dev/null`: the
    /// user's own git configuration lies outside the jail, and git refuses to run when it
    /// cannot read it.
    pub(crate) fn environment(&self, allowed: &[String]) -> Vec<(String, OsString)> {
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
    pub(crate) fn start(mut self, program: Program<'_>) -> Result<ConfinedRun, String> {
        let jail = if self.unconfined {
            Jail::unconfined()?
        } else {
            let spec = self.spec.take().ok_or("the jail was already prepared")?;
            Jail::prepare(spec, &self.key)?
        };
        let child = jail.spawn(program)?;
        Ok(ConfinedRun {
            child,
            confined: Some(self),
        })
    }

    /// Removes protected paths the run created, by descriptor, and says so; never deletes
    /// what existed before the run (`protect_walk::remove`). `Err` when a directory cannot be
    /// listed (what is below it could not be checked).
    fn undo_protected_creations(&self) -> Result<Vec<String>, String> {
        let mut notes = Vec::new();
        for root in &self.writable {
            let created = walk_index::existing(root.handle.fd(), &root.protect)
                .and_then(|now| protect_walk::created(root.handle.fd(), now, &root.before))
                .map_err(|e| {
                    format!(
                        "after the program ended, paddock could not check the mount {} for \
                         protected paths it created: {e}",
                        root.handle.path().display()
                    )
                })?;
            for entry in created.entries.iter().chain(&created.root_markers) {
                let rel = entry.rel.display();
                let fix = "to let programs write it, add it to `writable_protected` in the preset";
                notes.push(match protect_walk::remove(entry, &root.before) {
                    Ok(Removal::Removed) => format!(
                        "\n[paddock] removed `{rel}`, which the program created: it is a \
                         protected path ({}) (K2); {fix}\n",
                        protect_walk::why(entry)
                    ),
                    Ok(Removal::Replaced) => continue,
                    Ok(Removal::Disarmed) => format!(
                        "\n[paddock] the program made `{rel}` a git directory (git would run \
                         what its config names); paddock removed the `HEAD`, `objects`, `refs` \
                         or `commondir` the program created in it, and nothing else (K2)\n"
                    ),
                    Ok(Removal::KeptAside(aside)) => format!(
                        "\n[paddock] the program put files that existed before it ran at \
                         `{rel}`, a protected path; paddock deletes nothing that existed, so it \
                         renamed `{rel}` to `{}` beside it: look at it, then delete or rename \
                         it yourself (K2)\n",
                        aside.to_string_lossy()
                    ),
                    Err(e) => format!(
                        "\n[paddock] the program created protected path `{rel}` and it could \
                         not be removed: {e}; remove it yourself before running git, cargo or \
                         npm there\n"
                    ),
                });
            }
            for deep in created.too_deep {
                notes.push(format!(
                    "\n[paddock] the program created `{}`, a directory more than 512 levels \
                     deep; paddock did not look below it, and holds it read-only from the next \
                     call on\n",
                    deep.display()
                ));
            }
        }
        Ok(notes)
    }
}

/// A running confined program with its confinement. Dropped in any state, it kills the
/// program, waits until every process of it is gone, and cleans up.
pub(crate) struct ConfinedRun {
    child: ConfinedChild,
    confined: Option<Confined>,
}

impl ConfinedRun {
    pub(crate) fn child(&mut self) -> &mut ConfinedChild {
        &mut self.child
    }

    /// Kills the program and everything it started.
    pub(crate) fn kill(&self) {
        self.child.kill();
    }

    /// Signals the program's process group until it is reaped (see `paddock_jail::Group`).
    pub(crate) fn group(&self) -> Arc<paddock_jail::Group> {
        self.child.group()
    }

    /// The program's pid in paddock's namespace.
    pub(crate) fn pid(&self) -> i32 {
        self.child.pid()
    }

    /// Removes the protected paths the program created so far, while it still runs (a shell
    /// between two commands), as `finish` does at the end. What its processes create after
    /// this is found by the next look, or by the one at the end, when all are dead.
    pub(crate) fn undo_so_far(&self) -> Result<Vec<String>, String> {
        match &self.confined {
            Some(confined) => confined.undo_protected_creations(),
            None => Ok(Vec::new()),
        }
    }

    /// Waits for the program to end: its exit code, or `None` after a signal.
    pub(crate) async fn wait(&mut self) -> Option<i32> {
        self.child.wait().await.ok().flatten()
    }

    /// Ends the run: the program (and, with it, every process of its namespace) killed and
    /// waited for, then the protected paths it created removed. The notes say what was
    /// removed; `Err` when the clean-up could not look everywhere.
    pub(crate) async fn finish(mut self) -> Result<Vec<String>, String> {
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

/// A new private temporary directory for confined programs.
pub(crate) fn private_tmp() -> Result<Arc<tempfile::TempDir>, String> {
    tempfile::Builder::new()
        .prefix("paddock-exec-")
        .tempdir()
        .map(Arc::new)
        .map_err(|e| format!("cannot create the program's private temporary directory: {e}"))
}

fn real(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))
}
