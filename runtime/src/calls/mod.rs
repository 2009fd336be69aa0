//! From a model's raw call to a validated one (C1-C4, V3-V8): the registry that finds tools by
//! name, tool-name aliases, argument repair, strict validation against each tool's schema, the
//! error feedback a refused call gets, and the model-facing tool list.

mod aliases;
mod check;
mod entry;
mod extract;
mod feedback;
mod lenient;
mod mcp_tools;
mod registry;
mod repair;
mod strict;
mod tool_list;
mod validate;
mod warm;

pub use aliases::AliasTable;
pub use check::{CheckedCall, ToolIndex, check_call, closest_first};
pub use entry::{Backend, RegistryError, ToolEntry};
pub use feedback::{Disposition, EndReason, repair_note};
pub(crate) use mcp_tools::{McpListed, pin_of};
pub use registry::Registry;
pub use repair::{Repair, Repaired, STEPS_TRIED, Unparsable, Unreadable, repair_args};
pub use tool_list::{ToolListFormat, tool_entry};
pub use validate::{parse_args, validate_args};
