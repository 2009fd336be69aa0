//! A session's start against `paddock.lock` (`plugin_store::lock`): an installed plugin whose
//! bytes or tool list differ from its entry refuses the session (`LOCK_MISMATCH`); one with no
//! entry is recorded (first use approves); a changed grant is recorded and noted. An MCP
//! server's tools that are new or changed since the lock are blocked (not registered) and
//! noted; a server with no entry is recorded whole. The notes go into `session/start`. A
//! repository's own lock counts only once the user trusts the repository (`LockPlace::find`);
//! an untrusted one is passed over for the user's own lock, with a note.

use std::path::{Path, PathBuf};

use super::error::SetupError;
use crate::calls::{McpListed, Registry};
use crate::plugin_store::lock::{
    self, LockFile, LockPlace, McpLock, PluginLock, Recorded, ToolChange, pin,
};
use crate::plugin_store::{Installed, PluginStore};
use crate::preset::{PluginSource, ResolvedPreset};
use paddock_sandbox::SpillDir;
use paddock_sandbox::{Grant, Plugin};

/// The lock of a session in `cwd`, read, and where it is.
pub(crate) struct LockCheck {
    place: LockPlace,
    /// The project root: mounts inside it are hashed relative to it, so that a committed
    /// lock's grant hashes hold on every checkout.
    root: PathBuf,
    pub file: LockFile,
    /// What this session adds, applied at `save` to the lock as it is then.
    recorded: Vec<Recorded>,
    /// What the check did, for `session/start` (`lock`).
    pub notes: Vec<String>,
    /// Why the repository's own lock was passed over (it is not trusted), if it was.
    pub ignored: Option<String>,
}

fn lock_error(e: lock::LockError) -> SetupError {
    SetupError::usage(e.to_string())
}

impl LockCheck {
    /// The lock for a session in `cwd` with data directory `data_dir`.
    pub fn open(cwd: &Path, data_dir: &Path) -> Result<LockCheck, SetupError> {
        let place = LockPlace::find(cwd, data_dir).map_err(lock_error)?;
        let file = place.read().map_err(lock_error)?;
        let ignored = place.ignored().map(str::to_string);
        Ok(LockCheck {
            place,
            root: crate::preset::project_root(cwd),
            file,
            recorded: Vec::new(),
            notes: ignored.iter().cloned().collect(),
            ignored,
        })
    }

    /// Checks every installed plugin of `resolved` (loaded as `plugins`, in its order) against
    /// the lock: a difference in bytes or tools refuses; no entry records one; a changed
    /// grant is recorded and noted.
    pub fn check_plugins(
        &mut self,
        store: &PluginStore,
        resolved: &ResolvedPreset,
        plugins: &[Plugin],
    ) -> Result<(), SetupError> {
        for (entry, plugin) in resolved.plugins.iter().zip(plugins) {
            let PluginSource::Installed(name) = &entry.source else {
                continue;
            };
            let record = store
                .get(name)
                .map_err(|e| SetupError::usage(e.to_string()))?;
            let grant = grant_sha256(&entry.grant, &self.root);
            match self.file.plugins.get_mut(name) {
                Some(locked) => {
                    let lines = locked.differences(&plugin.sha256, &plugin.tools);
                    if !lines.is_empty() {
                        return Err(mismatch(
                            self.place.path(),
                            name,
                            &entry.name,
                            &record,
                            &lines,
                        ));
                    }
                    match locked.grants.get(&resolved.name).cloned() {
                        Some(old) if old == grant => {}
                        old => {
                            if old.is_some() {
                                self.notes.push(format!(
                                    "plugin `{name}`: the grant preset `{}` gives it changed \
                                     (sha256 {} in the lock, {grant} now); recorded",
                                    resolved.name,
                                    old.as_deref().unwrap_or_default()
                                ));
                            }
                            locked.grants.insert(resolved.name.clone(), grant.clone());
                            self.recorded.push(Recorded::Grant {
                                name: name.clone(),
                                preset: resolved.name.clone(),
                                sha256: grant,
                            });
                        }
                    }
                }
                None => {
                    let mut locked = PluginLock::of(&record, &plugin.sha256, &plugin.tools);
                    locked.grants.insert(resolved.name.clone(), grant);
                    self.notes.push(format!(
                        "plugin `{name}`: recorded in the lock (first use; sha256 {})",
                        plugin.sha256
                    ));
                    self.file.plugins.insert(name.clone(), locked.clone());
                    self.recorded.push(Recorded::Plugin {
                        name: name.clone(),
                        entry: Box::new(locked),
                    });
                }
            }
        }
        Ok(())
    }

    /// Checks the MCP servers' tools in `registry` against the lock: a server with no entry
    /// is recorded whole; with one, each tool that is new or changed is blocked (taken out of
    /// `registry`) and noted, the rest stay. Removed tools are noted; the lock keeps them
    /// until accepted.
    pub fn check_mcp(&mut self, registry: &mut Registry, preset: &str) {
        let mut blocked = Vec::new();
        for (server, listed) in registry.mcp_listed() {
            let now = pins(listed);
            let Some(locked) = self.file.mcp.get(server) else {
                self.notes.push(format!(
                    "mcp.{server}: {} tool(s) recorded in the lock (first approval)",
                    now.len()
                ));
                let entry = McpLock { tools: now };
                self.file.mcp.insert(server.clone(), entry.clone());
                self.recorded.push(Recorded::Mcp {
                    server: server.clone(),
                    entry,
                });
                continue;
            };
            for (tool, change) in pin::diff(&locked.tools, &now, "annotations") {
                if change == ToolChange::Removed {
                    self.notes.push(format!(
                        "mcp.{server}: tool `{tool}` is in the lock but the server no longer \
                         lists it"
                    ));
                    continue;
                }
                let registered = listed
                    .iter()
                    .find(|l| l.remote == tool)
                    .and_then(|l| l.registered.clone());
                let note = format!(
                    "mcp.{server}: tool `{tool}` blocked: {change} since the lock {}; accept \
                     it with `paddock lock accept mcp.{server} --preset {preset}`",
                    self.place.path().display()
                );
                tracing::warn!("{note}");
                self.notes.push(note);
                blocked.extend(registered);
            }
        }
        registry.block(&blocked);
    }

    /// Records what the checks added, into the lock as it is now (another session may have
    /// written it since it was read).
    pub fn save(&mut self) -> Result<(), SetupError> {
        if self.recorded.is_empty() {
            return Ok(());
        }
        let recorded = std::mem::take(&mut self.recorded);
        self.place
            .update(|lock| recorded.into_iter().for_each(|r| r.apply(lock)))
            .map_err(|e| SetupError::host(e.to_string()))
    }
}

/// The hash of what `grant` gives, the same for every session and checkout: the session's own
/// spill mount left out, and mounts inside the project root named relative to it.
fn grant_sha256(grant: &Grant, root: &Path) -> String {
    let mut grant = grant.clone();
    grant.mounts.retain(|m| m.guest != SpillDir::GUEST);
    for mount in &mut grant.mounts {
        if let Ok(inside) = mount.host.strip_prefix(root) {
            mount.host = Path::new("<project>").join(inside);
        }
    }
    lock::grant_sha256(&grant)
}

/// Each listed tool's pin by its name on the server.
pub(crate) fn pins(listed: &[McpListed]) -> std::collections::BTreeMap<String, lock::ToolPin> {
    listed
        .iter()
        .map(|l| (l.remote.clone(), l.pin.clone()))
        .collect()
}

fn mismatch(
    path: &Path,
    name: &str,
    key: &str,
    record: &Installed,
    lines: &[String],
) -> SetupError {
    let mut message = format!(
        "installed plugin `{name}` (plugins.{key}, installed from {}) is not what the lock {} \
         approved:",
        record.installed_from,
        path.display()
    );
    for line in lines {
        message.push_str("\n  ");
        message.push_str(line);
    }
    message.push_str(&format!(
        "\nIf the change is one you trust, accept it with `paddock lock accept {name}`; to go \
         back to the locked version, `paddock plugin install --locked`. Nothing ran"
    ));
    SetupError::new(super::SetupCode::LockMismatch, message)
}
