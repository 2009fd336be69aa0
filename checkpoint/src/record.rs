//! A checkpoint record: the tree of every recorded root at one moment (the session's writable
//! mounts and its programs' `write` grants outside them), stored as an object like the rest,
//! so its id is the hash of what it says.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::hash::Hash;
use crate::store::Store;

/// What a recorded root is to the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RootKind {
    /// A writable mount of a plugin or an MCP server (records an older paddock wrote hold
    /// only these, and say nothing of the kind).
    #[default]
    Mount,
    /// A directory an exec grant lets programs write (`grants.exec.write`), outside the
    /// mounts.
    Grant,
}

impl RootKind {
    fn is_mount(&self) -> bool {
        *self == RootKind::Mount
    }
}

/// One recorded root in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountRecord {
    /// The root's host directory, as the session opened it.
    pub host: String,
    #[serde(default, skip_serializing_if = "RootKind::is_mount")]
    pub kind: RootKind,
    /// Its tree's hash.
    pub tree: String,
    /// Paths left out, with why (`Exclusion::describe`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<(String, String)>,
}

/// What one checkpoint holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub mounts: Vec<MountRecord>,
}

impl Record {
    /// Stores the record; its id is its hash.
    pub fn save(&self, store: &Store) -> Result<Hash, Error> {
        let bytes = serde_json::to_vec(self).expect("a record serializes");
        Ok(store.put(&bytes)?.0)
    }

    /// The record stored as `id`, verified.
    pub fn load(store: &Store, id: &Hash) -> Result<Record, Error> {
        let bytes = store.get(id)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Damaged {
            dir: store.dir().to_path_buf(),
            hash: *id,
            why: format!("not a checkpoint record: {e}"),
        })
    }

    /// The tree of the mount at `host`.
    pub fn tree_of(&self, host: &str) -> Option<Hash> {
        self.mounts
            .iter()
            .find(|m| m.host == host)
            .and_then(|m| Hash::parse(&m.tree))
    }
}
