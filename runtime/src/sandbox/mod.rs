//! The host sandbox (SPEC S1-S7): one wasmtime `Engine`, compiled plugins, and a fresh `Store`
//! per call with exactly the mounts, fuel, deadline, memory and output caps the grant names.
//!
//! What it does not do: decide *what* is granted (that is the preset's job), validate tool
//! arguments (calls/), or shape results for the model (exec/budget). It turns a granted call
//! into a `ToolResult`, and nothing a plugin does can turn into anything else. Hooks (H2) run
//! here the same way (`hook`), and so do the host capabilities `exec` and `http` (S6).

mod bindings;
mod cache;
mod cache_key;
mod call;
mod compiled;
mod confine;
mod confined;
mod deferred;
mod described;
mod engine;
mod error;
mod exec;
mod exec_policy;
mod fsguard;
mod fsguard_host;
mod fsguard_pin;
mod fsmode;
mod grant;
mod hook;
mod http;
mod http_addr;
mod leftovers;
mod limits;
mod mount;
mod outcome;
mod placeholder;
mod plugin;
mod precompile;
mod private_dir;
mod protect;
mod protect_walk;
mod server;
mod stdio;
mod store;
mod world;

pub use compiled::CacheUse;
pub(crate) use confine::hide_from_programs;
pub use confine::settle as settle_finished_runs;
pub use described::Description;
pub use engine::Sandbox;
pub use error::LoadError;
pub use grant::{Capability, ExecGrant, Grant, HttpGrant, Limits, Mount, MountMode};
pub use hook::{HookPlugin, Permission, PostDecision, PostToolUse, PreDecision, PreToolUse};
pub(crate) use http::allows as http_allows;
pub use http_addr::checked_address;
pub use leftovers::{CALL_TAG_VAR, call_tag, remove_temp, temp_name};
pub use mount::MountHandle;
pub use outcome::{CallOutcome, CallReport};
pub use plugin::Plugin;
pub(crate) use private_dir::create_private_dir;
pub use protect::Protect;
pub use server::{ServerProcess, ServerSpec, ServerStdio};
pub use store::LogLine;
pub use world::World;
