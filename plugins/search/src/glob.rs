//! glob: file names matching a pattern. It never reads file contents.

use paddock_sdk::{Output, Spec, Tool, ToolError, display_path, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::walk;

const DEFAULT_MAX: usize = 200;
const HARD_MAX: usize = 2000;

/// Arguments of glob.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Glob {
    /// Glob pattern. Without a `/` it matches file names at any depth ("*.rs"); with one it
    /// matches the path relative to `path` ("src/**/*.rs"). `*` does not cross `/`; `**` does.
    pub pattern: String,
    /// Directory to search. Relative paths are relative to /workspace. Default ".".
    #[serde(default)]
    pub path: Option<String>,
    /// Most paths to return, up to 2000. Default 200.
    #[serde(default)]
    pub max_results: Option<usize>,
    /// Also look in files that .gitignore, .git/info/exclude or .ignore files exclude (build
    /// output, dependencies). Default false.
    #[serde(default)]
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
             many more matched: narrow the pattern or the path to see them.",
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
        let matches: Vec<String> = walk::files(&root, self.include_ignored)
            .filter(|file| walk::glob_matches(&matcher, &self.pattern, &root, file))
            .map(|file| display_path(&file))
            .collect();
        if matches.is_empty() {
            return Ok(Output::text(format!(
                "no files match {:?} under {shown_root}",
                self.pattern
            )));
        }
        let mut content = matches
            .iter()
            .take(max)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        if matches.len() > max {
            content.push_str(&format!(
                "\n[{} more paths matched; narrow the pattern or the path to see them]",
                matches.len() - max
            ));
            return Ok(Output {
                content,
                truncated: true,
                continuation: Some(
                    "narrow the pattern or path, or raise max_results (up to 2000)".into(),
                ),
            });
        }
        Ok(Output::text(content))
    }
}
