//! The directory walk both tools share: sorted, `.git` skipped, unreadable entries skipped,
//! and, unless asked otherwise, what `.gitignore`, `.git/info/exclude` and `.ignore` files
//! exclude (build output such as `target/` or `node_modules/`), as ripgrep does. Hidden files
//! are searched.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use paddock_sdk::ToolError;

/// Files under `root` (or `root` itself when it is a file), in a stable order; with
/// `include_ignored`, also the files ignore rules exclude.
pub fn files(root: &Path, include_ignored: bool) -> impl Iterator<Item = PathBuf> {
    let respect = !include_ignored;
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .git_ignore(respect)
        .git_exclude(respect)
        .ignore(respect)
        // The sandbox has no home directory, and a mount of a subdirectory has no `.git`.
        .git_global(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.depth() == 0 || e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
}

/// Compiles a glob such as `**/*.rs`; `*` does not cross `/`.
pub fn matcher(pattern: &str) -> Result<GlobMatcher, ToolError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::invalid_args(format!("glob {pattern:?} is not valid: {e}")))
}

/// Whether `path`, taken relative to `root`, matches: a pattern without `/` matches file names
/// at any depth (`*.rs`), one with `/` matches the relative path (`src/**/*.rs`).
pub fn glob_matches(matcher: &GlobMatcher, pattern: &str, root: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    if pattern.contains('/') {
        matcher.is_match(rel)
    } else {
        path.file_name().is_some_and(|name| matcher.is_match(name))
    }
}
