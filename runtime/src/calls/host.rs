//! Tools paddock serves itself, in the host process, rather than a plugin in the sandbox or an
//! MCP server: a subagent (`task`) and the skills (`skill`). They live above the calls layer
//! (they start sessions, read skill folders), so the registry holds them through this trait;
//! every call to one still goes through the whole spine (validation, hooks, approval, output
//! budget, the log), like any other tool's.

use tokio_util::sync::CancellationToken;

use paddock_types::contract::ToolResult;

/// The names of the tools the host serves: a preset's selection may name them.
pub const HOST_TOOLS: [&str; 3] = ["task", "skill", "skill_run"];

/// One call to a host tool.
pub struct HostCall<'a> {
    pub call_id: &'a str,
    /// The validated (and, by a hook, possibly rewritten and re-validated) arguments.
    pub args: &'a serde_json::Value,
    /// Cancelled when the call is (the turn is interrupted): the tool stops what it started.
    pub cancel: &'a CancellationToken,
}

/// A tool served by the host.
#[async_trait::async_trait]
pub trait HostTool: Send + Sync {
    async fn call(&self, call: HostCall<'_>) -> ToolResult;
}
