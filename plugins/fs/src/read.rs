//! read_file: numbered lines, with offset/limit paging and a continuation when cut; an image
//! (PNG, JPEG, GIF, WebP, told by its magic bytes) as an image result, which the host checks
//! and bounds again.

use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};

use paddock_sdk::{
    MAX_IMAGE_BYTES, Output, Overflow, Spec, Tool, ToolError, image_format, resolve,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::lines::Lines;

const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE_BYTES: usize = 2000;
/// The plugin stops before the host's budget would cut it, so continuations stay exact.
const MAX_CONTENT_BYTES: usize = 100 * 1024;

/// Arguments of read_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    /// File to read. Relative paths are relative to /workspace.
    pub path: String,
    /// First line to return, counting from 1. Default 1.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most lines to return. Default 2000.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Byte offset where line `offset` starts, as a continuation gives it: the read starts
    /// there instead of counting lines from the top, so each page of a long file costs what it
    /// returns. Leave it out when you choose the offset yourself.
    #[serde(default)]
    pub byte: Option<u64>,
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";

    fn spec() -> Spec {
        Spec::new(
            "Read a text file and return its lines numbered from 1, as `     N\\tline`.\n\
             Use it to look at a file whose path you know; use grep to find where something is, \
             glob to find files by name, list_dir to see a directory.\n\
             Paths are relative to /workspace unless absolute. At most `limit` lines (default 2000) \
             and about 100 KiB are returned; lines over 2000 bytes are cut. When the result \
             is cut, it says so and gives the arguments to continue with (offset and byte): call \
             read_file again with them.\n\
             An image (PNG, JPEG, GIF or WebP, up to 3.75 MB) is returned as an image for you \
             to look at, when the model is set up for images.",
        )
        .read_only()
        .output_budget(128 * 1024, Overflow::Truncate)
        .path_params(&["path"])
        .example(r#"{"path": "src/main.rs"}"#, "reads the first 2000 lines")
        .example(r#"{"path": "src/main.rs", "offset": 2001, "limit": 500}"#, "continues a long file")
        .counter_example(r#"{"path": "src/"}"#, "a directory: use list_dir")
    }

    fn run(self) -> Result<Output, ToolError> {
        let offset = self.offset.unwrap_or(1);
        if offset == 0 {
            return Err(ToolError::invalid_args(
                "offset counts from 1; use 1 for the first line",
            ));
        }
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 {
            return Err(ToolError::invalid_args("limit must be at least 1"));
        }
        let mut file =
            std::fs::File::open(resolve(&self.path)).map_err(|e| ToolError::io(&self.path, &e))?;
        let meta = file.metadata().map_err(|e| ToolError::io(&self.path, &e))?;
        if meta.is_dir() {
            return Err(ToolError::new(
                "IS_A_DIRECTORY",
                format!("{} is a directory; use list_dir", self.path),
            ));
        }
        let io = |e: std::io::Error| ToolError::io(&self.path, &e);
        let mut head = Vec::with_capacity(8192);
        (&mut file).take(8192).read_to_end(&mut head).map_err(io)?;
        if let Some(format) = image_format(&head) {
            return read_image(&self.path, format, head, &mut file, meta.len());
        }
        if memchr::memchr(0, &head).is_some() {
            return Err(ToolError::new(
                "BINARY_FILE",
                format!(
                    "{} looks binary ({} bytes, contains NUL bytes); read_file shows text only",
                    self.path,
                    meta.len()
                ),
            ));
        }
        if meta.len() == 0 {
            return Ok(Output::text(format!("({} is empty)", self.path)));
        }
        let start = match self.byte {
            None | Some(0) => 0,
            Some(byte) => line_start(&mut file, byte, meta.len()).map_err(|why| {
                ToolError::invalid_args(format!(
                    "byte {byte} of {} {why}; leave byte out to read from line {offset}",
                    self.path
                ))
            })?,
        };
        file.seek(SeekFrom::Start(start)).map_err(io)?;
        let mut lines = Lines::new(file, MAX_LINE_BYTES);
        lines.consumed = start;
        let skip = if self.byte.is_some() { 0 } else { offset - 1 };
        render(&self.path, meta.len(), &mut lines, offset, limit, skip).map_err(io)
    }
}

/// The image at `path` (its first bytes already in `head`), read whole unless it is over the
/// bound the host would refuse it at.
fn read_image(
    path: &str,
    format: &str,
    mut bytes: Vec<u8>,
    file: &mut std::fs::File,
    size: u64,
) -> Result<Output, ToolError> {
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(ToolError::new(
            "IMAGE_TOO_LARGE",
            format!(
                "{path} is a {format} image of {size} bytes, over the {MAX_IMAGE_BYTES} bytes an \
                 image may have to be shown; it was not read. Look at a smaller copy (scaled \
                 down or cropped) instead"
            ),
        ));
    }
    file.take(MAX_IMAGE_BYTES as u64 + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io(path, &e))?;
    let caption = format!("{path}: {format} image, {} bytes", bytes.len());
    Ok(Output::image(&bytes, &caption))
}

/// Where a continuation's byte offset stands: the start of a line (after a newline) within
/// the file, or why not.
fn line_start(file: &mut std::fs::File, byte: u64, size: u64) -> Result<u64, String> {
    if byte >= size {
        return Err(format!("is past the end ({size} bytes)"));
    }
    let mut before = [0u8; 1];
    file.seek(SeekFrom::Start(byte - 1))
        .and_then(|_| file.read_exact(&mut before))
        .map_err(|e| format!("cannot be read: {e}"))?;
    if before[0] != b'\n' {
        return Err("is not the start of a line".into());
    }
    Ok(byte)
}

/// Formats lines `offset..offset+limit` as `     N\tline` after skipping `skip` lines of
/// `lines`, stopping early when the page is full.
fn render<R: std::io::Read>(
    shown_path: &str,
    size: u64,
    lines: &mut Lines<R>,
    offset: usize,
    limit: usize,
    skip: usize,
) -> std::io::Result<Output> {
    let past_end = |lines_in_file: usize| {
        Output::text(format!(
            "({shown_path} has {lines_in_file} lines; offset {offset} is past the end)"
        ))
    };
    for skipped in 0..skip {
        if !lines.skip()? {
            return Ok(past_end(offset - 1 - skip + skipped));
        }
    }
    // Room for a full page, one more long line, and the marker: the page never reallocates.
    let page_room = MAX_CONTENT_BYTES + 4 * MAX_LINE_BYTES + 256;
    let mut page: Vec<u8> = Vec::with_capacity(
        page_room.min(
            usize::try_from(size)
                .unwrap_or(usize::MAX)
                .saturating_mul(2)
                + 256,
        ),
    );
    let mut number = offset;
    let mut complete = false;
    while number < offset.saturating_add(limit)
        && (page.len() < MAX_CONTENT_BYTES || number == offset)
    {
        let Some(line) = lines.next_line()? else {
            if number == offset {
                return Ok(past_end(offset - 1));
            }
            complete = true;
            break;
        };
        push_number(&mut page, number);
        page.push(b'\t');
        page.extend_from_slice(line.bytes);
        if line.cut {
            page.extend_from_slice(format!("… [line cut at {MAX_LINE_BYTES} bytes]").as_bytes());
        }
        page.push(b'\n');
        number += 1;
    }
    let mut content = into_text(page);
    // The page is full; is there anything after it?
    if complete || lines.head(1)?.is_empty() {
        return Ok(Output::text(content));
    }
    let _ = write!(
        content,
        "[showing lines {offset}-{} (up to byte {} of {size}); call read_file with offset {number} and byte {} to read on]",
        number - 1,
        lines.consumed,
        lines.consumed
    );
    let continuation =
        serde_json::json!({ "path": shown_path, "offset": number, "byte": lines.consumed })
            .to_string();
    Ok(Output::partial(content, continuation))
}

/// The page as text: validated once, with SIMD, rather than line by line; invalid bytes (rare)
/// become U+FFFD.
fn into_text(page: Vec<u8>) -> String {
    if simdutf8::basic::from_utf8(&page).is_ok() {
        // SAFETY: simdutf8 has just checked that `page` is valid UTF-8.
        unsafe { String::from_utf8_unchecked(page) }
    } else {
        String::from_utf8_lossy(&page).into_owned()
    }
}

/// Right-aligns `n` in six columns, as `cat -n` does, without the formatting machinery.
fn push_number(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [b' '; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at.min(digits.len() - 6)..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str, offset: usize, limit: usize) -> Output {
        let mut lines = Lines::new(text.as_bytes(), MAX_LINE_BYTES);
        render(
            "f.txt",
            text.len() as u64,
            &mut lines,
            offset,
            limit,
            offset - 1,
        )
        .unwrap()
    }

    #[test]
    fn lines_are_numbered_and_paged_with_a_continuation() {
        let text = "a\nb\nc\nd\n";
        let out = page(text, 2, 2);
        assert_eq!(
            out.content,
            "     2\tb\n     3\tc\n[showing lines 2-3 (up to byte 6 of 8); call read_file with offset 4 and byte 6 to read on]"
        );
        assert!(out.truncated);
        assert_eq!(
            out.continuation.as_deref(),
            Some(r#"{"byte":6,"offset":4,"path":"f.txt"}"#)
        );
        let rest = page(text, 4, 2);
        assert_eq!(rest.content, "     4\td\n");
        assert!(!rest.truncated);
    }

    #[test]
    fn paging_by_byte_offset_returns_every_line_once() {
        let text: String = (1..=5000)
            .map(|i| format!("line {i} {}\n", "z".repeat(i % 90)))
            .collect();
        let (mut offset, mut byte, mut seen) = (1usize, 0u64, Vec::new());
        loop {
            let mut reader = &text.as_bytes()[byte as usize..];
            let mut lines = Lines::new(&mut reader, MAX_LINE_BYTES);
            lines.consumed = byte;
            let out = render("f.txt", text.len() as u64, &mut lines, offset, 700, 0).unwrap();
            seen.extend(
                out.content
                    .lines()
                    .filter(|l| !l.starts_with('['))
                    .map(|l| l.split('\t').nth(1).unwrap().to_string()),
            );
            let Some(next) = out.continuation else { break };
            let next: serde_json::Value = serde_json::from_str(&next).unwrap();
            offset = next["offset"].as_u64().unwrap() as usize;
            byte = next["byte"].as_u64().unwrap();
            assert_eq!(text.as_bytes()[byte as usize - 1], b'\n');
        }
        let want: Vec<String> = text.lines().map(str::to_string).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn an_offset_past_the_end_says_how_many_lines_there_are() {
        assert_eq!(
            page("a\nb\n", 5, 10).content,
            "(f.txt has 2 lines; offset 5 is past the end)"
        );
        assert_eq!(
            page("a\nb\n", 3, 10).content,
            "(f.txt has 2 lines; offset 3 is past the end)"
        );
    }

    #[test]
    fn numbers_are_right_aligned_in_six_columns() {
        let mut out = Vec::new();
        for n in [0, 7, 123456, 1234567] {
            push_number(&mut out, n);
            out.push(b'|');
        }
        assert_eq!(out, b"     0|     7|123456|1234567|");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_refused() {
        let mut lines = Lines::new(&b"ok\n\xff bad\n"[..], MAX_LINE_BYTES);
        let out = render("f.txt", 9, &mut lines, 1, 10, 0).unwrap();
        assert_eq!(out.content, "     1\tok\n     2\t\u{fffd} bad\n");
    }

    #[test]
    fn a_page_stops_at_about_100_kib() {
        let text = "y".repeat(99) + "\n";
        let out = page(&text.repeat(5000), 1, 100_000);
        assert!(out.truncated);
        assert!(out.content.len() < MAX_CONTENT_BYTES + 2 * 1024);
    }
}
