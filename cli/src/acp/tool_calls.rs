//! How one call is shown to the editor: a title, ACP's kind of tool, the files it touches
//! (absolute host paths, so the editor can open them) and, for a write or an edit, the change
//! as a diff. Display only: nothing here reads or writes a file; the paths are worked out from
//! the arguments against the project directory mounted at `/workspace`.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Diff, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind,
};
use serde_json::Value;

/// Where the presets mount the project.
const WORKSPACE: &str = "/workspace";

/// A call the model made, announced as pending (or as `status` when replayed).
pub fn announced(
    id: &str,
    name: &str,
    arguments: &str,
    cwd: &Path,
    status: ToolCallStatus,
) -> ToolCall {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let mut call = ToolCall::new(id.to_string(), title(name, &args))
        .kind(kind(name))
        .status(status)
        .raw_input(args.clone());
    if let Some(path) = host_path(&args, cwd) {
        call = call.locations(vec![ToolCallLocation::new(path)]);
    }
    if let Some(diff) = diff(name, &args, cwd) {
        call = call.content(vec![diff]);
    }
    call
}

/// `read_file src/main.rs`, `run_command cargo test`: the tool and its main argument.
pub fn title(name: &str, args: &Value) -> String {
    let main = ["path", "command", "program", "pattern", "url"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str));
    let text = match main {
        Some(arg) => format!("{name} {arg}"),
        None => name.to_string(),
    };
    paddock_types::text::one_line(&paddock_types::text::sanitize(&text), 120)
}

/// ACP's kind of the built-in tools; any other tool is `other`.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "list_dir" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "grep" | "glob" => ToolKind::Search,
        "run_command" | "shell" | "write_stdin" => ToolKind::Execute,
        "fetch_url" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

/// The host path a call's `path` names: relative to the workspace, or under `/workspace`.
fn host_path(args: &Value, cwd: &Path) -> Option<PathBuf> {
    let path = args.get("path")?.as_str()?;
    let relative = match path.strip_prefix(WORKSPACE) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.trim_start_matches('/'),
        Some(_) => return None,
        None if path.starts_with('/') => return None,
        None => path,
    };
    if Path::new(relative)
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return None;
    }
    Some(cwd.join(relative))
}

/// The change a write or an edit asks for, as the editor shows a diff.
fn diff(name: &str, args: &Value, cwd: &Path) -> Option<ToolCallContent> {
    let path = host_path(args, cwd)?;
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let diff = match name {
        "write_file" => Diff::new(path, text("content")?),
        "edit_file" => Diff::new(path, text("new_string")?).old_text(text("old_string")?),
        _ => return None,
    };
    Some(diff.into())
}
