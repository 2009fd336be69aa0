//! grep: lines matching a regex, as `path:line:text`.

use std::fmt::Write as _;

use paddock_sdk::{Output, Spec, Tool, ToolError, display_path, resolve};
use regex::RegexBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::walk;

const DEFAULT_MAX: usize = 100;
const HARD_MAX: usize = 1000;
const MAX_LINE_CHARS: usize = 300;
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Arguments of grep.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Grep {
    /// Regular expression (Rust regex syntax) to search for, line by line.
    pub pattern: String,
    /// File or directory to search. Relative paths are relative to /workspace. Default ".".
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files whose name matches this glob, e.g. "*.rs" or "src/**/*.toml".
    #[serde(default)]
    pub glob: Option<String>,
    /// Match without regard to case. Default false.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Most matching lines to return, up to 1000. Default 100.
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Skip this many matches first (to continue a cut result). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Also look in files that .gitignore, .git/info/exclude or .ignore files exclude (build
    /// output, dependencies). Default false.
    #[serde(default)]
    pub include_ignored: bool,
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
             are cut. At most max_results matches (default 100) are returned; a cut result gives \
             the offset to continue from. Files that .gitignore (or .ignore) excludes, such as build \
             output, are skipped unless include_ignored is true.",
        )
        .read_only()
        .path_params(&["path"])
        .example(r#"{"pattern": "fn main", "glob": "*.rs"}"#, "finds main functions in Rust files")
        .example(r#"{"pattern": "todo", "case_insensitive": true, "path": "src"}"#, "case-insensitive, under src/")
    }

    fn run(self) -> Result<Output, ToolError> {
        let regex = RegexBuilder::new(&self.pattern)
            .case_insensitive(self.case_insensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| ToolError::invalid_args(format!("pattern is not a valid regex: {e}")))?;
        let shown_root = self.path.clone().unwrap_or_else(|| ".".to_string());
        let root = resolve(&shown_root);
        std::fs::metadata(&root).map_err(|e| ToolError::io(&shown_root, &e))?;
        let filter = match &self.glob {
            Some(pattern) => Some((walk::matcher(pattern)?, pattern.clone())),
            None => None,
        };
        let max = self.max_results.unwrap_or(DEFAULT_MAX).clamp(1, HARD_MAX);
        let offset = self.offset.unwrap_or(0);

        let mut out = String::new();
        let mut seen = 0usize;
        let mut shown = 0usize;
        for file in walk::files(&root, self.include_ignored) {
            if let Some((matcher, pattern)) = &filter
                && !walk::glob_matches(matcher, pattern, &root, &file)
            {
                continue;
            }
            if std::fs::metadata(&file)
                .map(|m| m.len() > MAX_FILE_BYTES)
                .unwrap_or(true)
            {
                continue;
            }
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            if bytes.iter().take(8192).any(|&b| b == 0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (index, line) in text.lines().enumerate() {
                if !regex.is_match(line) {
                    continue;
                }
                seen += 1;
                if seen <= offset {
                    continue;
                }
                if shown == max {
                    let next = offset + shown;
                    let _ = write!(
                        out,
                        "[more matches; call grep with offset {next} to see them]"
                    );
                    let mut args =
                        serde_json::to_value(ContinueArgs::from(&self)).unwrap_or_default();
                    args["offset"] = next.into();
                    return Ok(Output::partial(out, args.to_string()));
                }
                shown += 1;
                let text = match line.char_indices().nth(MAX_LINE_CHARS) {
                    Some((cut, _)) => format!("{}…", &line[..cut]),
                    None => line.to_string(),
                };
                let _ = writeln!(out, "{}:{}:{}", display_path(&file), index + 1, text);
            }
        }
        if shown == 0 {
            return Ok(Output::text(format!(
                "no matches for {:?} under {shown_root}",
                self.pattern
            )));
        }
        Ok(Output::text(out))
    }
}

/// The arguments of the next call, for a continuation.
#[derive(serde::Serialize)]
struct ContinueArgs {
    pattern: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    glob: Option<String>,
    case_insensitive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_results: Option<usize>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    include_ignored: bool,
}

impl From<&Grep> for ContinueArgs {
    fn from(g: &Grep) -> ContinueArgs {
        ContinueArgs {
            pattern: g.pattern.clone(),
            path: g.path.clone(),
            glob: g.glob.clone(),
            case_insensitive: g.case_insensitive,
            max_results: g.max_results,
            include_ignored: g.include_ignored,
        }
    }
}
