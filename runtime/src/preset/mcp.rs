//! `[mcp.NAME]`: an MCP server the session starts and uses like a plugin (issue 16, K1, S6).
//!
//! ```toml
//! [mcp.notes]
//! command = "python3"                 # a bare name (found on PATH) or an absolute path
//! args = ["server.py"]
//! env = ["PATH", "HOME"]              # host variables passed through, by name; none else
//! mounts = [{ host = ".", guest = "/workspace", mode = "ro" }]
//! read = ["~/.venvs/notes"]           # more host paths it may read and run
//! network = false                     # true lets it open internet sockets
//! timeout_ms = 30_000                 # per call; a call past it errors and the server restarts
//! output_bytes = 65_536               # results past it are cut (S5)
//! risk = "high"                       # only raises its tools' risk (K5)
//! ```
//!
//! The server runs confined like an `exec` program: the mounts (read-only ones read-only,
//! protected paths read-only), `read`, the system's read-only locations and a private
//! temporary directory; no network unless granted; PID 1 of its own namespace. Its working
//! directory is the first mount. Parsed strictly like the rest of the preset, so an error
//! names the file, line and column.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::file::MountEntry;
use super::policy::home_path;
use super::resolve::make_mount;
use super::sections::{Positive, RelPath};
use super::{PresetError, ResolveContext, check_mount_is_safe};
use crate::contract::Risk;
use crate::sandbox::{ExecGrant, Mount, Protect};

/// `[mcp.NAME]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub mounts: Vec<MountEntry>,
    #[serde(default)]
    pub read: Vec<String>,
    #[serde(default)]
    pub network: bool,
    #[serde(default)]
    pub timeout_ms: Option<Positive>,
    #[serde(default)]
    pub output_bytes: Option<Positive>,
    #[serde(default)]
    pub memory_mb: Option<Positive>,
    #[serde(default)]
    pub risk: Option<Risk>,
    #[serde(default)]
    pub protect: Vec<RelPath>,
}

/// An MCP server, ready to start.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedMcp {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub mounts: Vec<Mount>,
    pub protect: Protect,
    /// How the process is confined: env, network, read paths, memory, processes.
    pub jail: ExecGrant,
    /// Longest single call.
    pub call_timeout: Duration,
    pub output_bytes: Option<u64>,
    pub risk: Option<Risk>,
}

impl ResolvedMcp {
    /// The kernel lets the server write nothing and reach no network.
    pub fn read_only(&self) -> bool {
        !self.jail.network
            && self
                .mounts
                .iter()
                .all(|m| m.mode == crate::sandbox::MountMode::Ro)
    }
}

/// CPU seconds a server may use over its whole life (`RLIMIT_CPU`).
const SERVER_CPU_SECS: u64 = 3600;

pub(super) fn resolve_mcp(
    name: &str,
    entry: &McpEntry,
    cx: &ResolveContext<'_>,
) -> Result<ResolvedMcp, PresetError> {
    if !crate::contract::valid_tool_name(name) {
        return Err(PresetError(format!(
            "mcp.{name}: server names must match ^[A-Za-z0-9_-]{{1,64}}$"
        )));
    }
    if entry.command.trim().is_empty() {
        return Err(PresetError(format!(
            "mcp.{name}.command: name the program, e.g. \"python3\""
        )));
    }
    let mounts = entry
        .mounts
        .iter()
        .enumerate()
        .map(|(i, m)| {
            make_mount(
                &format!("mcp.{name}.mounts[{i}]"),
                &m.host,
                &m.guest,
                m.mode,
                cx.cwd,
            )
        })
        .collect::<Result<Vec<Mount>, _>>()?;
    for mount in &mounts {
        check_mount_is_safe(mount, cx.data_dir)?;
    }
    let defaults = ExecGrant::default();
    Ok(ResolvedMcp {
        name: name.to_string(),
        command: entry.command.clone(),
        args: entry.args.clone(),
        mounts,
        protect: Protect {
            extra: entry.protect.iter().map(|p| p.0.clone()).collect(),
            writable: Vec::new(),
        },
        jail: ExecGrant {
            allow: Vec::new(),
            env: entry.env.clone(),
            timeout: Duration::from_secs(SERVER_CPU_SECS),
            output_bytes: defaults.output_bytes,
            confine: true,
            network: entry.network,
            read: entry
                .read
                .iter()
                .map(|p| home_path(p))
                .collect::<Vec<PathBuf>>(),
            write: Vec::new(),
            memory_bytes: entry.memory_mb.map_or(defaults.memory_bytes, |n| n.0 << 20),
            processes: defaults.processes,
            file_bytes: defaults.file_bytes,
        },
        call_timeout: Duration::from_millis(entry.timeout_ms.map_or(30_000, |n| n.0)),
        output_bytes: entry.output_bytes.map(|n| n.0),
        risk: entry.risk,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_mcp_section_is_parsed_strictly_with_its_line() {
        let ok = crate::preset::parse(
            "p.toml",
            "[mcp.notes]\ncommand = \"python3\"\nargs = [\"s.py\"]\nenv = [\"PATH\"]\nnetwork = false\n",
        )
        .expect("parses");
        assert_eq!(ok.mcp["notes"].args, vec!["s.py".to_string()]);
        let err = crate::preset::parse("p.toml", "[mcp.notes]\ncommand = \"x\"\nargz = []\n")
            .expect_err("unknown key");
        assert!(
            err.0.starts_with("p.toml:3:1: unknown field `argz`"),
            "{}",
            err.0
        );
        assert!(err.0.ends_with("did you mean `args`?"), "{}", err.0);
        let err = crate::preset::parse("p.toml", "[mcp.notes]\ncommand = \"x\"\ntimeout_ms = 0\n")
            .expect_err("zero timeout");
        assert!(err.0.starts_with("p.toml:3:"), "{}", err.0);
    }
}
