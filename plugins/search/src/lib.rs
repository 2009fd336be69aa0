//! Built-in plugin `search`: grep (contents, by regex) and glob (names, by pattern), walking the
//! mounts read-only. Hidden `.git` directories are skipped; so are files that look binary.

mod dir;
mod glob;
mod grep;
mod page;
mod scan;
mod walk;

pub use glob::Glob;
pub use grep::Grep;

paddock_sdk::export_tools!(Grep, Glob);
