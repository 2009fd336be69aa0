//! Tree objects: one directory of a checkpoint, as the names it holds and, for each, its kind,
//! mode and the hash of its content (a file's bytes, a symlink's target, a directory's tree).
//! Like git's trees they make a Merkle tree: an unchanged subtree keeps its hash and is shared
//! by every checkpoint that has it, so a checkpoint that changed ten files writes only the
//! trees on their paths.
//!
//! The encoding is binary and compact, so a small change costs little to store: a 4-byte
//! header, then per entry two bytes of kind and mode, the 32 bytes of the hash, the name's
//! length (a varint) and its bytes (any bytes but `/` and NUL). (Trees paddock wrote before,
//! as text, are read by `legacy`.) `decode` trusts nothing: a store can be
//! tampered with, so every name is checked to be one plain component (no `.`, `..`, `/`, NUL,
//! nothing empty, at most `MAX_NAME` bytes), the entries to be sorted and unique, and nothing
//! to follow the last, before anything walks or restores them.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::hash::Hash;

const MAGIC: &[u8; 4] = b"\0pt2";

/// The longest name a tree holds: longer than any Linux filesystem allows (255 bytes; a few
/// count characters, not bytes).
const MAX_NAME: u64 = 1024;

/// What an entry is. Nothing else (devices, FIFOs, sockets) is ever recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
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
        let mut out = Vec::with_capacity(MAGIC.len() + self.entries.len() * 48);
        out.extend_from_slice(MAGIC);
        for e in &self.entries {
            put_entry(e, &mut out);
        }
        out
    }

    /// Reads a stored tree, refusing anything `encode` would not have written.
    pub fn decode(bytes: &[u8]) -> Result<Tree, String> {
        let body = bytes
            .strip_prefix(MAGIC)
            .ok_or("a tree does not start with its header")?;
        let mut reader = Reader(body);
        let mut entries = Vec::new();
        while !reader.is_empty() {
            let entry = reader
                .entry()
                .ok_or_else(|| format!("a tree has a bad entry after {} good", entries.len()))?;
            push_sorted(&mut entries, entry, "a tree")?;
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

/// Appends `entry` to `entries`, refusing a name that is not after the last one.
pub(crate) fn push_sorted(
    entries: &mut Vec<TreeEntry>,
    entry: TreeEntry,
    what: &str,
) -> Result<(), String> {
    if let Some(last) = entries.last()
        && last.name.as_bytes() >= entry.name.as_bytes()
    {
        return Err(format!(
            "{what}'s names are not sorted or repeat one: {:?}",
            entry.name
        ));
    }
    entries.push(entry);
    Ok(())
}

/// One entry: kind and mode in two bytes (little-endian: the mode's 9 bits, the kind above),
/// the hash, the name.
pub(crate) fn put_entry(e: &TreeEntry, out: &mut Vec<u8>) {
    let kind: u16 = match e.kind {
        Kind::File => 0,
        Kind::Dir => 1,
        Kind::Link => 2,
    };
    let mode = u16::try_from(e.mode & 0o777).unwrap_or(0);
    out.extend_from_slice(&((kind << 9) | mode).to_le_bytes());
    out.extend_from_slice(&e.hash.0);
    put_name(e.name.as_bytes(), out);
}

/// A name: its length (a varint), then its bytes.
pub(crate) fn put_name(name: &[u8], out: &mut Vec<u8>) {
    put_varint(name.len() as u64, out);
    out.extend_from_slice(name);
}

/// An unsigned LEB128 varint: 7 bits a byte, low first, the high bit set on all but the last.
pub(crate) fn put_varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Bytes being decoded; every read is checked, `None` for anything an encoder would not
/// have written.
pub(crate) struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    /// A varint in its shortest form, of at most 32 bits.
    pub fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for i in 0..5 {
            let b = *self.take(1)?.first()?;
            n |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                // A last byte of 0 after others is a longer form than needed.
                return (i == 0 || b != 0)
                    .then_some(n)
                    .filter(|n| *n <= u64::from(u32::MAX));
            }
        }
        None
    }

    pub fn hash(&mut self) -> Option<Hash> {
        Some(Hash(self.take(32)?.try_into().ok()?))
    }

    /// A name, checked to be one plain component.
    pub fn name(&mut self) -> Option<OsString> {
        let len = self.varint().filter(|n| *n <= MAX_NAME)?;
        let name = self.take(usize::try_from(len).ok()?)?;
        is_plain_name(name).then(|| OsString::from_vec(name.to_vec()))
    }

    pub fn entry(&mut self) -> Option<TreeEntry> {
        let bits = u16::from_le_bytes(self.take(2)?.try_into().ok()?);
        let kind = match bits >> 9 {
            0 => Kind::File,
            1 => Kind::Dir,
            2 => Kind::Link,
            _ => return None,
        };
        let hash = self.hash()?;
        let name = self.name()?;
        Some(TreeEntry {
            name,
            kind,
            mode: u32::from(bits & 0o777),
            hash,
        })
    }
}

/// One component a directory can hold: not empty, not `.` or `..`, no `/` or NUL.
pub fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An entry named `name`, mode 644, hashed from its name.
    pub(crate) fn e(name: &[u8], kind: Kind) -> TreeEntry {
        TreeEntry {
            name: OsString::from_vec(name.to_vec()),
            kind,
            mode: 0o644,
            hash: Hash::of(name),
        }
    }

    #[test]
    fn a_tree_round_trips_with_any_bytes_in_names() {
        let long = vec![b'x'; 300];
        let tree = Tree {
            entries: vec![
                e(b"a b", Kind::File),
                e(b"d\n\xff", Kind::Dir),
                e(&long, Kind::File),
                e(b"z", Kind::Link),
            ],
        };
        let bytes = tree.encode();
        assert_eq!(Tree::decode(&bytes).unwrap(), tree);
        // Two bytes of kind and mode, the raw hash, a length and the name: nothing more.
        let one = Tree {
            entries: vec![e(b"main.rs", Kind::File)],
        };
        assert_eq!(one.encode().len(), 4 + 2 + 32 + 1 + 7);
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
        let good = Tree {
            entries: vec![e(b"a", Kind::File)],
        }
        .encode();
        // A set-id bit, an unknown kind, a cut or trailing byte, a padded length.
        let mut setuid = good.clone();
        setuid[5] |= 0x08;
        let mut kind = good.clone();
        kind[5] = 3 << 1;
        let cut = good[..good.len() - 1].to_vec();
        let mut trailing = good.clone();
        trailing.push(0);
        let mut padded = good[..good.len() - 2].to_vec();
        padded.extend_from_slice(&[0x81, 0x00, b'a']);
        for bad in [setuid, kind, cut, trailing, padded] {
            assert!(Tree::decode(&bad).is_err(), "accepted {bad:?}");
        }
        assert!(Tree::decode(&good).is_ok());
    }
}
