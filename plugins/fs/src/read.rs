//! read_file: numbered lines, with offset/limit paging and a continuation when cut.

use std::fmt::Write as _;
use std::io::Read;

use paddock_sdk::{Output, Overflow, Spec, Tool, ToolError, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

const DEFAULT_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
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
}

impl Tool for ReadFile {
    const NAME: &'static str = "read_file";

    fn spec() -> Spec {
        Spec::new(
            "Read a text file and return its lines numbered from 1, as `     N\\tline`.\n\
             Use it to look at a file whose path you know; use grep to find where something is, \
             glob to find files by name, list_dir to see a directory.\n\
             Paths are relative to /workspace unless absolute. At most `limit` lines (default 2000) \
             and about 100 KiB are returned; lines over 2000 characters are cut. When the result \
             is cut, it says so and gives the offset to continue from: call read_file again with \
             that offset.",
        )
        .read_only()
        .output_budget(128 * 1024, Overflow::Truncate)
        .path_params(&["path"])
        .example(r#"{"path": "src/main.rs"}"#, "reads the first 2000 lines")
        .example(r#"{"path": "src/main.rs", "offset": 2001, "limit": 500}"#, "continues a long file")
        .counter_example(r#"{"path": "src/"}"#, "a directory: use list_dir")
    }

    fn run(self) -> Result<Output, ToolError> {
        let path = resolve(&self.path);
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
        let mut file = std::fs::File::open(&path).map_err(|e| ToolError::io(&self.path, &e))?;
        // One read into a buffer of the right size: std's growing buffer costs many copies
        // across the WASI boundary.
        let size = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(ToolError::new(
                "IS_A_DIRECTORY",
                format!("{} is a directory; use list_dir", self.path),
            ));
        }
        let mut bytes = Vec::with_capacity(size + 1);
        file.read_to_end(&mut bytes)
            .map_err(|e| ToolError::io(&self.path, &e))?;
        if bytes.iter().take(8192).any(|&b| b == 0) {
            return Err(ToolError::new(
                "BINARY_FILE",
                format!(
                    "{} looks binary ({} bytes, contains NUL bytes); read_file shows text only",
                    self.path,
                    bytes.len()
                ),
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        if text.is_empty() {
            return Ok(Output::text(format!("({} is empty)", self.path)));
        }
        Ok(render(&self.path, &text, offset, limit))
    }
}

fn render(shown_path: &str, text: &str, offset: usize, limit: usize) -> Output {
    let total = text.lines().count();
    if offset > total {
        return Output::text(format!(
            "({shown_path} has {total} lines; offset {offset} is past the end)"
        ));
    }
    let mut out = String::with_capacity(text.len().min(MAX_CONTENT_BYTES) + 64);
    let mut next = offset;
    for (index, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        if out.len() + line.len().min(MAX_LINE_CHARS * 4) > MAX_CONTENT_BYTES && next > offset {
            break;
        }
        let number = index + 1;
        match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                let _ = writeln!(
                    out,
                    "{number:>6}\t{}… [line cut at {MAX_LINE_CHARS} characters]",
                    &line[..cut]
                );
            }
            None => {
                let _ = writeln!(out, "{number:>6}\t{line}");
            }
        }
        next = number + 1;
    }
    if next > total {
        return Output::text(out);
    }
    let _ = write!(
        out,
        "[showing lines {offset}-{} of {total}; call read_file with offset {next} to read on]",
        next - 1
    );
    let continuation = serde_json::json!({ "path": shown_path, "offset": next }).to_string();
    Output::partial(out, continuation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_and_paged_with_a_continuation() {
        let text = "a\nb\nc\nd\n";
        let out = render("f.txt", text, 2, 2);
        assert_eq!(
            out.content,
            "     2\tb\n     3\tc\n[showing lines 2-3 of 4; call read_file with offset 4 to read on]"
        );
        assert!(out.truncated);
        assert_eq!(
            out.continuation.as_deref(),
            Some(r#"{"offset":4,"path":"f.txt"}"#)
        );
        let rest = render("f.txt", text, 4, 2);
        assert_eq!(rest.content, "     4\td\n");
        assert!(!rest.truncated);
    }
}
