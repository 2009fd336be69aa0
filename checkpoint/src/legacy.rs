//! The text encoding paddock wrote trees and tree deltas in before the binary one (`tree`,
//! `delta`): one entry a line (`KIND MODE HASH HEXNAME`), hashes and names in hex. Read so
//! checkpoints taken by an older paddock still rewind, never written: a tree stored so is
//! named by the hash of its text, and a delta stored so is checked against the text of the
//! tree it rebuilds (`encode_as(Format::Text1)`). `read_tree` and `read_delta` tell the two
//! encodings apart by their headers, for the store.
//!
//! The decoders trust nothing, as the binary ones: every name one plain component, entries
//! sorted and unique, a mode of permission bits only.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::delta::Delta;
use crate::hash::Hash;
use crate::tree::{self, Kind, Tree, TreeEntry};

const TREE_HEADER: &str = "paddock-tree 1\n";
const DELTA_HEADER: &str = "paddock-tree-delta 1\n";

/// How a tree was encoded: its name is the hash of that encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The text an older paddock wrote: read, never written.
    Text1,
    Binary2,
}

/// A stored whole tree, of either encoding.
pub fn read_tree(bytes: &[u8]) -> Result<Tree, String> {
    if bytes.starts_with(TREE_HEADER.as_bytes()) {
        decode_tree(bytes)
    } else {
        Tree::decode(bytes)
    }
}

/// Whether stored bytes are a delta, of either encoding.
pub fn is_delta(bytes: &[u8]) -> bool {
    bytes.starts_with(DELTA_HEADER.as_bytes()) || crate::delta::is_delta(bytes)
}

/// A stored delta, of either encoding, and which: the tree it rebuilds is named by the hash
/// of `encode_as` in that encoding.
pub fn read_delta(bytes: &[u8]) -> Result<(Delta, Format), String> {
    if bytes.starts_with(DELTA_HEADER.as_bytes()) {
        decode_delta(bytes).map(|d| (d, Format::Text1))
    } else {
        Delta::decode(bytes).map(|d| (d, Format::Binary2))
    }
}

/// `tree` as `format` encodes it.
pub fn encode_as(tree: &Tree, format: Format) -> Vec<u8> {
    match format {
        Format::Binary2 => tree.encode(),
        Format::Text1 => encode_tree(tree),
    }
}

/// A tree's text, whose hash names a tree stored in this encoding.
pub fn encode_tree(tree: &Tree) -> Vec<u8> {
    let mut out = String::with_capacity(TREE_HEADER.len() + tree.entries.len() * 100);
    out.push_str(TREE_HEADER);
    for e in &tree.entries {
        encode_entry(e, &mut out);
    }
    out.into_bytes()
}

pub fn decode_tree(bytes: &[u8]) -> Result<Tree, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "a tree is not text".to_string())?;
    let body = text
        .strip_prefix(TREE_HEADER)
        .ok_or("a tree does not start with its header")?;
    let mut entries: Vec<TreeEntry> = Vec::new();
    for line in body.lines() {
        let entry = entry(line).ok_or_else(|| format!("a tree has a bad line: {line:?}"))?;
        tree::push_sorted(&mut entries, entry, "a tree")?;
    }
    Ok(Tree { entries })
}

/// A stored delta in this encoding; the checks of `Delta::decode`.
pub fn decode_delta(bytes: &[u8]) -> Result<Delta, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "a tree delta is not text")?;
    let body = text
        .strip_prefix(DELTA_HEADER)
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
            let name = unhex(hex)
                .filter(|n| tree::is_plain_name(n))
                .ok_or_else(|| format!("a tree delta removes a bad name: {line:?}"))?;
            if removed.last().is_some_and(|l| l.as_bytes() >= &name[..]) {
                return Err(format!("a tree delta's removals are not sorted: {line:?}"));
            }
            removed.push(OsString::from_vec(name));
        } else {
            let entry =
                entry(line).ok_or_else(|| format!("a tree delta has a bad line: {line:?}"))?;
            if !removed.is_empty() {
                return Err("a tree delta sets an entry after its removals".into());
            }
            tree::push_sorted(&mut set, entry, "a tree delta")?;
        }
    }
    Delta::checked(base, set, removed)
}

/// One entry as its line (`KIND MODE HASH HEXNAME`, newline included).
fn encode_entry(e: &TreeEntry, out: &mut String) {
    out.push(match e.kind {
        Kind::File => 'f',
        Kind::Dir => 'd',
        Kind::Link => 'l',
    });
    out.push_str(&format!(" {:03o} {} ", e.mode & 0o777, e.hash));
    push_hex(e.name.as_bytes(), out);
    out.push('\n');
}

fn push_hex(name: &[u8], out: &mut String) {
    for b in name {
        out.push_str(&format!("{b:02x}"));
    }
}

/// One entry's line, checked; `None` for anything else.
fn entry(line: &str) -> Option<TreeEntry> {
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
    if parts.next().is_some() || mode > 0o777 || !tree::is_plain_name(&name) {
        return None;
    }
    Some(TreeEntry {
        name: OsString::from_vec(name),
        kind,
        mode,
        hash,
    })
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A delta's text, as an older paddock wrote it (for tests of reading old stores).
#[cfg(test)]
pub fn encode_delta(delta: &Delta) -> Vec<u8> {
    let mut out = String::from(DELTA_HEADER);
    out.push_str(&format!("base {}\n", delta.base));
    for e in &delta.set {
        encode_entry(e, &mut out);
    }
    for name in &delta.removed {
        out.push_str("- ");
        push_hex(name.as_bytes(), &mut out);
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::tests::e;

    #[test]
    fn an_old_text_tree_and_delta_are_read_and_tampered_ones_refused() {
        let tree = Tree {
            entries: vec![e(b"a b", Kind::File), e(b"d\n\xff", Kind::Dir)],
        };
        let text = encode_tree(&tree);
        assert!(text.starts_with(b"paddock-tree 1\n"));
        assert_eq!(read_tree(&text).unwrap(), tree);
        assert_eq!(encode_as(&tree, Format::Text1), text);
        let text = String::from_utf8(text).unwrap();
        for bad in [
            text.replace(" 644 ", " 4755 "),
            text.replace("612062", "2e2e"),
            text.replace("paddock-tree 1", "paddock-tree 9"),
        ] {
            assert!(read_tree(bad.as_bytes()).is_err(), "accepted {bad}");
        }
        let delta = Delta {
            base: Hash::of(b"x"),
            set: vec![e(b"b", Kind::File)],
            removed: vec!["a".into()],
        };
        let text = String::from_utf8(encode_delta(&delta)).unwrap();
        assert_eq!(
            read_delta(text.as_bytes()).unwrap(),
            (delta.clone(), Format::Text1)
        );
        for bad in [
            text.replace("- 61", "- 2e2e"),
            text.replace("- 61", "- 62"),
            text.replace(" 644 ", " 4755 "),
            text.replace("base ", "bass "),
        ] {
            assert!(decode_delta(bad.as_bytes()).is_err(), "accepted {bad}");
        }
    }
}
