//! The checkpoint store: content-addressed objects (file bytes, symlink targets, trees,
//! checkpoint records) in paddock's data directory, each named by its SHA-256 and written once.
//! Storing what is already there costs one `stat`, so unchanged files cost nothing; every
//! read is verified against its name, so a damaged or tampered object is an error, never
//! restored.
//!
//! Objects are written to a temporary name and renamed into place (a crash leaves no half
//! object under a real name); `sync` makes every object written so far durable in one
//! `syncfs`, before the log names the checkpoint.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::delta::{Delta, MAX_CHAIN};
use crate::error::Error;
use crate::hash::Hash;
use crate::legacy;
use crate::tree::Tree;

/// A store of objects under one directory.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    temp: AtomicU64,
    /// Trees this process wrote lately: the next checkpoint's deltas are made from them
    /// without reading their chains again.
    recent: Mutex<HashMap<Hash, Stored>>,
}

/// A tree as the store holds it: how many deltas it is from a whole tree, and which whole
/// tree (itself, when stored whole).
#[derive(Debug, Clone)]
struct Stored {
    tree: Tree,
    depth: u32,
    whole: Hash,
}

/// The most trees `recent` holds; it starts again empty when full.
const RECENT_TREES: usize = 4096;

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
            recent: Mutex::new(HashMap::new()),
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
    /// less than half the size, else whole. When `base`'s chain is as long as chains get, the
    /// delta is made from the whole tree that chain starts from instead (it holds every
    /// change since, and is stored whole once those pass half the size).
    pub fn put_tree(&self, tree: &Tree, base: Option<Hash>) -> Result<(Hash, Put), Error> {
        let full = tree.encode();
        let hash = Hash::of(&full);
        if self.path(&hash).exists() {
            return Ok((hash, Put::Shared));
        }
        let delta = base.and_then(|base| {
            let cached = self.recent().remove(&base);
            // A base that cannot be read (pruned, damaged) only means a whole tree.
            let old = match cached {
                Some(hit) => hit,
                None => self.load_tree(&base, 0).ok()?,
            };
            let (from, old) = if old.depth + 1 < MAX_CHAIN {
                (base, old)
            } else {
                (old.whole, self.load_tree(&old.whole, 0).ok()?)
            };
            let bytes = Delta::between(from, &old.tree, tree).encode();
            let stored = Stored {
                tree: tree.clone(),
                depth: old.depth + 1,
                whole: old.whole,
            };
            (bytes.len() * 2 < full.len()).then_some((bytes, stored))
        });
        let (bytes, stored) = delta.unwrap_or_else(|| {
            let whole = Stored {
                tree: tree.clone(),
                depth: 0,
                whole: hash,
            };
            (full, whole)
        });
        let put = self.write(&hash, &bytes)?;
        let mut recent = self.recent();
        if recent.len() >= RECENT_TREES {
            recent.clear();
        }
        recent.insert(hash, stored);
        Ok(put)
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, HashMap<Hash, Stored>> {
        self.recent.lock().unwrap_or_else(|e| e.into_inner())
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
    /// its name and checked (`legacy::read_tree`, `legacy::read_delta`: either encoding).
    pub fn tree(&self, hash: &Hash) -> Result<Tree, Error> {
        self.load_tree(hash, 0).map(|stored| stored.tree)
    }

    /// The tree `hash`, rebuilt through its deltas; `hops` deltas were followed to reach it.
    fn load_tree(&self, hash: &Hash, hops: u32) -> Result<Stored, Error> {
        let damaged = |why: String| Error::Damaged {
            dir: self.dir.clone(),
            hash: *hash,
            why,
        };
        let bytes = self.read(hash)?;
        if Hash::of(&bytes) == *hash {
            let tree = legacy::read_tree(&bytes).map_err(damaged)?;
            return Ok(Stored {
                tree,
                depth: 0,
                whole: *hash,
            });
        }
        if !legacy::is_delta(&bytes) {
            return Err(damaged(format!("its bytes hash to {}", Hash::of(&bytes))));
        }
        if hops >= MAX_CHAIN {
            return Err(damaged(format!(
                "it is more than {MAX_CHAIN} tree deltas from a whole tree"
            )));
        }
        let (delta, format) = legacy::read_delta(&bytes).map_err(damaged)?;
        let base = self.load_tree(&delta.base, hops + 1)?;
        let tree = delta.apply(base.tree).map_err(damaged)?;
        let rebuilt = Hash::of(&legacy::encode_as(&tree, format));
        if rebuilt != *hash {
            return Err(damaged(format!(
                "its delta rebuilds a tree that hashes to {rebuilt}"
            )));
        }
        Ok(Stored {
            tree,
            depth: base.depth + 1,
            whole: base.whole,
        })
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
    use crate::tree::{Kind, TreeEntry};

    #[test]
    fn trees_changed_checkpoint_after_checkpoint_are_stored_as_small_deltas_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let entry = |i: usize, v: usize| TreeEntry {
            name: format!("file{i:03}").into(),
            kind: Kind::File,
            mode: 0o644,
            hash: Hash::of(format!("{i} {v}").as_bytes()),
        };
        let mut tree = Tree {
            entries: (0..100).map(|i| entry(i, 0)).collect(),
        };
        let (mut last, _) = store.put_tree(&tree, None).unwrap();
        let whole = tree.encode().len() as u64;
        let mut written = Vec::new();
        for round in 1..=3 * MAX_CHAIN as usize {
            tree.entries[round % 100] = entry(round % 100, round);
            let (hash, put) = store.put_tree(&tree, Some(last)).unwrap();
            let Put::Written(n) = put else {
                panic!("round {round}: a changed tree is new")
            };
            written.push(n);
            assert_eq!(hash, Hash::of(&tree.encode()));
            last = hash;
        }
        // Past the chain's length the delta from the whole tree holds every change since:
        // larger, but still no whole tree written again, and most stay one line.
        let mut sorted = written.clone();
        sorted.sort_unstable();
        assert!(
            written.iter().all(|n| n * 2 < whole) && sorted[sorted.len() / 2] * 20 < whole,
            "one-entry changes are stored small, past the chain's length too: {written:?} \
             (whole: {whole})"
        );
        // Read back from disk, as a later process would.
        let fresh = Store::open(dir.path()).unwrap();
        assert_eq!(fresh.tree(&last).unwrap(), tree);
    }

    /// A store an older paddock wrote (text trees, text deltas) still reads: a whole text
    /// tree by the hash of its text, a text delta rebuilt and checked against the text of the
    /// tree it makes; a new delta can be made on an old tree; a tampered old delta is refused.
    #[test]
    fn trees_an_older_paddock_stored_as_text_are_still_read_and_checked() {
        use crate::delta::Delta;
        use crate::legacy;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let entry = |name: &str, v: &str| TreeEntry {
            name: name.into(),
            kind: Kind::File,
            mode: 0o644,
            hash: Hash::of(v.as_bytes()),
        };
        let old = Tree {
            entries: (0..50).map(|i| entry(&format!("f{i:02}"), "0")).collect(),
        };
        let old_text = legacy::encode_tree(&old);
        let (old_hash, _) = store.put(&old_text).unwrap();
        assert_eq!(store.tree(&old_hash).unwrap(), old);

        let mut next = old.clone();
        next.entries[3] = entry("f03", "changed");
        let delta = Delta::between(old_hash, &old, &next);
        let next_hash = Hash::of(&legacy::encode_tree(&next));
        store
            .write(&next_hash, &legacy::encode_delta(&delta))
            .unwrap();
        assert_eq!(
            Store::open(dir.path()).unwrap().tree(&next_hash).unwrap(),
            next
        );

        let mut newest = next.clone();
        newest.entries[4] = entry("f04", "changed");
        let (newest_hash, put) = store.put_tree(&newest, Some(next_hash)).unwrap();
        let Put::Written(n) = put else {
            panic!("a new tree")
        };
        assert!(
            n < 100,
            "stored as a binary delta on the old tree: {n} bytes"
        );
        assert_eq!(
            Store::open(dir.path()).unwrap().tree(&newest_hash).unwrap(),
            newest
        );

        let text = String::from_utf8(legacy::encode_delta(&delta)).unwrap();
        let evil = text.replace(
            &Hash::of(b"changed").to_string(),
            &Hash::of(b"evil").to_string(),
        );
        store.write(&next_hash, evil.as_bytes()).unwrap();
        let err = Store::open(dir.path())
            .unwrap()
            .tree(&next_hash)
            .unwrap_err()
            .to_string();
        assert!(err.contains("damaged"), "{err}");
    }

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
