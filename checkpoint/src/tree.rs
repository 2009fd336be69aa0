//! Tree objects: one directory of a checkpoint, as the names it holds and, for each, its kind,
//! mode and the hash of its content (a file's bytes, a symlink's target, a directory's tree).
//! Like git's trees they make a Merkle tree: an unchanged subtree keeps its hash and is shared
//! by every checkpoint that has it, so a checkpoint that changed ten files writes only the
//! trees on their paths.
//!
//! The encoding is text, one entry a line, names in hex (a name may be any bytes but `/` and
//! NUL). `decode` trusts nothing: a store can be tampered with, so every name is checked to be
//! one plain component (no `.`, `..`, `/`, NUL, nothing empty) and the entries to be sorted
//! and unique before anything walks or restores them.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::hash::Hash;

const HEADER: &str = "paddock-tree 1\n";

/// What an entry is. Nothing else (devices, FIFOs, sockets) is ever recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::File => 'f',
            Kind::Dir => 'd',
            Kind::Link => 'l',
        }
    }
}

/// One name in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    pub name: OsString,
    pub kind: Kind,
    /// Permission bits only (`0o777`): set-id and sticky bits are never recorded or restored.
    pub mode: u32,
    /// The file's bytes, the symlink's target or the directory's tree.
    pub hash: Hash,
}

/// One directory, its entries sorted by name (bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    pub entries: Vec<TreeEntry>,
}

impl Tree {
    /// The stored form. Entries must already be sorted by name.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::with_capacity(HEADER.len() + self.entries.len() * 100);
        out.push_str(HEADER);
        for e in &self.entries {
            encode_entry(e, &mut out);
        }
        out.into_bytes()
    }

    /// Reads a stored tree, refusing anything `encode` would not have written.
    pub fn decode(bytes: &[u8]) -> Result<Tree, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "a tree is not text".to_string())?;
        let body = text
            .strip_prefix(HEADER)
            .ok_or("a tree does not start with its header")?;
        let mut entries: Vec<TreeEntry> = Vec::new();
        for line in body.lines() {
            let entry = entry(line).ok_or_else(|| format!("a tree has a bad line: {line:?}"))?;
            if let Some(last) = entries.last()
                && last.name.as_bytes() >= entry.name.as_bytes()
            {
                return Err(format!(
                    "a tree's names are not sorted or repeat one: {:?}",
                    entry.name
                ));
            }
            entries.push(entry);
        }
        Ok(Tree { entries })
    }

    /// The entry named `name`.
    pub fn get(&self, name: &OsStr) -> Option<&TreeEntry> {
        self.entries
            .binary_search_by(|e| e.name.as_bytes().cmp(name.as_bytes()))
            .ok()
            .map(|i| &self.entries[i])
    }
}

/// One entry as its line (`KIND MODE HASH HEXNAME`, newline included).
pub(crate) fn encode_entry(e: &TreeEntry, out: &mut String) {
    out.push(e.kind.letter());
    out.push_str(&format!(" {:03o} {} ", e.mode & 0o777, e.hash));
    push_hex(e.name.as_bytes(), out);
    out.push('\n');
}

/// A name as hex, as entries write it.
pub(crate) fn push_hex(name: &[u8], out: &mut String) {
    for b in name {
        out.push_str(&format!("{b:02x}"));
    }
}

/// One entry's line, checked as `decode` checks it; `None` for anything else.
pub(crate) fn entry(line: &str) -> Option<TreeEntry> {
    let mut parts = line.split(' ');
    let kind = match parts.next()? {
        "f" => Kind::File,
        "d" => Kind::Dir,
        "l" => Kind::Link,
        _ => return None,
    };
    let mode = u32::from_str_radix(parts.next()?, 8).ok()?;
    let hash = Hash::parse(parts.next()?)?;
    let name = unhex(parts.next()?)?;
    if parts.next().is_some() || mode > 0o777 || !is_plain_name(&name) {
        return None;
    }
    Some(TreeEntry {
        name: OsString::from_vec(name),
        kind,
        mode,
        hash,
    })
}

pub(crate) fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One component a directory can hold: not empty, not `.` or `..`, no `/` or NUL.
pub fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &[u8], kind: Kind) -> TreeEntry {
        TreeEntry {
            name: OsString::from_vec(name.to_vec()),
            kind,
            mode: 0o644,
            hash: Hash::of(name),
        }
    }

    #[test]
    fn a_tree_round_trips_with_any_bytes_in_names() {
        let tree = Tree {
            entries: vec![
                e(b"a b", Kind::File),
                e(b"d\n\xff", Kind::Dir),
                e(b"z", Kind::Link),
            ],
        };
        assert_eq!(Tree::decode(&tree.encode()).unwrap(), tree);
    }

    #[test]
    fn a_tampered_tree_naming_a_parent_or_a_path_is_refused() {
        for bad in [&b".."[..], b".", b"a/b", b"", b"a\0"] {
            let tree = Tree {
                entries: vec![e(bad, Kind::File)],
            };
            assert!(
                Tree::decode(&tree.encode()).is_err(),
                "{bad:?} was accepted"
            );
        }
        let unsorted = Tree {
            entries: vec![e(b"b", Kind::File), e(b"a", Kind::File)],
        };
        assert!(Tree::decode(&unsorted.encode()).is_err());
        let text = String::from_utf8(
            Tree {
                entries: vec![e(b"a", Kind::File)],
            }
            .encode(),
        )
        .unwrap();
        assert!(Tree::decode(text.replace(" 644 ", " 4755 ").as_bytes()).is_err());
    }
}
