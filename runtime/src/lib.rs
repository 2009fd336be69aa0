//! paddock: a coding-agent runtime whose tools are sandboxed WebAssembly components.
//!
//! The spine of one call, and the module that carries each stage, is drawn in
//! `docs/ARCHITECTURE.md`.
//!
//! The library prints nothing: what it has to say goes through `Observer`, `Trust`, `Approver`
//! and returned errors; only the command line (`cli`, private) prints.

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod agent;
pub mod calls;
mod cli;
pub mod contract;
pub mod hooks;
pub mod log;
mod mcp;
pub mod model;
pub mod pipeline;
pub mod plugin_store;
pub mod preset;
pub mod sandbox;
mod scaffold;
pub mod session;
mod stamp;
mod terminal;
mod tls;

pub use cli::{main, quiet_library_backtraces};
