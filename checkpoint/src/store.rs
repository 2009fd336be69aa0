//! The checkpoint store: content-addressed objects (file bytes, symlink targets, trees,
//! checkpoint records) in paddock's data directory, each named by its SHA-256 and written once.
//! Storing what is already there costs one `stat`, so unchanged files cost nothing; every
//! read is verified against its name, so a damaged or tampered object is an error, never
//! restored.
//!
//! Objects are written to a temporary name and renamed into place (a crash leaves no half
//! object under a real name); `sync` makes every object written so far durable in one
//! `syncfs`, before the log names the checkpoint.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::hash::Hash;
use crate::delta::{self, Delta, MAX_CHAIN};
use crate::tree::Tree;

/// A store of objects under one directory.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    temp: AtomicU64,
}

/// What a `put` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// The object was new: this many bytes were written.
    Written(u64),
    /// It was already stored.
    Shared,
}

impl Store {
    /// The store at `dir` (created, private to the user, when missing).
    pub fn open(dir: &Path) -> Result<Store, Error> {
        let objects = dir.join("objects");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&objects)
            .map_err(|source| Error::Store {
                dir: dir.to_path_buf(),
                source,
            })?;
        Ok(Store {
            dir: dir.to_path_buf(),
            temp: AtomicU64::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, hash: &Hash) -> PathBuf {
        let hex = hash.to_string();
        self.dir.join("objects").join(&hex[..2]).join(&hex[2..])
    }

    fn io(&self, source: std::io::Error) -> Error {
        Error::Store {
            dir: self.dir.clone(),
            source,
        }
    }

    /// Stores `bytes` under their hash, unless already there.
    pub fn put(&self, bytes: &[u8]) -> Result<(Hash, Put), Error> {
        let hash = Hash::of(bytes);
        if self.path(&hash).exists() {
            return Ok((hash, Put::Shared));
        }
        self.write(&hash, bytes)
    }

    /// Stores `tree` under the hash of its full encoding, unless already there: as a delta
    /// from `base` (the tree the same directory had at the last checkpoint) when that is
    /// less than half the size and the chain stays short, else whole.
    pub fn put_tree(&self, tree: &Tree, base: Option<Hash>) -> Result<(Hash, Put), Error> {
        let full = tree.encode();
        let hash = Hash::of(&full);
        if self.path(&hash).exists() {
            return Ok((hash, Put::Shared));
        }
        let delta = base.and_then(|base| {
            // A base that cannot be read (pruned, damaged) only means a whole tree.
            let (old, depth) = self.load_tree(&base, 0).ok()?;
            if depth + 1 >= MAX_CHAIN {
                return None;
            }
            let bytes = Delta::between(base, &old, tree).encode();
            (bytes.len() * 2 < full.len()).then_some(bytes)
        });
        self.write(&hash, delta.as_deref().unwrap_or(&full))
    }

    /// Writes `bytes` as the object `hash`.
    fn write(&self, hash: &Hash, bytes: &[u8]) -> Result<(Hash, Put), Error> {
        let path = self.path(hash);
        let parent = path.parent().unwrap_or(&self.dir);
        match std::fs::create_dir(parent) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(self.io(e)),
        }
        let temp = parent.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            self.temp.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut f| f.write_all(bytes))
            .and_then(|()| std::fs::rename(&temp, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(self.io(e));
        }
        Ok((*hash, Put::Written(bytes.len() as u64)))
    }

    /// The bytes of the object `hash`, as stored (not verified).
    fn read(&self, hash: &Hash) -> Result<Vec<u8>, Error> {
        match std::fs::read(self.path(hash)) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Missing {
                dir: self.dir.clone(),
                hash: *hash,
            }),
            Err(e) => Err(self.io(e)),
        }
    }

    /// The bytes stored under `hash`, verified.
    pub fn get(&self, hash: &Hash) -> Result<Vec<u8>, Error> {
        let bytes = self.read(hash)?;
        let actual = Hash::of(&bytes);
        if actual != *hash {
            return Err(Error::Damaged {
                dir: self.dir.clone(),
                hash: *hash,
                why: format!("its bytes hash to {actual}"),
            });
        }
        Ok(bytes)
    }

    /// The tree stored under `hash`, rebuilt from its deltas if stored so, verified against
    /// its name and checked (`Tree::decode`, `Delta::decode`).
    pub fn tree(&self, hash: &Hash) -> Result<Tree, Error> {
        self.load_tree(hash, 0).map(|(tree, _)| tree)
    }

    /// The tree `hash` and how many deltas it was rebuilt through; `hops` deltas were
    /// followed to reach it.
    fn load_tree(&self, hash: &Hash, hops: u32) -> Result<(Tree, u32), Error> {
        let damaged = |why: String| Error::Damaged {
            dir: self.dir.clone(),
            hash: *hash,
            why,
        };
        let bytes = self.read(hash)?;
        if Hash::of(&bytes) == *hash {
            return Tree::decode(&bytes).map(|t| (t, 0)).map_err(damaged);
        }
        if !delta::is_delta(&bytes) {
            return Err(damaged(format!("its bytes hash to {}", Hash::of(&bytes))));
        }
        if hops >= MAX_CHAIN {
            return Err(damaged(format!(
                "it is more than {MAX_CHAIN} tree deltas from a whole tree"
            )));
        }
        let delta = Delta::decode(&bytes).map_err(damaged)?;
        let (base, depth) = self.load_tree(&delta.base, hops + 1)?;
        let tree = delta.apply(base).map_err(damaged)?;
        let rebuilt = Hash::of(&tree.encode());
        if rebuilt != *hash {
            return Err(damaged(format!("its delta rebuilds a tree that hashes to {rebuilt}")));
        }
        Ok((tree, depth + 1))
    }

    /// Makes every object written so far durable (one `syncfs` of the store's filesystem).
    pub fn sync(&self) -> Result<(), Error> {
        let dir = std::fs::File::open(&self.dir).map_err(|e| self.io(e))?;
        rustix::fs::syncfs(&dir).map_err(|e| self.io(e.into()))
    }

    /// Bytes held by all objects (for the bench and `paddock doctor`-style reports).
    pub fn bytes_used(&self) -> u64 {
        let mut total = 0;
        let Ok(fans) = std::fs::read_dir(self.dir.join("objects")) else {
            return 0;
        };
        for fan in fans.flatten() {
            for object in std::fs::read_dir(fan.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                total += object.metadata().map_or(0, |m| m.len());
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_stored_once_and_a_tampered_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (h, put) = store.put(b"hello").unwrap();
        assert_eq!(put, Put::Written(5));
        assert_eq!(store.put(b"hello").unwrap(), (h, Put::Shared));
        assert_eq!(store.get(&h).unwrap(), b"hello");
        std::fs::write(store.path(&h), b"jello").unwrap();
        let err = store.get(&h).unwrap_err().to_string();
        assert!(err.contains("damaged"), "{err}");
        let missing = store.get(&Hash::of(b"never")).unwrap_err().to_string();
        assert!(missing.contains("missing"), "{missing}");
    }
}
