//! `{{tool}}`: a paddock tool. The struct is the tool's arguments (its doc comments describe
//! them to the model), `run` is its work. See https://docs.rs/paddock-sdk.

use paddock_sdk::{Output, Spec, Tool, ToolError, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of {{tool}}.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Text file to count. Relative paths are relative to /workspace.
    pub path: String,
}

impl Tool for Args {
    const NAME: &'static str = "{{tool}}";

    fn spec() -> Spec {
        Spec::new(
            "Count the lines and words of a text file. Use it for the size of a file; use \
             read_file to see its text. Paths are relative to /workspace. Returns one line: \
             `N lines, M words`.",
        )
        .read_only() // never writes: read-only mounts, parallel-safe, idempotent, low risk
        .path_params(&["path"])
        .example(r#"{"path": "README.md"}"#, "counts the README")
    }

    fn run(self) -> Result<Output, ToolError> {
        let text = std::fs::read_to_string(resolve(&self.path))
            .map_err(|e| ToolError::io(&self.path, &e))?;
        let lines = text.lines().count();
        let words = text.split_whitespace().count();
        Ok(Output::text(format!("{lines} lines, {words} words")))
    }
}

paddock_sdk::export_tools!(Args);
