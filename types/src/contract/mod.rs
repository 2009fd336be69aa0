//! The tool contract (C1-C4): what a tool tells the model and the runtime about itself, and
//! the one shape every result takes.
//!
//! These are the host's own types. The sandbox converts the WIT records into them at the
//! boundary, so nothing past the sandbox depends on generated bindings. This module only holds
//! data and its conservative readings; it runs nothing.

mod result;
mod spec;

pub use result::{ErrorCode, ToolError, ToolOutput, ToolResult};
pub use spec::{
    Example, OutputBudget, Overflow, Reach, Risk, RuntimeMeta, ToolSpec, valid_tool_name,
};
