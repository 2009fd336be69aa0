//! glob: file names matching a pattern. It never reads file contents.

use paddock_sdk::{Output, Spec, Tool, ToolError, display_path, output_budget, resolve};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::page::Page;
use crate::walk;

const DEFAULT_MAX: usize = 200;
const HARD_MAX: usize = 2000;
/// The host's default output budget, for a call that is not told one.
const DEFAULT_BUDGET: usize = 64 * 1024;

/// Arguments of glob.
#[derive(Deserialize, Serialize, JsonSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct Glob {
    /// Glob pattern. Without a `/` it matches file names at any depth ("*.rs"); with one it
    /// matches the path relative to `path` ("src/**/*.rs"). `*` does not cross `/`; `**` does.
    pub pattern: String,
    /// Directory to search. Relative paths are relative to /workspace. Default ".".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Most paths to return, up to 2000. Default 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<usize>,
    /// Where to resume a cut result (the first path not shown): copy it from the result's
    /// continuation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// Also look in files that .gitignore, .git/info/exclude or .ignore files exclude (build
    /// output, dependencies). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_ignored: bool,
}

impl Tool for Glob {
    const NAME: &'static str = "glob";

    fn spec() -> Spec {
        Spec::new(
            "Find files by name pattern and return their paths, one per line, sorted. It matches \
             names only and does not search file contents: use grep for that.\nPaths are relative \
             to /workspace unless absolute, and results are shown relative to /workspace. `.git` is \
             skipped, and so are files that .gitignore (or .ignore) excludes unless \
             include_ignored is true. At most max_results paths (default 200) are returned; a cut result says how \
             many more matched and ends with the arguments that continue it (the same call with \
             `resume`).",
        )
        .read_only()
        .path_params(&["path"])
        .example(r#"{"pattern": "*.toml"}"#, "every TOML file at any depth")
        .example(r#"{"pattern": "src/**/*.rs"}"#, "Rust files under src/")
        .counter_example(r#"{"pattern": "fn main"}"#, "searching contents: use grep")
    }

    fn run(self) -> Result<Output, ToolError> {
        let matcher = walk::matcher(&self.pattern)?;
        let shown_root = self.path.clone().unwrap_or_else(|| ".".to_string());
        let root = resolve(&shown_root);
        std::fs::metadata(&root).map_err(|e| ToolError::io(&shown_root, &e))?;
        let max = self.max_results.unwrap_or(DEFAULT_MAX).clamp(1, HARD_MAX);
        let mut page = Page::new(output_budget(DEFAULT_BUDGET), max);
        let from = self.resume.as_deref().map(resolve);
        let mut matches = walk::files(&root, self.include_ignored, from)
            .filter(|file| walk::glob_matches(&matcher, &self.pattern, &root, file));
        let mut stopped_at = None;
        for file in matches.by_ref() {
            let shown = display_path(&file);
            if !page.push(&format!("{shown}\n"), shown.clone()) {
                stopped_at = Some(shown);
                break;
            }
        }
        let Some(next) = stopped_at else {
            if page.is_empty() {
                return Ok(Output::text(format!(
                    "no files match {:?} under {shown_root}",
                    self.pattern
                )));
            }
            return Ok(page.finish());
        };
        // The rest is counted, not shown: the walk never reads file contents.
        let rest = 1 + matches.count();
        let shown_count = page.len();
        Ok(page.finish_partial(next, |at, shown| {
            let next = Glob {
                resume: Some(at.clone()),
                ..self.clone()
            };
            let args = serde_json::to_string(&next).unwrap_or_default();
            let more = rest + (shown_count - shown);
            let marker = format!(
                "[{more} more paths matched; narrow the pattern or the path, or see them with glob {args}]"
            );
            (marker, args)
        }))
    }
}
