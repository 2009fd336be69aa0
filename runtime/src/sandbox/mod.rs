//! The host sandbox (SPEC S1-S7): one wasmtime `Engine`, compiled plugins, and a fresh `Store`
//! per call with exactly the mounts, fuel, deadline, memory and output caps the grant names.
//!
//! What it does not do: decide *what* is granted (that is the preset's job), validate tool
//! arguments (calls/), or shape results for the model (exec/budget). It turns a granted call
//! into a `ToolResult`, and nothing a plugin does can turn into anything else.

mod bindings;
mod cache;
mod call;
mod engine;
mod error;
mod grant;
mod limits;
mod plugin;
mod stdio;

pub use call::{CallOutcome, CallReport, LogLine};
pub use engine::Sandbox;
pub use error::LoadError;
pub use grant::{Capability, Grant, Limits, Mount, MountMode};
pub use plugin::Plugin;
