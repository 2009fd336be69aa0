//! grep: lines matching a regex, as `path:line:text`, paged by a cursor (file and byte offset)
//! so that each page costs what it returns (docs/output-paging.md).

use std::cell::Cell;

use paddock_sdk::{
    Output, Spec, Tool, ToolError, display_path, fuel_budget, output_budget, resolve,
};
use regex::bytes::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::page::Page;
use crate::scan::{Flow, Position, Scanned, Scanner};
use crate::walk;

const DEFAULT_MAX: usize = 100;
const HARD_MAX: usize = 1000;
const MAX_LINE_CHARS: usize = 300;
/// The host's default output budget, for a call that is not told one.
const DEFAULT_BUDGET: usize = 64 * 1024;
/// Fuel one byte of search may cost: the worst pattern measured (case-insensitive, no SIMD
/// prefilter in wasm: 41 fuel per byte, `cargo xtask bench scale`) with half again for margin.
/// A call searches what its fuel pays for at this rate, then pages the rest.
const FUEL_PER_BYTE: u64 = 64;
/// Fuel kept for starting up, compiling the regex and returning (1-3M measured).
const FIXED_FUEL: u64 = 4_000_000;
/// What opening and walking to one file costs, in bytes of search (64K fuel).
const FILE_COST: u64 = 1024;
/// What formatting one matching line costs, in bytes of search (8K fuel; 5.5K measured).
const HIT_COST: u64 = 128;

/// Arguments of grep.
#[derive(Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct Grep {
    /// Regular expression (Rust regex syntax) to search for, line by line.
    pub pattern: String,
    /// File or directory to search. Relative paths are relative to /workspace. Default ".".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only search files whose name matches this glob, e.g. "*.rs" or "src/**/*.toml".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// Match without regard to case. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub case_insensitive: bool,
    /// Most matching lines to return, up to 1000. Default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<usize>,
    /// Where to resume a cut result: copy it from the result's continuation; never write one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Cursor>,
    /// Also look in files that .gitignore, .git/info/exclude or .ignore files exclude (build
    /// output, dependencies). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_ignored: bool,
}

/// A place in the search: the file (as results show it), the byte offset of a line start in
/// it, and that line's number.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    pub file: String,
    pub byte: u64,
    pub line: u64,
}

impl Tool for Grep {
    const NAME: &'static str = "grep";

    fn spec() -> Spec {
        Spec::new(
            "Search file contents for a regular expression and return matching lines as \
             `path:line:text`, in path order. Use it to find where something is defined or used; \
             use glob to find files by name and read_file to read one.\nPaths are relative to \
             /workspace unless absolute (the default searches all of it); results show paths \
             relative to /workspace. `.git` and binary files are skipped; lines over 300 characters \
             are cut. At most max_results matches (default 100) are returned; a cut result ends \
             with the arguments that continue it (the same call with `resume`). Files that \
             .gitignore (or .ignore) excludes, such as build output, are skipped unless \
             include_ignored is true.",
        )
        .read_only()
        .path_params(&["path"])
        .example(r#"{"pattern": "fn main", "glob": "*.rs"}"#, "finds main functions in Rust files")
        .example(r#"{"pattern": "todo", "case_insensitive": true, "path": "src"}"#, "case-insensitive, under src/")
    }

    fn run(self) -> Result<Output, ToolError> {
        let regex = compile(&self.pattern, self.case_insensitive)?;
        let shown_root = self.path.clone().unwrap_or_else(|| ".".to_string());
        let root = resolve(&shown_root);
        std::fs::metadata(&root).map_err(|e| ToolError::io(&shown_root, &e))?;
        let filter = match &self.glob {
            Some(pattern) => Some((walk::matcher(pattern)?, pattern.clone())),
            None => None,
        };
        let max = self.max_results.unwrap_or(DEFAULT_MAX).clamp(1, HARD_MAX);
        let mut page = Page::new(output_budget(DEFAULT_BUDGET), max);
        let from = self.resume.as_ref().map(|c| resolve(&c.file));
        let mut scanner = Scanner::new();
        let mut stopped_at: Option<Cursor> = None;
        let mut paused: Option<Cursor> = None;
        let share = Cell::new(fuel_budget().map_or(u64::MAX, |fuel| {
            fuel.saturating_sub(FIXED_FUEL) / FUEL_PER_BYTE
        }));
        for file in walk::files(&root, self.include_ignored, from.clone()) {
            if let Some((matcher, pattern)) = &filter
                && !walk::glob_matches(matcher, pattern, &root, &file)
            {
                continue;
            }
            let start = match (&self.resume, &from) {
                (Some(c), Some(f)) if *f == file => Position {
                    byte: c.byte,
                    line: c.line.max(1),
                },
                _ => Position::START,
            };
            let shown = display_path(&file);
            if share.get() == 0 {
                paused = Some(Cursor {
                    file: shown,
                    byte: start.byte,
                    line: start.line,
                });
                break;
            }
            share.set(share.get().saturating_sub(FILE_COST));
            let mut out_of_share = None;
            let mut on_hit = |hit: crate::scan::Hit<'_>| {
                let text = String::from_utf8_lossy(hit.text);
                let text = match text.char_indices().nth(MAX_LINE_CHARS) {
                    Some((cut, _)) => format!("{}…", &text[..cut]),
                    None => text.into_owned(),
                };
                let at = Cursor {
                    file: shown.clone(),
                    byte: hit.start,
                    line: hit.line,
                };
                if share.get() < HIT_COST {
                    out_of_share = Some(at);
                    return Flow::Stop;
                }
                share.set(share.get() - HIT_COST);
                if page.push(&format!("{shown}:{}:{text}\n", hit.line), at.clone()) {
                    return Flow::Continue;
                }
                stopped_at = Some(at);
                Flow::Stop
            };
            // Unreadable files are skipped, as the walk skips unreadable directories.
            match scanner.file(&regex, &file, start, &share, &mut on_hit) {
                Ok(Scanned::Stopped) => {
                    paused = out_of_share;
                    break;
                }
                Ok(Scanned::Paused(at)) => {
                    paused = Some(Cursor {
                        file: shown,
                        byte: at.byte,
                        line: at.line,
                    });
                    break;
                }
                Ok(Scanned::Done) | Err(_) => {}
            }
        }
        if let Some(cursor) = stopped_at.or(paused.clone()) {
            return Ok(page.finish_partial(cursor, |at, shown| {
                let next = Grep {
                    resume: Some(at.clone()),
                    ..self.clone()
                };
                let args = serde_json::to_string(&next).unwrap_or_default();
                let marker = if paused.as_ref() == Some(at) {
                    format!(
                        "[{shown} matches so far; this call's share of the search (its fuel) ends at \
                         {}:{}, the rest is not searched yet; to search on call grep with {args}]",
                        at.file, at.line
                    )
                } else {
                    format!(
                        "[{shown} matches shown, more follow from {}:{}; to see them call grep with {args}]",
                        at.file, at.line
                    )
                };
                (marker, args)
            }));
        }
        if page.is_empty() {
            return Ok(Output::text(format!(
                "no matches for {:?} under {shown_root}{}",
                self.pattern,
                if self.resume.is_some() {
                    " after the cursor"
                } else {
                    ""
                }
            )));
        }
        Ok(page.finish())
    }
}

/// The regex as grep runs it: over whole chunks, `^`/`$` at line ends (CRLF too), at most 1 MiB
/// compiled.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, ToolError> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .crlf(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ToolError::invalid_args(format!("pattern is not a valid regex: {e}")))
}
