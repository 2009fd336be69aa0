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
//! what a session recorded applied to the lock as it is then (`Recorded`, `LockPlace::update`).
//! Map: this file the lock's contents and what changes them, `pin` the per-tool hashes and
//! their diff, `place` where the file is and how it is read and written.

pub mod pin;
mod place;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use pin::{ToolChange, ToolPin};
pub use place::LockPlace;

use super::{Installed, Origin};
use paddock_sandbox::World;
use paddock_types::contract::ToolSpec;

/// The file's name, in `.paddock/` or the data directory.
pub const LOCK_FILE: &str = "paddock.lock";
/// The largest lock read: thousands of entries fit in far less.
pub const MAX_LOCK_BYTES: u64 = 4 << 20;
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
    /// A tool plugin or a hook (`tools`, `hook`).
    pub kind: World,
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
    /// The entry for installed plugin `record` as it is now: its bytes, as loaded, hash to
    /// `sha256` (what install wrote in the record may be older: the bytes are what count),
    /// and its component describes `tools`. No grants yet. The one way an entry is made, by a
    /// session's first use and by `paddock lock accept` alike.
    pub fn of(record: &Installed, sha256: &str, tools: &[ToolSpec]) -> PluginLock {
        PluginLock {
            installed_from: record.installed_from.clone(),
            sha256: sha256.to_string(),
            size: record.size,
            kind: record.kind,
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
    paddock_types::stamp::sha256_hex(pin::canonical_json(&value).as_bytes())
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

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn entry() -> PluginLock {
        PluginLock {
            installed_from: "oci://127.0.0.1:5000/plugins/fs:1.0".into(),
            sha256: "ab".repeat(32),
            size: 12,
            kind: World::Tools,
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
    fn differences_name_the_bytes_and_each_changed_tool() {
        let spec = ToolSpec {
            name: "read_file".into(),
            description: "Read.".into(),
            parameters: serde_json::json!({"type": "object"}),
            examples: Vec::new(),
            meta: paddock_types::contract::RuntimeMeta::default(),
        };
        let record = Installed {
            name: "fs".into(),
            kind: World::Tools,
            sha256: "aa".repeat(32),
            size: 3,
            installed_from: "x.wasm".into(),
            tools: vec!["read_file".into()],
            imports: Vec::new(),
            origin: None,
        };
        let locked = PluginLock::of(&record, &record.sha256, std::slice::from_ref(&spec));
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
}
