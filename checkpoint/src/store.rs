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
        let path = self.path(&hash);
        if path.exists() {
            return Ok((hash, Put::Shared));
        }
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
        Ok((hash, Put::Written(bytes.len() as u64)))
    }

    /// The bytes stored under `hash`, verified.
    pub fn get(&self, hash: &Hash) -> Result<Vec<u8>, Error> {
        let bytes = match std::fs::read(self.path(hash)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::Missing {
                    dir: self.dir.clone(),
                    hash: *hash,
                });
            }
            Err(e) => return Err(self.io(e)),
        };
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

    /// The tree stored under `hash`, verified and checked (`Tree::decode`).
    pub fn tree(&self, hash: &Hash) -> Result<Tree, Error> {
        let bytes = self.get(hash)?;
        Tree::decode(&bytes).map_err(|why| Error::Damaged {
            dir: self.dir.clone(),
            hash: *hash,
            why,
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
