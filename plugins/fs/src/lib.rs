//! Built-in plugin `fs`: read, write, edit and list files inside the mounts the preset grants.
//! Paths are guest paths; relative ones are relative to `/workspace`. The sandbox keeps every
//! path inside its mount; this plugin adds no checks of its own and trusts none of its own.

mod atomic;
mod edit;
mod lines;
mod list;
mod read;
mod write;

pub use edit::EditFile;
pub use list::ListDir;
pub use read::ReadFile;
pub use write::WriteFile;

paddock_sdk::export_tools!(ReadFile, WriteFile, EditFile, ListDir);
