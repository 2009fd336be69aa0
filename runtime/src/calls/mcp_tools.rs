//! An MCP server's tools in the registry: named as the server names them, or
//! `SERVER_TOOL` when that name is taken (or is not a valid tool name); metadata read
//! conservatively from the server's annotations (`mcp::meta_from_annotations`), the preset's
//! `risk` only raising it; the server's mounts as the tools' grant (for path locks), and its
//! `output_bytes` as their budget. A tool whose schema does not compile is skipped with a
//! warning: the server's word is never trusted to be well-formed. A tool the server runs only
//! as a task is listed (pinned) but not registered; the session warns about it at start.

use std::collections::HashMap;
use std::sync::Arc;

use super::entry::{Backend, RegistryError, ToolEntry};
use paddock_types::contract::{OutputBudget, ToolSpec, valid_tool_name};
use crate::mcp::{McpServer, McpTool, meta_from_annotations};
use crate::plugin_store::lock::{ToolPin, pin};
use crate::preset::ResolvedMcp;
use paddock_sandbox::Grant;

/// One tool as the server's `tools/list` gave it, pinned for the lock, with the name it was
/// registered under (none when it was skipped).
#[derive(Debug, Clone)]
pub struct McpListed {
    pub remote: String,
    pub registered: Option<String>,
    pub pin: ToolPin,
    /// Left out because the server runs it only as a task (the session warns at start).
    pub task_only: bool,
}

/// The pin of an MCP tool as listed: name, description, input schema, annotations.
pub fn pin_of(tool: &rmcp::model::Tool) -> ToolPin {
    let schema = serde_json::Value::Object((*tool.input_schema).clone());
    let annotations = serde_json::to_value(&tool.annotations).unwrap_or_default();
    pin::mcp_tool(
        &tool.name,
        tool.description.as_deref().unwrap_or(""),
        &schema,
        &annotations,
    )
}

/// The tools of server `resolved`, started, as registry entries in the server's order, and
/// every tool it listed, pinned; each name is recorded in `owner` (tool name to owner) so it
/// is never taken twice.
pub(super) async fn load(
    owner: &mut HashMap<String, String>,
    resolved: &ResolvedMcp,
) -> Result<(Vec<(String, ToolEntry)>, Vec<McpListed>), RegistryError> {
    let (server, offered) = McpServer::start(resolved.clone()).await?;
    let tools = offered.tools;
    let mut entries = Vec::new();
    let mut listed: Vec<McpListed> = tools
        .iter()
        .map(|tool| McpListed {
            remote: tool.name.to_string(),
            registered: None,
            pin: pin_of(tool),
            task_only: false,
        })
        .collect();
    let task_only = offered.task_only.iter().map(|tool| McpListed {
        remote: tool.name.to_string(),
        registered: None,
        pin: pin_of(tool),
        task_only: true,
    });
    let task_only: Vec<McpListed> = task_only.collect();
    let key = format!("mcp.{}", resolved.name);
    for (index, tool) in tools.into_iter().enumerate() {
        let remote = tool.name.to_string();
        let mut name = remote.clone();
        if owner.contains_key(&name) || !valid_tool_name(&name) {
            name = format!("{}_{}", resolved.name, sanitized(&remote));
        }
        if !valid_tool_name(&name) {
            tracing::warn!("{key}: tool {remote:?} has no usable name; skipped");
            continue;
        }
        if let Some(first) = owner.insert(name.clone(), key.clone()) {
            return Err(RegistryError::Collision {
                tool: name,
                first,
                second: key,
            });
        }
        let parameters = serde_json::Value::Object((*tool.input_schema).clone());
        let validator = match jsonschema::validator_for(&parameters) {
            Ok(v) => Arc::new(v),
            Err(e) => {
                tracing::warn!(
                    "{key}: tool {remote:?} has a schema that does not compile ({e}); skipped"
                );
                owner.remove(&name);
                continue;
            }
        };
        let mut meta = meta_from_annotations(tool.annotations.as_ref(), resolved.read_only());
        meta.raise_risk(resolved.risk);
        let mut budget = OutputBudget::DEFAULT;
        if let Some(max) = resolved.output_bytes {
            budget.max_bytes = max;
        }
        meta.output_budget = Some(budget);
        let spec = ToolSpec {
            name: name.clone(),
            description: tool.description.as_deref().unwrap_or("").to_string(),
            parameters,
            examples: Vec::new(),
            meta,
        };
        listed[index].registered = Some(name.clone());
        entries.push((
            name,
            ToolEntry {
                spec,
                backend: Backend::Mcp(McpTool {
                    server: server.clone(),
                    remote,
                }),
                grant: Grant {
                    mounts: resolved.mounts.clone(),
                    protect: resolved.protect.clone(),
                    ..Grant::default()
                },
                budget,
                validator,
            },
        ));
    }
    listed.extend(task_only);
    Ok((entries, listed))
}

/// Letters, digits, `_` and `-` kept; anything else becomes `_`.
fn sanitized(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect()
}
