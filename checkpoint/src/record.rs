//! A checkpoint record: the tree of every recorded mount at one moment, stored as an object
//! like the rest, so its id is the hash of what it says.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::hash::Hash;
use crate::store::Store;

/// One mount in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountRecord {
    /// The mount's host directory, as the session opened it.
    pub host: String,
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
