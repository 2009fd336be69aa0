//! Reading a window of lines without reading the whole file: read_file stops as soon as its
//! page is full, so a 100 MiB log costs the same as the page it shows. Newlines are found with
//! `memchr` (SIMD where the plugin is built with simd128).

use std::io::{self, Read};

const CHUNK: usize = 64 * 1024;

/// Streams lines (without their `\n`, and without a trailing `\r`) from a reader. A line longer
/// than `keep` bytes is returned cut to `keep` bytes, with `cut` set; the rest is skipped.
pub struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    keep: usize,
    long: Vec<u8>,
    /// Bytes consumed so far (to report where a page ends).
    pub consumed: u64,
}

/// One line from `Lines`.
pub struct Line<'a> {
    pub bytes: &'a [u8],
    pub cut: bool,
}

impl<R: Read> Lines<R> {
    pub fn new(reader: R, keep: usize) -> Lines<R> {
        Lines {
            reader,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            eof: false,
            keep,
            long: Vec::new(),
            consumed: 0,
        }
    }

    /// Peeks at the first bytes (for binary detection) without consuming them.
    pub fn head(&mut self, n: usize) -> io::Result<&[u8]> {
        while self.end - self.start < n && !self.eof {
            self.fill()?;
        }
        Ok(&self.buf[self.start..self.end.min(self.start + n)])
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if n == 0 {
            self.eof = true;
        }
        self.end += n;
        Ok(())
    }

    /// Skips one line; false at the end of the file.
    pub fn skip(&mut self) -> io::Result<bool> {
        let mut seen = false;
        loop {
            if let Some(at) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                self.start += at + 1;
                self.consumed += at as u64 + 1;
                return Ok(true);
            }
            if self.eof {
                let rest = self.end - self.start;
                self.consumed += rest as u64;
                self.start = self.end;
                return Ok(seen || rest > 0);
            }
            // Nothing of this line is needed: drop what is buffered before reading more.
            seen |= self.end > self.start;
            self.consumed += (self.end - self.start) as u64;
            self.start = self.end;
            self.fill()?;
        }
    }

    /// The next line, or None at the end of the file.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let mut cut = false;
        loop {
            let window = &self.buf[self.start..self.end];
            if let Some(at) = memchr::memchr(b'\n', window) {
                let line_start = self.start;
                self.start += at + 1;
                self.consumed += at as u64 + 1;
                let mut line = &self.buf[line_start..line_start + at];
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                if line.len() > self.keep {
                    line = &line[..self.keep];
                    cut = true;
                }
                return Ok(Some(Line { bytes: line, cut }));
            }
            if self.eof {
                if window.is_empty() {
                    return Ok(None);
                }
                let line_start = self.start;
                let len = (self.end - self.start).min(self.keep);
                cut |= self.end - self.start > self.keep;
                self.consumed += (self.end - self.start) as u64;
                self.start = self.end;
                return Ok(Some(Line {
                    bytes: &self.buf[line_start..line_start + len],
                    cut,
                }));
            }
            if window.len() > self.keep {
                // A very long line: keep its head, skip the rest.
                self.long.clear();
                self.long.extend_from_slice(&window[..self.keep]);
                self.skip()?;
                return Ok(Some(Line {
                    bytes: &self.long,
                    cut: true,
                }));
            }
            self.fill()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(text: &[u8], keep: usize) -> Vec<(String, bool)> {
        let mut lines = Lines::new(text, keep);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push((String::from_utf8_lossy(line.bytes).into_owned(), line.cut));
        }
        out
    }

    #[test]
    fn lines_split_on_newlines_with_or_without_a_final_one() {
        assert_eq!(
            collect(b"a\r\nb\nc", 10),
            [
                ("a".into(), false),
                ("b".into(), false),
                ("c".into(), false)
            ]
        );
        assert_eq!(
            collect(b"a\n\nb\n", 10),
            [("a".into(), false), ("".into(), false), ("b".into(), false)]
        );
    }

    #[test]
    fn long_lines_are_cut_across_chunk_boundaries() {
        let mut text = vec![b'x'; CHUNK * 3];
        text.extend_from_slice(b"\nshort\n");
        let lines = collect(&text, 5);
        assert_eq!(lines, [("xxxxx".into(), true), ("short".into(), false)]);
    }

    #[test]
    fn skipping_counts_consumed_bytes() {
        let text = b"one\ntwo\nthree";
        let mut lines = Lines::new(&text[..], 100);
        assert!(lines.skip().unwrap());
        assert_eq!(lines.consumed, 4);
        assert_eq!(lines.next_line().unwrap().unwrap().bytes, b"two");
        assert!(lines.skip().unwrap());
        assert!(!lines.skip().unwrap());
        assert_eq!(lines.consumed, text.len() as u64);
    }
}
