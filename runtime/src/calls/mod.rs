//! From a model's raw call to a validated one: the registry that finds tools by name, and
//! validation against each tool's schema (C3, V4). Repair (V3) joins here.

mod registry;
mod validate;

pub use registry::{Registry, RegistryError, ToolEntry};
pub use validate::{parse_args, validate_args};
