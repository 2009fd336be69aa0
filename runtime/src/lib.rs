//! paddock: a coding-agent runtime whose tools are sandboxed WebAssembly components.
//!
//! The spine of one call, and the module that carries each stage, is drawn in
//! `docs/ARCHITECTURE.md`.

pub mod agent;
pub mod calls;
mod cli;
pub mod contract;
pub mod exec;
pub mod hooks;
pub mod log;
mod mcp;
pub mod model;
pub mod plugin_store;
pub mod preset;
pub mod sandbox;
mod scaffold;
pub mod session;
mod stamp;
mod terminal;

pub use cli::{main, quiet_library_backtraces};
