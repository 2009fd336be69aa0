//! Checkpoints of a session's writable mounts and exec `write` grants, and the rewind of its
//! code to one of them.
//!
//! Before each turn (and as it ends) the session records every writable mount of its plugins
//! and MCP servers, and every directory its programs may write outside them (`grants`: held
//! and recorded like a mount, with the same engine, bounds and exclusions), into the
//! checkpoint store in the data directory (`paddock_checkpoint`:
//! content-addressed, deduplicated, costing what changed) and logs the checkpoint's id
//! (`checkpoint` events), so checkpoints are part of the history and survive a crash and
//! `resume`. A rewind records the mounts as they are now, finds what changed outside the
//! session since its last checkpoint (kept, with a warning, unless forced), restores each
//! mount by its held descriptor, and logs a `rewind` event naming both checkpoints.
//!
//! The exclusions are the strictest any grant on the mount has: every plugin's `protect`
//! entries and none of the `writable_protected` openings, so a restore never writes `.git`
//! even for a session whose tools may.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod grants;

use paddock_checkpoint::{Captured, Hash, MountRecord, Record, Recorder, RootKind, Rules, Store};
pub use paddock_checkpoint::{Kept, Restored};
use paddock_sandbox::{Mount, MountHandle, MountMode, Protect};

use crate::log::{Body, SessionLog};
use crate::preset::{CheckpointPolicy, Grain};

/// The checkpoint store's directory in the data directory.
pub fn store_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("checkpoints")
}

/// Why a first checkpoint of `root` would cost too much: more than the policy's entries or
/// bytes of files (git directories left out, as a checkpoint leaves them, and what git ignores
/// when the policy leaves that out too); `None` when it is within both. Stops counting at the
/// first bound passed, so the check costs at most that. Symlinks are not followed. The answer
/// reads "ROOT holds more than ...".
fn too_big(root: &Path, policy: &CheckpointPolicy) -> Option<String> {
    let (mut files, mut bytes) = (0u64, 0u64);
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .git_ignore(policy.exclude_vcs_ignored)
        .git_exclude(policy.exclude_vcs_ignored)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walk.flatten().skip(1) {
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        files += 1;
        if meta.is_file() {
            bytes += meta.len();
        }
        if files > policy.max_files || bytes > policy.max_total_bytes {
            let hint = if policy.exclude_vcs_ignored {
                ""
            } else {
                "; `exclude_vcs_ignored = true` leaves out what git ignores (build output, \
                 dependencies)"
            };
            return Some(format!(
                "{} holds more than {} entries or {} MiB of files, which the first checkpoint \
                 would copy into the data directory (the preset's [checkpoints] max_files and \
                 max_total_mb set the bounds{hint})",
                root.display(),
                policy.max_files,
                policy.max_total_bytes / (1024 * 1024)
            ));
        }
    }
    None
}

/// One recorded root: a writable mount or an exec write grant, held.
struct Mounted {
    host: String,
    kind: RootKind,
    handle: Arc<MountHandle>,
    recorder: Recorder,
}

/// The recorders of one session's writable mounts and exec write grants.
pub struct Checkpoints {
    store: Store,
    mounts: Mutex<Vec<Mounted>>,
    grain: Grain,
    /// The exec write grants checkpoints do not record, and why: told with every rewind and
    /// diff.
    left_out: Vec<String>,
}

/// What a rewind puts back: the files of the mounts, the conversation, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    Code,
    Conversation,
    /// Both, as a person going back to an earlier turn expects: the files and what the model
    /// remembers of them agree again.
    #[default]
    Both,
}

impl Scope {
    pub fn code(self) -> bool {
        self != Scope::Conversation
    }
    pub fn conversation(self) -> bool {
        self != Scope::Code
    }
}

/// What a rewind of the conversation did: the history goes on from where it stood when turn
/// `turn` began, and `prompt` is the message that started that turn (for the person to send
/// again, or another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationRewound {
    pub turn: u64,
    pub prompt: Option<String>,
}

/// What a rewind did, mount by mount, and to the conversation.
#[derive(Debug, Clone, Default)]
pub struct Rewound {
    /// The checkpoint of the mounts just before the rewind (rewind to it to undo), and just
    /// after it.
    pub before: String,
    pub after: String,
    pub mounts: Vec<(String, Restored)>,
    /// What no checkpoint records (protected paths, files over the size bound), by mount.
    pub excluded: Vec<(String, Vec<(String, String)>)>,
    /// Things the person should know about how the rewind was judged.
    pub notes: Vec<String>,
    /// The conversation's rewind, when it was asked for.
    pub conversation: Option<ConversationRewound>,
}

impl Checkpoints {
    /// The recorders for `mounts` (those written to; a mount inside another is recorded as
    /// part of it) and for the directories of `grants` (the exec grants' `write` paths) that
    /// are not inside them (`grants::grant_roots` says which). `None` when nothing is
    /// writable.
    pub fn new(
        data_dir: &Path,
        mounts: &[Mount],
        grants: &[PathBuf],
        protect: &[&Protect],
        policy: &CheckpointPolicy,
    ) -> Result<Option<Checkpoints>, String> {
        if !policy.enabled {
            return Err("the preset turns checkpoints off ([checkpoints] enabled = false)".into());
        }
        let mut writable: Vec<&Mount> = mounts.iter().filter(|m| m.mode == MountMode::Rw).collect();
        writable.sort_by(|a, b| a.host.cmp(&b.host));
        writable.dedup_by(|b, a| b.host.starts_with(&a.host));
        for mount in &writable {
            if let Some(why) = too_big(&mount.host, policy) {
                return Err(format!(
                    "{why}; the session runs without checkpoints (rewind and diff of the files \
                     are not available for it)"
                ));
            }
        }
        let hosts: Vec<PathBuf> = writable.iter().map(|m| grants::real(&m.host)).collect();
        let (grant_roots, left_out) = grants::grant_roots(grants, &hosts, policy);
        if writable.is_empty() && grant_roots.is_empty() {
            return Ok(None);
        }
        let rules = Rules {
            protect: Protect {
                extra: protect.iter().flat_map(|p| p.extra.iter().cloned()).collect(),
                writable: Vec::new(),
            },
            max_file_bytes: Some(policy.max_file_bytes),
            vcs_ignored: policy.exclude_vcs_ignored,
        };
        let store = Store::open(&store_dir(data_dir)).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for mount in writable {
            let handle = match &mount.handle {
                Some(h) => h.clone(),
                None => Arc::new(MountHandle::open(&mount.host).map_err(|e| {
                    format!("cannot open the mount {} to checkpoint it: {e}", mount.host.display())
                })?),
            };
            let recorder = Recorder::new(handle.fd(), rules.clone())
                .map_err(|e| format!("cannot hold the mount {}: {e}", mount.host.display()))?;
            out.push(Mounted {
                host: mount.host.display().to_string(),
                kind: RootKind::Mount,
                handle,
                recorder,
            });
        }
        // After the mounts, so a grant's directories never take the inotify watches the
        // project's need (past the user's limit a root falls back to scans of metadata).
        for grant in grant_roots {
            let handle = Arc::new(grant.handle);
            let recorder = Recorder::new(handle.fd(), rules.clone()).map_err(|e| {
                format!("cannot hold the exec write grant {}: {e}", grant.host.display())
            })?;
            out.push(Mounted {
                host: grant.host.display().to_string(),
                kind: RootKind::Grant,
                handle,
                recorder,
            });
        }
        Ok(Some(Checkpoints {
            store,
            mounts: Mutex::new(out),
            grain: policy.grain,
            left_out,
        }))
    }

    /// The host directories every checkpoint records, mounts first (what a `checkpoint`
    /// event names).
    pub fn roots(&self) -> Vec<String> {
        let mounts = self.mounts.lock().unwrap_or_else(|e| e.into_inner());
        mounts.iter().map(|m| m.host.clone()).collect()
    }

    /// The exec write grants checkpoints leave out, and why, in words.
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// Records every mount now; returns the checkpoint's id and what was captured.
    pub fn take(&self) -> Result<(String, Vec<Captured>), String> {
        let mut mounts = self.mounts.lock().unwrap_or_else(|e| e.into_inner());
        let mut record = Record { mounts: Vec::new() };
        let mut captured = Vec::new();
        for m in mounts.iter_mut() {
            m.handle.verify()?;
            let c = m.recorder.capture(&self.store).map_err(|e| e.to_string())?;
            record.mounts.push(MountRecord {
                host: m.host.clone(),
                kind: m.kind,
                tree: c.tree.to_string(),
                excluded: c
                    .excluded
                    .iter()
                    .map(|(p, e)| (p.display().to_string(), e.describe().to_string()))
                    .collect(),
            });
            captured.push(c);
        }
        let id = record.save(&self.store).map_err(|e| e.to_string())?;
        self.store.sync().map_err(|e| e.to_string())?;
        Ok((id.to_string(), captured))
    }

    /// Takes a checkpoint and logs it for `turn` (its start, or with `ended` its end).
    pub fn log_one(&self, log: &SessionLog, turn: u64, ended: bool) -> Result<String, String> {
        let (id, _) = self.take()?;
        log.append(Body::Checkpoint {
            id: id.clone(),
            turn,
            ended,
            call: None,
            roots: self.roots(),
        })
        .map_err(|e| format!("cannot write the session log: {e}"))?;
        Ok(id)
    }

    /// With `grain = "call"`: takes a checkpoint just before call `call` of turn `turn`
    /// starts, and logs it (synced with the call's start, which follows). `None` at the
    /// turn grain, where calls take none.
    pub fn before_call(&self, log: &SessionLog, turn: u64, call: &str) -> Option<Result<String, String>> {
        if self.grain != Grain::Call {
            return None;
        }
        Some(self.take().and_then(|(id, _)| {
            log.append(Body::Checkpoint {
                id: id.clone(),
                turn,
                ended: false,
                call: Some(call.to_string()),
                roots: self.roots(),
            })
            .map_err(|e| format!("cannot write the session log: {e}"))?;
            Ok(id)
        }))
    }

    fn record(&self, id: &str) -> Result<Record, String> {
        let hash = Hash::parse(id).ok_or_else(|| format!("`{id}` is not a checkpoint id"))?;
        Record::load(&self.store, &hash).map_err(|e| e.to_string())
    }

    /// Puts the mounts back as checkpoint `to` recorded them. `reference` is the session's
    /// last checkpoint: what differs between it and now was changed outside the session, and
    /// is kept unless `force`.
    pub fn restore(&self, to: &str, reference: Option<&str>, force: bool) -> Result<Rewound, String> {
        let target = self.record(to)?;
        let reference = reference.map(|r| self.record(r)).transpose()?;
        let (before, _) = self.take()?;
        let now = self.record(&before)?;
        let mounts = self.mounts.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = Rewound {
            before,
            notes: self.left_out.clone(),
            ..Rewound::default()
        };
        for m in mounts.iter() {
            let (Some(current), Some(want)) = (now.tree_of(&m.host), target.tree_of(&m.host)) else {
                continue;
            };
            let outside: BTreeSet<PathBuf> = match reference.as_ref().and_then(|r| r.tree_of(&m.host)) {
                Some(last) => paddock_checkpoint::diff::changes(&self.store, &last, &current)
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .map(|c| c.rel)
                    .collect(),
                None => BTreeSet::new(),
            };
            m.handle.verify()?;
            let restored = paddock_checkpoint::restore(
                m.handle.fd(),
                &paddock_checkpoint::Request {
                    store: &self.store,
                    rules: m.recorder.rules(),
                    current,
                    target: want,
                    outside: &outside,
                    force,
                },
            )
            .map_err(|e| e.to_string())?;
            done.mounts.push((m.host.clone(), restored));
            if let Some(rec) = target.mounts.iter().find(|r| r.host == m.host)
                && !rec.excluded.is_empty()
            {
                done.excluded.push((m.host.clone(), rec.excluded.clone()));
            }
        }
        for rec in &target.mounts {
            if !mounts.iter().any(|m| m.host == rec.host) {
                done.notes.push(format!(
                    "{} was recorded by that checkpoint but this session does not hold it now \
                     (it is no longer granted, or was not there as the session started): left \
                     as it is",
                    rec.host
                ));
            }
        }
        drop(mounts);
        done.after = self.take()?.0;
        Ok(done)
    }

    /// How many paths changed between checkpoints `from` and `to`, every mount.
    pub fn changed(&self, from: &str, to: &str) -> Result<usize, String> {
        let (a, b) = (self.record(from)?, self.record(to)?);
        let mut n = 0;
        for m in &b.mounts {
            if let (Some(x), Some(y)) = (a.tree_of(&m.host), Hash::parse(&m.tree)) {
                n += paddock_checkpoint::diff::changes(&self.store, &x, &y)
                    .map_err(|e| e.to_string())?
                    .len();
            }
        }
        Ok(n)
    }

    /// The unified diff of what changed between checkpoints `from` and `to`, every mount.
    pub fn diff(&self, from: &str, to: &str) -> Result<Diff, String> {
        let (a, b) = (self.record(from)?, self.record(to)?);
        let mut out = Diff {
            notes: self.left_out.clone(),
            ..Diff::default()
        };
        for m in &b.mounts {
            let (Some(x), Some(y)) = (a.tree_of(&m.host), Hash::parse(&m.tree)) else {
                continue;
            };
            let changes = paddock_checkpoint::diff::changes(&self.store, &x, &y).map_err(|e| e.to_string())?;
            // A grant's paths are written in full: they are not the project's, and a patch
            // tool applying the diff in the project must not take them for its files.
            let host = Path::new(&m.host);
            let naming = match m.kind {
                RootKind::Mount => paddock_checkpoint::diff::Naming::Relative,
                RootKind::Grant => paddock_checkpoint::diff::Naming::Under(host),
            };
            out.text.push_str(
                &paddock_checkpoint::diff::unified(&self.store, &changes, naming).map_err(|e| e.to_string())?,
            );
            if !m.excluded.is_empty() {
                out.excluded.push((m.host.clone(), m.excluded.clone()));
            }
        }
        Ok(out)
    }
}

/// What a session (or a turn) changed: the unified diff, and what the checkpoints leave out
/// (so the diff cannot show), by mount: `(path, why)`, and whole (`notes`: exec write grants
/// not recorded, and why).
#[derive(Debug, Clone, Default)]
pub struct Diff {
    pub text: String,
    pub excluded: Vec<(String, Vec<(String, String)>)>,
    pub notes: Vec<String>,
}

/// The checkpoint taken as turn `turn` began, from the log's `checkpoint` events: the latest,
/// since a turn run again after a conversation rewind is the one the conversation holds.
pub fn at_turn_start(checkpoints: &[(u64, bool, String)], turn: u64) -> Option<&str> {
    checkpoints
        .iter()
        .rev()
        .find(|(t, ended, _)| *t == turn && !ended)
        .map(|(_, _, id)| id.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(max_files: u64, max_total_bytes: u64, exclude_vcs_ignored: bool) -> CheckpointPolicy {
        CheckpointPolicy {
            max_files,
            max_total_bytes,
            exclude_vcs_ignored,
            ..CheckpointPolicy::default()
        }
    }

    #[test]
    fn a_mount_past_the_first_walk_bounds_is_named_and_one_within_them_is_not() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..10 {
            std::fs::write(dir.path().join(format!("f{i}")), [0u8; 100]).unwrap();
        }
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!(".git/o{i}")), "x").unwrap();
        }
        assert_eq!(too_big(dir.path(), &bounds(10, 1_000, false)), None, "the git directory is not counted");
        let why = too_big(dir.path(), &bounds(9, 1_000_000, false)).expect("over the entry bound");
        assert!(why.contains("max_files") && why.contains("exclude_vcs_ignored"), "{why}");
        assert!(too_big(dir.path(), &bounds(100, 999, false)).is_some(), "over the byte bound");
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("node_modules/m{i}")), "x").unwrap();
        }
        std::fs::write(dir.path().join(".gitignore"), "node_modules/\n").unwrap();
        assert!(too_big(dir.path(), &bounds(20, 1_000_000, false)).is_some());
        assert_eq!(
            too_big(dir.path(), &bounds(20, 1_000_000, true)),
            None,
            "what git ignores is not counted when the preset leaves it out"
        );
    }
}
