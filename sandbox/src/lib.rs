//! The host sandbox (S1-S7): a granted call in, a `ToolResult` out, and nothing a plugin does
//! can turn into anything else. Three parts, depending one way (`capability` → `wasm` → `fs`):
//!
//! - `fs/`: the filesystem below the guest: mounts held by descriptor, guest paths resolved
//!   under them without following a link out, protected paths that cannot be created;
//! - `wasm/`: one wasmtime `Engine`, compiled plugins, and a fresh `Store` per call (and per
//!   hook, H2) with exactly the mounts, fuel, deadline, memory and output caps the grant names;
//! - `capability/`: the host capabilities a grant may add (S6): `exec` and MCP servers through
//!   the process jail (the `paddock-jail` crate), and `http`.
//!
//! `grant.rs` is the vocabulary all three share, and `builtin.rs` the components this build
//! carries (embedded by `build.rs`). What it does not do: decide *what* is granted (the preset,
//! in the core crate), validate tool arguments (`calls`), or shape results for the model
//! (`pipeline/budget`). It knows nothing of sessions, models or logs: the crate depends only on
//! `paddock-types`, the jail and the shell judge, so the compiler keeps it that way.

#![deny(clippy::print_stdout, clippy::print_stderr)]
// Every type the interface reaches can be named by the crates built on it.
#![warn(unnameable_types)]

pub mod builtin;
mod capability;
mod fs;
mod grant;
mod layers;
mod leftovers;
mod wasm;

pub use capability::canary::{Canary, probe_in_child, run_canaries};
pub use capability::http::allows as http_allows;
pub use capability::http_addr::checked_address;
pub use capability::server::{ServerProcess, ServerSpec};
pub use capability::shell::judge::{
    ShellJudgement, ShellVerdict, admitted_command, is_follow_up, judge_program,
};
pub use capability::shell::judge_for_gate as judge_shell_command;
pub use fs::ambient::is_git_dir;
pub use fs::mount::{MountHandle, open_file_no_symlinks};
pub use fs::private_dir::create_private_dir;
pub use fs::protect::Protect;
pub use grant::{
    Capability, ExecGrant, Grant, HttpGrant, Limits, LiveOutput, Mount, MountMode, SessionState,
    SpillDir,
};
pub use layers::{Layer, layers};
pub use leftovers::{call_tag, remove_temp};
pub use paddock_jail::hide_from_programs;
pub use paddock_jail::settle as settle_finished_runs;
pub use wasm::compiled::CacheUse;
pub use wasm::described::Description;
pub use wasm::engine::Sandbox;
pub use wasm::error::LoadError;
pub use wasm::hook::{HookPlugin, Permission, PostDecision, PostToolUse, PreDecision, PreToolUse};
pub use wasm::outcome::CallReport;
pub use wasm::plugin::Plugin;
pub use wasm::stdio::Captured;
pub use wasm::store::LogLine;
pub use wasm::world::World;
