//! A tree stored as its differences from another: the entries set (added or changed) and the
//! names removed, against a base tree named by its hash. A checkpoint that changed one file
//! of a 1,000-entry directory then stores one entry for that directory, not its 1,000.
//!
//! A delta is only how a tree is kept on disk: the object is still named by the hash of the
//! tree's full encoding (`Tree::encode`; a delta an older paddock wrote, of its text), so an unchanged subtree keeps its name whatever the
//! form it was stored in, and every read rebuilds the whole tree and checks it against that
//! name (the store does). Chains are short: a delta's base is at most `MAX_CHAIN - 1` deltas
//! deep, so a read opens at most `MAX_CHAIN + 1` objects (a longer chain is damage); past
//! that the store makes the next delta from the chain's whole tree.
//!
//! The stored form is binary, as a tree's (`tree`): a 4-byte header, the base's 32 bytes,
//! the number of entries set (a varint), those entries, then the names removed, each its
//! length and bytes. (Deltas an older paddock wrote as text are read by `legacy`, and checked
//! against the text form of the tree they rebuild.)
//!
//! `decode` trusts nothing: names are checked as a tree's are (`tree::Reader`), both lists
//! must be sorted and unique, a name may not be both set and removed, and nothing may follow
//! the last name.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use crate::hash::Hash;
use crate::tree::{self, Reader, Tree, TreeEntry};

const MAGIC: &[u8; 4] = b"\0pd2";

/// The most deltas between a stored tree and the full tree it is rebuilt from.
pub const MAX_CHAIN: u32 = 16;

/// A tree as changes to `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    pub base: Hash,
    /// Entries new or changed since the base, sorted by name.
    pub set: Vec<TreeEntry>,
    /// Names the base has and the tree has not, sorted.
    pub removed: Vec<OsString>,
}

/// Whether stored bytes are a delta (else they are a full tree, an older delta, or damage).
pub fn is_delta(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl Delta {
    /// What turns `base` (stored as `base_hash`) into `tree`; both sorted by name.
    pub fn between(base_hash: Hash, base: &Tree, tree: &Tree) -> Delta {
        let mut set = Vec::new();
        let mut removed = Vec::new();
        let (mut old, mut new) = (
            base.entries.iter().peekable(),
            tree.entries.iter().peekable(),
        );
        loop {
            match (old.peek(), new.peek()) {
                (None, None) => break,
                (Some(o), None) => {
                    removed.push(o.name.clone());
                    old.next();
                }
                (None, Some(n)) => {
                    set.push((*n).clone());
                    new.next();
                }
                (Some(o), Some(n)) => match o.name.as_bytes().cmp(n.name.as_bytes()) {
                    std::cmp::Ordering::Less => {
                        removed.push(o.name.clone());
                        old.next();
                    }
                    std::cmp::Ordering::Greater => {
                        set.push((*n).clone());
                        new.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if o != n {
                            set.push((*n).clone());
                        }
                        old.next();
                        new.next();
                    }
                },
            }
        }
        Delta {
            base: base_hash,
            set,
            removed,
        }
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + 40 + self.set.len() * 48);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.base.0);
        tree::put_varint(self.set.len() as u64, &mut out);
        for e in &self.set {
            tree::put_entry(e, &mut out);
        }
        for name in &self.removed {
            tree::put_name(name.as_bytes(), &mut out);
        }
        out
    }

    /// Reads a stored delta, refusing anything `encode` would not have written.
    pub fn decode(bytes: &[u8]) -> Result<Delta, String> {
        let body = bytes
            .strip_prefix(MAGIC)
            .ok_or("a tree delta does not start with its header")?;
        let mut reader = Reader(body);
        let base = reader.hash().ok_or("a tree delta does not name its base")?;
        let count = reader.varint().ok_or("a tree delta has a bad count")?;
        let mut set: Vec<TreeEntry> = Vec::new();
        for i in 0..count {
            let entry = reader
                .entry()
                .ok_or_else(|| format!("a tree delta has a bad entry after {i} good"))?;
            tree::push_sorted(&mut set, entry, "a tree delta")?;
        }
        let mut removed: Vec<OsString> = Vec::new();
        while !reader.is_empty() {
            let name = reader.name().ok_or("a tree delta removes a bad name")?;
            if removed
                .last()
                .is_some_and(|l| l.as_bytes() >= name.as_bytes())
            {
                return Err(format!("a tree delta's removals are not sorted: {name:?}"));
            }
            removed.push(name);
        }
        Delta::checked(base, set, removed)
    }

    /// A decoded delta, refused when it both sets and removes one name.
    pub(crate) fn checked(
        base: Hash,
        set: Vec<TreeEntry>,
        removed: Vec<OsString>,
    ) -> Result<Delta, String> {
        if removed.iter().any(|r| {
            set.binary_search_by(|e| e.name.as_bytes().cmp(r.as_bytes()))
                .is_ok()
        }) {
            return Err("a tree delta both sets and removes one name".into());
        }
        Ok(Delta { base, set, removed })
    }

    /// The tree this delta makes of `base`. A removal of a name the base lacks is damage.
    pub fn apply(&self, base: Tree) -> Result<Tree, String> {
        let mut entries: std::collections::BTreeMap<Vec<u8>, TreeEntry> = base
            .entries
            .into_iter()
            .map(|e| (e.name.as_bytes().to_vec(), e))
            .collect();
        for name in &self.removed {
            if entries.remove(name.as_bytes()).is_none() {
                return Err(format!(
                    "a tree delta removes {name:?}, which its base does not have"
                ));
            }
        }
        for e in &self.set {
            entries.insert(e.name.as_bytes().to_vec(), e.clone());
        }
        Ok(Tree {
            entries: entries.into_values().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::Kind;

    fn e(name: &str, content: &str) -> TreeEntry {
        TreeEntry {
            name: name.into(),
            kind: Kind::File,
            mode: 0o644,
            hash: Hash::of(content.as_bytes()),
        }
    }

    #[test]
    fn a_delta_rebuilds_the_tree_it_was_made_for() {
        let base = Tree {
            entries: vec![e("a", "1"), e("b", "2"), e("c", "3"), e("e", "5")],
        };
        let tree = Tree {
            entries: vec![e("a", "1"), e("b", "two"), e("d", "4"), e("e", "5")],
        };
        let delta = Delta::between(Hash::of(&base.encode()), &base, &tree);
        assert_eq!(delta.set, vec![e("b", "two"), e("d", "4")]);
        assert_eq!(delta.removed, vec![OsString::from("c")]);
        let read = Delta::decode(&delta.encode()).unwrap();
        assert_eq!(read, delta);
        assert_eq!(read.apply(base).unwrap(), tree);
    }

    #[test]
    fn a_tampered_delta_is_refused() {
        let base = Tree {
            entries: vec![e("a", "1")],
        };
        let good = Delta {
            base: Hash::of(b"x"),
            set: vec![e("b", "2")],
            removed: vec!["a".into()],
        }
        .encode();
        assert!(Delta::decode(&good).is_ok());
        let end = good.len();
        // The removed name (its last byte) made `..`'s second half, or the name set.
        let mut parent = good[..end - 2].to_vec();
        parent.extend_from_slice(&[2, b'.', b'.']);
        let mut both = good.clone();
        both[end - 1] = b'b';
        // The entry's mode byte given a set-id bit; the base cut short; a byte after the end.
        let mut setuid = good.clone();
        setuid[4 + 32 + 1 + 1] |= 0x08;
        let cut = good[..20].to_vec();
        let mut trailing = good.clone();
        trailing.push(0);
        let mut miscounted = good.clone();
        miscounted[4 + 32] = 2;
        for bad in [parent, both, setuid, cut, trailing, miscounted] {
            assert!(Delta::decode(&bad).is_err(), "accepted {bad:?}");
        }
        let gone = Delta {
            base: Hash::of(b"x"),
            set: vec![],
            removed: vec!["z".into()],
        };
        assert!(gone.apply(base).is_err());
    }
}
