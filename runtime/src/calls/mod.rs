//! From a model's raw call to a validated one (C1-C4, V3-V8): the registry that finds tools by
//! name, tool-name aliases, argument repair, strict validation against each tool's schema, the
//! error feedback a refused call gets.

mod aliases;
mod check;
mod entry;
mod extract;
mod feedback;
mod host;
mod lenient;
mod mcp_tools;
mod registry;
mod repair;
mod strict;
mod validate;
mod warm;

pub use aliases::AliasTable;
pub use check::check_call;
#[cfg(any(test, feature = "internals"))]
pub use check::ToolIndex;
pub use entry::{Backend, HOST, ToolEntry};
pub use host::{HOST_TOOLS, HostCall, HostTool};
#[cfg(any(test, feature = "internals"))]
pub use entry::RegistryError;
pub use feedback::{Disposition, EndReason, repair_note};
pub use mcp_tools::{McpListed, pin_of};
pub use registry::Registry;
pub use repair::Repair;
pub use validate::validate_args;
