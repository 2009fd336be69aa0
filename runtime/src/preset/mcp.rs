//! `[mcp.NAME]`: an MCP server the session starts and uses like a plugin (K1, S6).
//!
//! ```toml
//! [mcp.notes]
//! command = "python3"                 # a bare name (found on PATH) or an absolute path
//! args = ["server.py"]
//! env = ["PATH", "HOME"]              # host variables passed through, by name; none else
//! mounts = [{ host = ".", guest = "/workspace", mode = "ro" }]   # optional
//! read = ["~/.venvs/notes"]           # more host paths it may read and run
//! network = false                     # true lets it open internet sockets
//! timeout_ms = 30_000                 # per call; a call past it errors and the server restarts
//! output_bytes = 65_536               # results past it are cut (S5)
//! risk = "high"                       # only raises its tools' risk (K5)
//! ```
//!
//! The server runs confined like an `exec` program: the mounts (read-only ones read-only,
//! protected paths read-only), `read`, the system's read-only locations and a private
//! temporary directory; no network unless granted; PID 1 of its own namespace. It sees host
//! paths (a mount's `host` directory at that path; `guest` is the name paddock's own tools
//! use), and its working directory is the first mount's. Without mounts it sees no project
//! files and runs in its temporary directory. Parsed strictly like the rest of the preset, so an error
//! names the file, line and column.
//!
//! A server reached by URL (MCP's streamable HTTP) instead of started:
//!
//! ```toml
//! [mcp.remote]
//! url = "http://127.0.0.1:8123/mcp"
//! http = { allow = ["http://127.0.0.1:8123"] }   # required, and must cover the URL (S6)
//! timeout_ms = 30_000                            # as above, and output_bytes, risk
//! ```
//!
//! The keys for a started process (`args`, `env`, `mounts`, `read`, `network`, `memory_mb`,
//! `protect`) are refused with `url`. Its tools are never read-only (it is another machine's
//! program, with whatever it can reach). Only `http://`: paddock's MCP HTTP client is built
//! without TLS.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::context::{home_path, make_mount, program_dir};
use super::sections::{HostPattern, MountEntry, Positive, RelPath};
use super::{PresetError, ResolveContext, check_mount_is_safe};
use paddock_sandbox::{ExecGrant, Mount, Protect};
use paddock_types::contract::Risk;

/// `[mcp.NAME]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub http: Option<McpHttpEntry>,
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

/// `[mcp.NAME].http`: where a `url` server may be reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpHttpEntry {
    pub allow: Vec<HostPattern>,
}

/// An MCP server, ready to start.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedMcp {
    pub name: String,
    /// A streamable HTTP server's URL, inside `http_allow`; `command` is then empty.
    pub url: Option<String>,
    pub http_allow: Vec<String>,
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
        self.url.is_none()
            && !self.jail.network
            && self
                .mounts
                .iter()
                .all(|m| m.mode == paddock_sandbox::MountMode::Ro)
    }
}

/// CPU seconds a server may use over its whole life (`RLIMIT_CPU`).
const SERVER_CPU_SECS: u64 = 3600;

pub(super) fn resolve_mcp(
    name: &str,
    entry: &McpEntry,
    cx: &ResolveContext<'_>,
) -> Result<ResolvedMcp, PresetError> {
    if !paddock_types::contract::valid_tool_name(name) {
        return Err(PresetError(format!(
            "mcp.{name}: server names must match ^[A-Za-z0-9_-]{{1,64}}$"
        )));
    }
    let url = started_or_reached(name, entry)?;
    let mounts = safe_mounts(name, entry, cx)?;
    check_reads_are_safe(name, entry, cx)?;
    Ok(ResolvedMcp {
        name: name.to_string(),
        url,
        http_allow: entry
            .http
            .iter()
            .flat_map(|h| h.allow.iter().map(|p| p.0.clone()))
            .collect(),
        command: entry.command.clone().unwrap_or_default(),
        args: entry.args.clone(),
        mounts,
        protect: Protect {
            extra: entry.protect.iter().map(|p| p.0.clone()).collect(),
            writable: Vec::new(),
        },
        jail: jail(entry),
        call_timeout: Duration::from_millis(entry.timeout_ms.map_or(30_000, |n| n.0)),
        output_bytes: entry.output_bytes.map(|n| n.0),
        risk: entry.risk,
    })
}

/// Exactly one of `command` (a server paddock starts: no `url`, no `http`) and `url` (a
/// server reached, `check_url`); the URL when it is the latter.
fn started_or_reached(name: &str, entry: &McpEntry) -> Result<Option<String>, PresetError> {
    match (&entry.command, &entry.url) {
        (Some(command), None) if command.trim().is_empty() => Err(PresetError(format!(
            "mcp.{name}.command: name the program, e.g. \"python3\""
        ))),
        (Some(_), None) if entry.http.is_some() => Err(PresetError(format!(
            "mcp.{name}.http: only for a `url` server; a started server's network is \
             `network = true`"
        ))),
        (Some(_), None) => Ok(None),
        (None, Some(url)) => check_url(name, url, entry).map(Some),
        _ => Err(PresetError(format!(
            "mcp.{name}: give `command` (a program paddock starts confined) or `url` (a \
             streamable HTTP server), exactly one"
        ))),
    }
}

/// The server's mounts, each kept away from paddock's own data.
fn safe_mounts(
    name: &str,
    entry: &McpEntry,
    cx: &ResolveContext<'_>,
) -> Result<Vec<Mount>, PresetError> {
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
    Ok(mounts)
}

/// What the server may read beyond its mounts (`read`, and the program's own directory) must
/// stay away from paddock's own data.
fn check_reads_are_safe(
    name: &str,
    entry: &McpEntry,
    cx: &ResolveContext<'_>,
) -> Result<(), PresetError> {
    for (i, path) in entry.read.iter().enumerate() {
        super::check_grant_is_safe(
            &format!("mcp.{name}.read[{i}]"),
            &home_path(path),
            cx.data_dir,
        )?;
    }
    if let Some(dir) = entry.command.as_deref().and_then(program_dir) {
        super::check_grant_is_safe(&format!("mcp.{name}.command"), &dir, cx.data_dir)?;
    }
    Ok(())
}

/// How a started server is confined: like an `exec` program, for as long as it lives.
fn jail(entry: &McpEntry) -> ExecGrant {
    let defaults = ExecGrant::default();
    ExecGrant {
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
        ..defaults.clone()
    }
}

/// A `url` server's URL: http, no started-process keys, and covered by `http.allow`.
fn check_url(name: &str, url: &str, entry: &McpEntry) -> Result<String, PresetError> {
    let err = |m: String| PresetError(format!("mcp.{name}.url: {m}"));
    let parsed = reqwest::Url::parse(url).map_err(|e| err(format!("{url:?} is not a URL: {e}")))?;
    if parsed.scheme() != "http" {
        return Err(err(format!(
            "scheme `{}` is not supported: paddock's MCP HTTP client speaks http:// only (no \
             TLS); use a local server over http, or a stdio server",
            parsed.scheme()
        )));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(err("credentials in the URL are refused".into()));
    }
    let process_keys = [
        ("args", !entry.args.is_empty()),
        ("env", !entry.env.is_empty()),
        ("mounts", !entry.mounts.is_empty()),
        ("read", !entry.read.is_empty()),
        ("network", entry.network),
        ("memory_mb", entry.memory_mb.is_some()),
        ("protect", !entry.protect.is_empty()),
    ];
    if let Some((key, _)) = process_keys.iter().find(|(_, set)| *set) {
        return Err(PresetError(format!(
            "mcp.{name}.{key}: only for a server paddock starts (`command`); a `url` server runs \
             elsewhere"
        )));
    }
    let host = parsed.host_str().unwrap_or_default();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let allowed = entry
        .http
        .iter()
        .flat_map(|h| &h.allow)
        .any(|p| paddock_sandbox::http_allows(&p.0, "http", host, port));
    if !allowed {
        return Err(err(format!(
            "host `{host}` (port {port}, http) is not granted; add `http = {{ allow = \
             [\"http://{host}:{port}\"] }}` to [mcp.{name}]"
        )));
    }
    Ok(parsed.to_string())
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

    #[test]
    fn a_url_server_needs_a_grant_covering_it_and_no_process_keys() {
        let home = tempfile::tempdir().unwrap();
        let cx = crate::preset::ResolveContext {
            cwd: home.path(),
            data_dir: home.path(),
            spill: None,
            mount_override: None,
        };
        let resolve = |body: &str| {
            let file = crate::preset::parse("p.toml", &format!("[mcp.r]\n{body}")).expect("parses");
            super::resolve_mcp("r", &file.mcp["r"], &cx).map_err(|e| e.0)
        };
        let ok = resolve(
            "url = \"http://127.0.0.1:9000/mcp\"\nhttp = { allow = [\"http://127.0.0.1:9000\"] }",
        )
        .expect("granted");
        assert_eq!(ok.url.as_deref(), Some("http://127.0.0.1:9000/mcp"));
        assert!(!ok.read_only(), "a url server's tools are never read-only");
        for (body, says) in [
            ("url = \"http://127.0.0.1:9000/mcp\"", "is not granted"),
            (
                "url = \"http://127.0.0.1:9001/mcp\"\nhttp = { allow = [\"http://127.0.0.1:9000\"] }",
                "is not granted",
            ),
            (
                "url = \"https://example.com/mcp\"\nhttp = { allow = [\"example.com\"] }",
                "http:// only",
            ),
            (
                "url = \"http://127.0.0.1:9000/mcp\"\nhttp = { allow = [\"http://127.0.0.1:9000\"] }\nnetwork = true",
                "mcp.r.network: only for a server paddock starts",
            ),
            (
                "command = \"x\"\nurl = \"http://127.0.0.1/\"",
                "exactly one",
            ),
            ("args = []", "exactly one"),
            (
                "command = \"x\"\nhttp = { allow = [\"http://127.0.0.1\"] }",
                "only for a `url` server",
            ),
        ] {
            let err = resolve(body).expect_err(body);
            assert!(err.contains(says), "{body}: {err}");
        }
    }
}
