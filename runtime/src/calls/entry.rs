//! One registered tool and what runs it (a WASM plugin in the sandbox, or an MCP server
//! started confined), and why a preset's tools could not all be registered.

use std::sync::Arc;

use paddock_types::contract::{OutputBudget, ToolSpec};
use crate::plugin_store::StoreError;
use paddock_sandbox::{Grant, Plugin};

/// Why a preset's plugins could not all be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("plugin `{plugin}`: {source}")]
    Store { plugin: String, source: StoreError },
    #[error(
        "tool `{tool}` is defined by both plugin `{first}` and plugin `{second}`; pick one in the \
         preset: `tools.disable = [\"{second}:{tool}\"]` keeps `{first}`'s, \
         `tools.disable = [\"{first}:{tool}\"]` keeps `{second}`'s"
    )]
    Collision {
        tool: String,
        first: String,
        second: String,
    },
    #[error(
        "plugins.{plugin}.tool_risk names tool `{tool}`, which plugin `{plugin}` does not \
         provide (its tools: {known}); fix the name or remove the entry"
    )]
    UnknownToolRisk {
        plugin: String,
        tool: String,
        known: String,
    },
    #[error("{0}")]
    Mcp(#[from] crate::mcp::McpError),
}

/// What runs a tool: a WASM plugin in the sandbox, or an MCP server started confined.
#[derive(Clone)]
pub enum Backend {
    Plugin(Plugin),
    Mcp(crate::mcp::McpTool),
    /// Served by paddock itself (`task`, `skill`).
    Host(Arc<dyn super::host::HostTool>),
}

/// What `ToolEntry::owner` names a host tool's owner (`tools.disable = ["paddock:task"]`).
pub const HOST: &str = "paddock";

/// One tool, with everything needed to run it.
pub struct ToolEntry {
    pub spec: ToolSpec,
    pub backend: Backend,
    pub grant: Grant,
    /// The preset's budget, else the tool's own, else the default.
    pub budget: OutputBudget,
    pub validator: Arc<jsonschema::Validator>,
}

impl ToolEntry {
    /// The WASM plugin that runs this tool, unless an MCP server does.
    pub fn plugin(&self) -> Option<&Plugin> {
        match &self.backend {
            Backend::Plugin(plugin) => Some(plugin),
            Backend::Mcp(_) | Backend::Host(_) => None,
        }
    }

    /// The plugin's name, or `mcp.NAME` for an MCP server's tool.
    pub fn owner(&self) -> String {
        match &self.backend {
            Backend::Plugin(plugin) => plugin.name.clone(),
            Backend::Mcp(tool) => format!("mcp.{}", tool.server.spec.name),
            Backend::Host(_) => HOST.to_string(),
        }
    }
}
