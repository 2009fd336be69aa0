//! The bench's own data, generated quickly and the same every run: a source tree of Rust-like
//! files (about 16 KB each, 20 to a directory, two levels deep, like a crate registry) with a
//! rare needle planted in a few files, and one big text file.

use std::io::Write;
use std::path::Path;

/// The word planted in `NEEDLE_FILES` files of the tree, once each.
pub const NEEDLE: &str = "scale_needle_q7";
const NEEDLE_FILES: usize = 40;

const WORDS: &[&str] = &[
    "let", "mut", "fn", "pub", "struct", "impl", "self", "return", "match", "Some", "None", "Ok",
    "Err", "use", "crate", "mod", "where", "for", "in", "if", "else", "while", "loop", "value",
    "result", "error", "config", "path", "buffer", "index", "count", "parse", "write", "read",
];

/// xorshift64*: deterministic and fast enough to write 100 MB in well under a second.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) % n
    }
}

fn line(rng: &mut Rng, out: &mut Vec<u8>) {
    for _ in 0..rng.below(4) {
        out.extend_from_slice(b"    ");
    }
    let words = 2 + rng.below(12);
    for i in 0..words {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
        if rng.below(5) == 0 {
            write!(out, "{}", rng.below(1000)).expect("vec write");
        }
    }
    out.extend_from_slice(b";\n");
}

/// Writes a tree of at least `min_bytes` under `root`; returns (files, bytes).
pub fn source_tree(root: &Path, min_bytes: u64) -> (usize, u64) {
    let mut rng = Rng::new(7);
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut text = Vec::with_capacity(64 << 10);
    while bytes < min_bytes {
        let dir = root
            .join(format!("crate{:03}", files / 400))
            .join(format!("mod{:02}", files / 20 % 20));
        if files % 20 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        text.clear();
        let lines = 100 + rng.below(600);
        for n in 0..lines {
            if n == lines / 2 && files % 131 == 0 && files / 131 < NEEDLE_FILES {
                writeln!(text, "    let {NEEDLE} = {files};").expect("vec write");
            }
            line(&mut rng, &mut text);
        }
        std::fs::write(dir.join(format!("file{files:05}.rs")), &text).expect("write");
        bytes += text.len() as u64;
        files += 1;
    }
    (files, bytes)
}

/// Writes one text file of at least `min_bytes` at `path`; returns its number of lines.
pub fn big_file(path: &Path, min_bytes: u64) -> u64 {
    let mut rng = Rng::new(11);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let (mut bytes, mut lines) = (0u64, 0u64);
    let mut text = Vec::with_capacity(256);
    while bytes < min_bytes {
        text.clear();
        line(&mut rng, &mut text);
        out.write_all(&text).expect("write");
        bytes += text.len() as u64;
        lines += 1;
    }
    out.flush().expect("flush");
    lines
}
