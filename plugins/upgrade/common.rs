// The tools the upgrade test components share: `greet` and `echo`, with the same
// descriptions, schemas and metadata in every version, so that a diff between two versions
// shows only what the version changes. Included by each crate's lib.rs.

use crate::paddock::plugin::types::{Risk, ToolError, ToolOutput, ToolSpec};

pub fn greet() -> ToolSpec {
    spec(
        "greet",
        "Greets the person named in `name`.",
        r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#,
    )
}

#[allow(dead_code)] // the narrower version lists `greet` only
pub fn echo() -> ToolSpec {
    spec(
        "echo",
        "Returns `text` unchanged.",
        r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
    )
}

fn spec(name: &str, description: &str, parameters: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: parameters.into(),
        examples: vec![],
        read_only: Some(true),
        concurrency_safe: Some(true),
        idempotent: Some(true),
        cancellable: None,
        risk: Some(Risk::Low),
        output_budget: None,
        path_params: vec![],
    }
}

/// The value of string field `field` in the JSON `args` (these tools take one string).
fn field(args: &str, field: &str) -> String {
    let key = format!("\"{field}\"");
    args.split_once(&key)
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(value, _)| value.to_string())
        .unwrap_or_default()
}

pub fn answer(version: &str, name: &str, args: &str) -> Result<ToolOutput, ToolError> {
    let content = match name {
        "greet" => format!("hello {} from {version}", field(args, "name")),
        "echo" => field(args, "text"),
        other => {
            return Err(ToolError {
                code: "UNKNOWN_TOOL".into(),
                message: format!("no tool {other}"),
                retryable: false,
            });
        }
    };
    Ok(ToolOutput {
        content,
        truncated: false,
        continuation: None,
    })
}
