//! A tree stored as its differences from another: the entries set (added or changed) and the
//! names removed, against a base tree named by its hash. A checkpoint that changed one file
//! of a 1,000-entry directory then stores one line for that directory, not its 1,000.
//!
//! A delta is only how a tree is kept on disk: the object is still named by the hash of the
//! tree's full encoding (`Tree::encode`), so an unchanged subtree keeps its name whatever the
//! form it was stored in, and every read rebuilds the whole tree and checks it against that
//! name (the store does). Chains are short: a delta's base is at most `MAX_CHAIN - 1` deltas
//! deep, so a read opens at most `MAX_CHAIN + 1` objects (a longer chain is damage); past
//! that the store makes the next delta from the chain's whole tree.
//!
//! `decode` trusts nothing: names are checked as a tree's are (`tree::entry`), both lists
//! must be sorted and unique, and a name may not be both set and removed.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::hash::Hash;
use crate::tree::{self, Tree, TreeEntry};

const HEADER: &str = "paddock-tree-delta 1\n";

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

/// Whether stored bytes are a delta (else they are a full tree, or damage).
pub fn is_delta(bytes: &[u8]) -> bool {
    bytes.starts_with(HEADER.as_bytes())
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
        let mut out = String::with_capacity(HEADER.len() + 80 + self.set.len() * 100);
        out.push_str(HEADER);
        out.push_str(&format!("base {}\n", self.base));
        for e in &self.set {
            tree::encode_entry(e, &mut out);
        }
        for name in &self.removed {
            out.push_str("- ");
            tree::push_hex(name.as_bytes(), &mut out);
            out.push('\n');
        }
        out.into_bytes()
    }

    /// Reads a stored delta, refusing anything `encode` would not have written.
    pub fn decode(bytes: &[u8]) -> Result<Delta, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "a tree delta is not text")?;
        let body = text
            .strip_prefix(HEADER)
            .ok_or("a tree delta does not start with its header")?;
        let mut lines = body.lines();
        let base = lines
            .next()
            .and_then(|l| l.strip_prefix("base "))
            .and_then(Hash::parse)
            .ok_or("a tree delta does not name its base")?;
        let mut set: Vec<TreeEntry> = Vec::new();
        let mut removed: Vec<OsString> = Vec::new();
        for line in lines {
            if let Some(hex) = line.strip_prefix("- ") {
                let name = tree::unhex(hex)
                    .filter(|n| tree::is_plain_name(n))
                    .ok_or_else(|| format!("a tree delta removes a bad name: {line:?}"))?;
                if removed.last().is_some_and(|l| l.as_bytes() >= &name[..]) {
                    return Err(format!("a tree delta's removals are not sorted: {line:?}"));
                }
                removed.push(OsString::from_vec(name));
            } else {
                let entry = tree::entry(line)
                    .ok_or_else(|| format!("a tree delta has a bad line: {line:?}"))?;
                if !removed.is_empty() {
                    return Err("a tree delta sets an entry after its removals".into());
                }
                if set
                    .last()
                    .is_some_and(|l| l.name.as_bytes() >= entry.name.as_bytes())
                {
                    return Err(format!("a tree delta's entries are not sorted: {line:?}"));
                }
                set.push(entry);
            }
        }
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
        let good = String::from_utf8(
            Delta {
                base: Hash::of(b"x"),
                set: vec![e("b", "2")],
                removed: vec!["a".into()],
            }
            .encode(),
        )
        .unwrap();
        let parent = good.replace(&format!("- {}", hex("a")), &format!("- {}", hex("..")));
        let both = good.replace(&format!("- {}", hex("a")), &format!("- {}", hex("b")));
        let setuid = good.replace(" 644 ", " 4755 ");
        for bad in [parent, both, setuid, good.replace("base ", "bass ")] {
            assert!(Delta::decode(bad.as_bytes()).is_err(), "accepted {bad}");
        }
        let gone = Delta {
            base: Hash::of(b"x"),
            set: vec![],
            removed: vec!["z".into()],
        };
        assert!(gone.apply(base).is_err());
    }

    fn hex(name: &str) -> String {
        let mut out = String::new();
        tree::push_hex(name.as_bytes(), &mut out);
        out
    }
}
