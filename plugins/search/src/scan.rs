//! One file searched for matching lines at buffer speed. The regex runs over a whole chunk of
//! the file (up to 1 MiB of complete lines at a time), not line by line: its literal prefilter
//! (memchr/memmem, SIMD with simd128) skips what cannot match, and lines are counted only up to
//! each match. That took grep from ~53 guest instructions per byte to a few (docs/scale.md).
//!
//! A match in a chunk is a line match unless it spans a newline (`\s+`, `[^x]*` can): then the
//! line it starts on is checked on its own, and the search goes on from the next line. Every
//! match the regex has in a line alone is also a match in the chunk (multi-line `^`/`$`, CRLF
//! aware), and the chunk's leftmost match never starts after it, so no line is missed.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use regex::bytes::Regex;

/// Bytes read per chunk; a longer line grows the buffer up to `MAX_CHUNK`.
const CHUNK: usize = 1 << 20;
/// A line longer than this (minified code, data) is searched in pieces of this size.
const MAX_CHUNK: usize = 16 << 20;
/// A file with a NUL byte in its first 8 KiB is binary and skipped.
const BINARY_PROBE: usize = 8192;

/// Where to start (or continue) in a file: a byte offset at a line start and that line's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub byte: u64,
    pub line: u64,
}

impl Position {
    pub const START: Position = Position { byte: 0, line: 1 };
}

/// A matching line: its number, the byte offset where it starts, its text (without the
/// newline or a `\r` before it).
pub struct Hit<'a> {
    pub line: u64,
    pub start: u64,
    pub text: &'a [u8],
}

/// What the caller does after a hit.
#[derive(PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// How a file's search ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Scanned {
    /// The end of the file (or it is binary).
    Done,
    /// The caller said stop.
    Stopped,
    /// The call's share of bytes ran out; the search continues here.
    Paused(Position),
}

/// A reusable read buffer: one allocation (and one memory growth) for the whole walk.
pub struct Scanner {
    buf: Vec<u8>,
}

impl Scanner {
    pub fn new() -> Scanner {
        Scanner {
            buf: vec![0; CHUNK],
        }
    }

    /// Calls `on_hit` for each line of `path` from `from` on that `regex` matches, until it
    /// says stop or `share` (bytes this call may still search) runs out.
    pub fn file(
        &mut self,
        regex: &Regex,
        path: &Path,
        from: Position,
        share: &Cell<u64>,
        on_hit: &mut dyn FnMut(Hit<'_>) -> Flow,
    ) -> io::Result<Scanned> {
        let mut file = File::open(path)?;
        // Reads ask for what is left of the file, never a whole chunk: the host allocates
        // (and zeroes) every byte a read asks for, and a 1 MiB request for a 16 KB file cost
        // more than searching it (memset was 10% of grep's instructions).
        let mut left = file.metadata()?.len().saturating_sub(from.byte);
        if from.byte > 0 {
            file.seek(SeekFrom::Start(from.byte))?;
        }
        let (mut base, mut line) = (from.byte, from.line);
        let mut filled = 0;
        let mut probed = from.byte > 0;
        loop {
            if filled == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let want = (self.buf.len() - filled).min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = if want == 0 {
                0
            } else {
                read_some(&mut file, &mut self.buf[filled..filled + want])?
            };
            left -= n as u64;
            // A file that grew while it was read is searched as far as its size said.
            let eof = n == 0 || left == 0;
            filled += n;
            if !probed && (filled >= BINARY_PROBE || eof) {
                probed = true;
                if memchr::memchr(0, &self.buf[..filled.min(BINARY_PROBE)]).is_some() {
                    return Ok(Scanned::Done);
                }
            }
            let end = if eof {
                filled
            } else {
                match memchr::memrchr(b'\n', &self.buf[..filled]) {
                    Some(at) if probed => at + 1,
                    None if filled >= MAX_CHUNK => filled,
                    _ => continue,
                }
            };
            if region(regex, &self.buf[..end], base, &mut line, on_hit) == Flow::Stop {
                return Ok(Scanned::Stopped);
            }
            share.set(share.get().saturating_sub(end as u64));
            if eof {
                return Ok(Scanned::Done);
            }
            self.buf.copy_within(end..filled, 0);
            filled -= end;
            base += end as u64;
            if share.get() == 0 {
                return Ok(Scanned::Paused(Position { byte: base, line }));
            }
        }
    }
}

fn read_some(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match file.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Searches `text` (complete lines; its first byte is on line `*line`, at file offset `base`)
/// and leaves `*line` at the number of the line after it.
fn region(
    regex: &Regex,
    text: &[u8],
    base: u64,
    line: &mut u64,
    on_hit: &mut dyn FnMut(Hit<'_>) -> Flow,
) -> Flow {
    let mut pos = 0;
    let mut counted = 0;
    while pos < text.len() {
        let Some(found) = regex.find_at(text, pos) else {
            break;
        };
        if found.start() == text.len() && text.last() == Some(&b'\n') {
            // An empty match after the last newline: there is no line there.
            break;
        }
        let start = memchr::memrchr(b'\n', &text[pos..found.start()]).map_or(pos, |i| pos + i + 1);
        let end =
            memchr::memchr(b'\n', &text[found.start()..]).map_or(text.len(), |i| found.start() + i);
        let mut shown = &text[start..end];
        if shown.last() == Some(&b'\r') {
            shown = &shown[..shown.len() - 1];
        }
        if found.end() <= end || regex.is_match(shown) {
            *line += newlines(&text[counted..start]);
            counted = start;
            let hit = Hit {
                line: *line,
                start: base + start as u64,
                text: shown,
            };
            if on_hit(hit) == Flow::Stop {
                return Flow::Stop;
            }
        }
        pos = end + 1;
    }
    *line += newlines(&text[counted..]);
    Flow::Continue
}

fn newlines(text: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', text).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(pattern: &str, text: &str) -> Vec<(u64, String)> {
        let regex = crate::grep::compile(pattern, false).unwrap();
        let mut line = 1;
        let mut out = Vec::new();
        region(&regex, text.as_bytes(), 0, &mut line, &mut |hit| {
            out.push((hit.line, String::from_utf8_lossy(hit.text).into_owned()));
            Flow::Continue
        });
        out
    }

    #[test]
    fn matches_are_whole_lines_with_their_numbers() {
        let text = "alpha\nbeta\r\ngamma beta\n\nlast beta";
        assert_eq!(
            hits("beta", text),
            [
                (2, "beta".into()),
                (3, "gamma beta".into()),
                (5, "last beta".into())
            ]
        );
        assert_eq!(hits("^beta$", text), [(2, "beta".into())]);
        assert_eq!(hits("^$", "a\n\nb\n"), [(2, "".into())]);
        assert_eq!(hits("$", "a\nb"), [(1, "a".into()), (2, "b".into())]);
    }

    #[test]
    fn a_match_across_lines_counts_only_where_the_line_alone_matches() {
        // `a\s+b` spans the newline between lines 1 and 2 in the buffer, but no line alone.
        let text = "xa\nb\nz a  b\n";
        assert_eq!(hits(r"a\s+b", text), [(3, "z a  b".into())]);
        // `[^q]*end`: the buffer match starts on line 1; only line 3 matches alone.
        assert_eq!(
            hits("^[^q]*end", "qq\nq end\nthe end\n"),
            [(3, "the end".into())]
        );
    }

    #[test]
    fn per_line_and_whole_buffer_search_agree() {
        let text = "fn a() {}\n  let x = 1;\n\nfn b(y: u8) -> u8 { y }\n// fn c\n";
        for pattern in [r"fn \w+", r"^\s*let", r"\d", "^$", r"\s$", r"u8\s*\{", "."] {
            let regex = crate::grep::compile(pattern, false).unwrap();
            let per_line: Vec<(u64, String)> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| regex.is_match(l.as_bytes()))
                .map(|(i, l)| (i as u64 + 1, l.to_string()))
                .collect();
            assert_eq!(hits(pattern, text), per_line, "{pattern}");
        }
    }
}
