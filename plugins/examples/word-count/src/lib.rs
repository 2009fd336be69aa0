//! The plugin from plugins/README.md, built and tested so the walk-through stays true.

use paddock_sdk::{Output, Spec, Tool, ToolError, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of count_words.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CountWords {
    /// File to count. Relative paths are relative to /workspace.
    pub path: String,
}

impl Tool for CountWords {
    const NAME: &'static str = "count_words";

    fn spec() -> Spec {
        Spec::new(
            "Count the words in a text file. Use it for sizes of prose; use read_file to see the \
             text. Paths are relative to /workspace. Returns one line: `N words`.",
        )
        .read_only() // never writes: read-only mounts, parallel-safe, idempotent, low risk
        .path_params(&["path"])
        .example(r#"{"path": "README.md"}"#, "counts the README")
    }

    fn run(self) -> Result<Output, ToolError> {
        let text = std::fs::read_to_string(resolve(&self.path))
            .map_err(|e| ToolError::io(&self.path, &e))?;
        Ok(Output::text(format!(
            "{} words",
            text.split_whitespace().count()
        )))
    }
}

paddock_sdk::export_tools!(CountWords);
