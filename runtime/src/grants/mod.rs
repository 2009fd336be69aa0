//! What a session may do, as one comparable value, and the proof that a child's is within its
//! parent's: subagents (`task`) and a skill's declared needs are checked by the same function
//! before anything of theirs runs.
//!
//! - this file: `Effective`, the grants of a session dimension by dimension, and `Wider`,
//!   the first dimension in which a child asks for more;
//! - `of_preset.rs`: a resolved preset's grants, host paths taken from the descriptors its
//!   mounts hold;
//! - `contain.rs`: `within(parent, child)`, pure;
//! - `commands.rs`, `hosts.rs`: when one allow pattern (a command, a network host) provably
//!   covers another; what cannot be proved is not covered.
//!
//! What it does not do: widen or narrow anything. A child that is not within its parent is
//! refused, naming the dimension, never silently cut down, so what runs is what was asked for.

mod commands;
mod contain;
mod hosts;
mod of_preset;

use std::path::PathBuf;

use serde::Serialize;

use crate::preset::ApprovalPolicy;

pub use contain::within;
pub use of_preset::{effective, with_tools};

/// The grants of a session, each dimension as the containment proof compares it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effective {
    /// Host paths its tools and programs reach, each with its mode.
    pub paths: Vec<HostPath>,
    /// Paths kept read-only inside the mounts beyond the defaults (`protect`), and defaults
    /// it lets be written (`writable_protected`), over all its grants.
    pub protect: Vec<String>,
    pub writable_protected: Vec<String>,
    /// Its programs' rules, one per exec grant.
    pub exec: Vec<ExecRules>,
    pub network: Network,
    /// Its hooks, each as one identity: where it comes from, its code's pin, when it runs, on
    /// which tools, how it fails, and its configuration.
    pub hooks: Vec<String>,
    pub approval: ApprovalPolicy,
    pub budgets: Budgets,
    pub depth: Depth,
    /// The plugins and MCP servers whose tools it offers, each as one identity.
    pub tools: Vec<String>,
    /// Each plugin's own grant (its mounts, capabilities, limits and kept tools), then each
    /// MCP server's (its paths, network and environment, limits and kept tools), compared
    /// with the parent's of the same identity: the session-wide union above could not see a
    /// grant moved from one plugin or server to another, or a limit raised.
    pub plugins: Vec<PluginGrant>,
    /// The host's tools (`task`, `skill`, `skill_run`) its preset keeps, when known
    /// (`with_tools`).
    pub host_tools: Option<Vec<String>>,
}

/// One plugin's grant as the proof compares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PluginGrant {
    /// The same identity as in `Effective::tools`.
    pub identity: String,
    /// `plugins.NAME` or `mcp.NAME`, for messages.
    pub key: String,
    pub paths: Vec<HostPath>,
    /// What it may import beyond WASI (`exec`, `http`), with an allow-list or not.
    pub capabilities: Vec<String>,
    pub limits: Vec<Limit>,
    /// The names of its tools the preset keeps, when its tool list is known (`with_tools`).
    pub enabled: Option<Vec<String>>,
}

/// One limit of a plugin: fuel, a deadline, memory, an output budget, a program's limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Limit {
    /// The preset key, relative to the plugin (`limits.fuel`, `grants.exec.timeout`).
    pub key: String,
    /// `None`: not set, which means `unset`.
    pub value: Option<u64>,
    pub unset: Unset,
}

/// What a limit that is not set means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unset {
    /// No limit at all (fuel off).
    Unlimited,
    /// Each tool's own (an output budget): not comparable with a number, so only unset is
    /// within unset.
    ToolsOwn,
}

/// The tools of the plugins a session loads, for `with_tools`: by plugin identity (as in
/// `Effective::tools`), and the host's own under `host`.
#[derive(Debug, Clone, Default)]
pub struct ToolLists {
    pub by_identity: std::collections::HashMap<String, Vec<String>>,
    /// The owner the host's tools are kept under in a preset's `[tools]`, and their names.
    pub host: (String, Vec<String>),
}

/// A host path and how it may be used. `path` is the real path: for a mount, the one its held
/// descriptor was opened at (no symlink on the way), with the descriptor's device and inode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostPath {
    pub path: PathBuf,
    pub write: bool,
    /// (device, inode) of the held directory, when it is a mount.
    pub identity: Option<(u64, u64)>,
    /// The preset key that grants it, for messages.
    pub key: String,
}

/// One exec grant's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExecRules {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
    /// Environment variables passed through.
    pub env: Vec<String>,
    /// Programs run in the kernel jail.
    pub confine: bool,
    pub key: String,
}

/// What of the network is reachable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Network {
    /// Programs may open internet sockets (`network = true`).
    pub programs: bool,
    /// Hosts the `http` capability and MCP servers by URL may reach (`host`, `*.host`, with
    /// an optional scheme and port).
    pub hosts: Vec<String>,
}

/// Loop budgets a session may spend.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Budgets {
    pub turns: u64,
    pub tokens: u64,
    pub wall_secs: u64,
    pub cost_usd: f64,
    /// Children it may run at once.
    pub subagents: u64,
}

/// Where a session stands among its ancestors: `at` 0 is a session started by a person, its
/// children are at 1; no session deeper than `max` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Depth {
    pub at: u64,
    pub max: u64,
}

/// A grant dimension, named as refusals name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dimension {
    Mounts,
    Exec,
    Network,
    Hooks,
    Approval,
    Budgets,
    Depth,
    Tools,
    Limits,
}

impl Dimension {
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Mounts => "mounts",
            Dimension::Exec => "exec",
            Dimension::Network => "network",
            Dimension::Hooks => "hooks",
            Dimension::Approval => "approval",
            Dimension::Budgets => "budgets",
            Dimension::Depth => "depth",
            Dimension::Tools => "tools",
            Dimension::Limits => "limits",
        }
    }
}

/// The first dimension in which a child would have more than its parent, and what exactly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wider than its parent in {}: {detail}", dimension.as_str())]
pub struct Wider {
    pub dimension: Dimension,
    pub detail: String,
}
