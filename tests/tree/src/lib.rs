//! Test support for the rewind harnesses (the checkpoint engine's own and the end-to-end one
//! through the real binary): a directory tree as a copy that compares byte for byte, and a
//! small seeded generator, so a failing run can be replayed from its seed.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// One path of a copied tree: a file's permission bits and bytes, a directory's bits, or a
/// symlink's target (never followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File(u32, Vec<u8>),
    Dir(u32),
    Link(PathBuf),
}

/// Every path under `root` but the top-level `.git`, as a comparable copy.
pub fn copy(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let entries = std::fs::read_dir(root.join(&rel))
            .unwrap_or_else(|e| panic!("reading {}: {e}", root.join(&rel).display()));
        for entry in entries {
            let entry = entry.expect("a directory entry");
            let path = rel.join(entry.file_name());
            if path == Path::new(".git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(entry.path()).expect("an entry's metadata");
            let mode = meta.permissions().mode() & 0o777;
            let ft = meta.file_type();
            if ft.is_symlink() {
                let target = std::fs::read_link(entry.path()).expect("a symlink's target");
                out.insert(path, Entry::Link(target));
            } else if ft.is_dir() {
                out.insert(path.clone(), Entry::Dir(mode));
                stack.push(path);
            } else {
                let bytes = std::fs::read(entry.path()).expect("a file's bytes");
                out.insert(path, Entry::File(mode, bytes));
            }
        }
    }
    out
}

/// The paths where two copies differ (present in one only, or different), sorted.
pub fn differences<'a>(
    got: &'a BTreeMap<PathBuf, Entry>,
    want: &'a BTreeMap<PathBuf, Entry>,
) -> Vec<&'a Path> {
    let mut paths: Vec<&Path> = got
        .keys()
        .chain(want.keys())
        .filter(|p| got.get(*p) != want.get(*p))
        .map(PathBuf::as_path)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// xorshift64*: enough to vary the sequences, reproducible from the seed.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform enough in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Up to 300 bytes: any byte when `binary`, else letters, spaces and newlines.
    pub fn bytes(&mut self, binary: bool) -> Vec<u8> {
        let len = self.below(300);
        (0..len)
            .map(|_| {
                if binary {
                    self.next_u64() as u8
                } else {
                    b"abc \n"[self.below(5)]
                }
            })
            .collect()
    }

    /// `items` in a random order.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}
