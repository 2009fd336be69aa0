//! write_file: create or overwrite a whole file, atomically (L7: see `atomic`).

use paddock_sdk::{Output, Spec, Tool, ToolError, resolve};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of write_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    /// File to write. Relative paths are relative to /workspace. Missing parent directories
    /// are created.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

impl Tool for WriteFile {
    const NAME: &'static str = "write_file";

    fn spec() -> Spec {
        Spec::new(
            "Create a file, or replace a file's whole content. Use it for new files and complete \
             rewrites; to change part of an existing file use edit_file, which cannot lose the rest \
             by accident.\nPaths are relative to /workspace unless absolute; missing parent \
             directories are created. Returns one line: how many bytes were written and whether the \
             file was created or overwritten.",
        )
        .writes(true)
        .path_params(&["path"])
        .example(r#"{"path": "notes/todo.md", "content": "- ship it\n"}"#, "creates notes/ if needed")
    }

    fn run(self) -> Result<Output, ToolError> {
        let path = resolve(&self.path);
        let existed = path.exists();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| ToolError::io(&self.path, &e))?;
        }
        // Temp file + rename: a crash leaves the old content or the new (L7).
        crate::atomic::replace(&path, self.content.as_bytes())
            .map_err(|e| ToolError::io(&self.path, &e))?;
        let verb = if existed { "overwrote" } else { "created" };
        Ok(Output::text(format!(
            "{verb} {} ({} bytes)",
            self.path,
            self.content.len()
        )))
    }
}
