//! list_dir: one directory's entries, directories first.

use paddock_sdk::{Output, Spec, Tool, ToolError, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

const MAX_ENTRIES: usize = 1000;

/// Arguments of list_dir.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDir {
    /// Directory to list. Relative paths are relative to /workspace. Default ".".
    #[serde(default)]
    pub path: Option<String>,
    /// Skip this many entries (to continue a cut listing). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

impl Tool for ListDir {
    const NAME: &'static str = "list_dir";

    fn spec() -> Spec {
        Spec::new(
            "List one directory (not recursive): directories first with a trailing `/`, then files \
             with their size in bytes, one per line, sorted by name. Use glob to find files by \
             pattern across directories and grep to search contents.\nPaths are relative to \
             /workspace unless absolute; the default is /workspace itself. At most 1000 entries are \
             shown; a cut listing says which offset continues it.",
        )
        .read_only()
        .path_params(&["path"])
        .example(r#"{"path": "src"}"#, "lists src/")
    }

    fn run(self) -> Result<Output, ToolError> {
        let shown = self.path.clone().unwrap_or_else(|| ".".to_string());
        let dir = resolve(&shown);
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(|e| ToolError::io(&shown, &e))? {
            let entry = entry.map_err(|e| ToolError::io(&shown, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => dirs.push(format!("{name}/")),
                Ok(meta) => files.push((name, meta.len())),
                Err(_) => files.push((name, 0)),
            }
        }
        dirs.sort();
        files.sort();
        let lines: Vec<String> = dirs
            .into_iter()
            .chain(
                files
                    .into_iter()
                    .map(|(name, size)| format!("{name}  ({size} bytes)")),
            )
            .collect();
        if lines.is_empty() {
            return Ok(Output::text(format!("({shown} is empty)")));
        }
        let offset = self.offset.unwrap_or(0);
        let page: Vec<&String> = lines.iter().skip(offset).take(MAX_ENTRIES).collect();
        let mut content = page
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let next = offset + page.len();
        if next < lines.len() {
            content.push_str(&format!(
                "\n[showing entries {}-{next} of {}; call list_dir with offset {next} to see more]",
                offset + 1,
                lines.len()
            ));
            let continuation = serde_json::json!({ "path": shown, "offset": next }).to_string();
            return Ok(Output::partial(content, continuation));
        }
        Ok(Output::text(content))
    }
}
