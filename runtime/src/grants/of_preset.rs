//! A resolved preset's grants as the containment proof compares them. A mount's host path is
//! the one its held descriptor was opened at (symlink-free), with the descriptor's device and
//! inode; other host paths (an exec grant's `read` and `write`, an MCP server's) are resolved
//! to real paths as far as they exist. The session's own spill directory (inside paddock's
//! data directory, the only grant that may be) is each session's own and not compared.

use std::path::Path;

use super::{
    Budgets, Depth, Effective, ExecRules, HostPath, Limit, Network, PluginGrant, ToolLists, Unset,
};
use crate::preset::{ResolvedPreset, real_path_of as real};
use paddock_sandbox::{ExecGrant, Grant, Mount, MountMode};

/// The grants of a session running `preset` at depth `at` (0: started by a person), whose
/// data directory is `data_dir`.
pub fn effective(preset: &ResolvedPreset, at: u64, data_dir: &Path) -> Effective {
    let data = real(data_dir);
    let mut e = Effective {
        paths: Vec::new(),
        protect: Vec::new(),
        writable_protected: Vec::new(),
        exec: Vec::new(),
        network: Network::default(),
        hooks: preset.hooks.iter().map(hook_identity).collect(),
        approval: preset.approval,
        budgets: Budgets {
            turns: preset.limits.max_turns,
            tokens: preset.limits.max_tokens,
            wall_secs: preset.limits.max_wall_secs,
            cost_usd: preset.limits.max_cost_usd,
            subagents: preset.limits.max_subagents,
        },
        depth: Depth {
            at,
            max: preset.limits.max_depth,
        },
        tools: Vec::new(),
        plugins: Vec::new(),
        host_tools: None,
    };
    for plugin in &preset.plugins {
        let key = format!("plugins.{}", plugin.name);
        let before = e.paths.len();
        grant_into(&mut e, &key, &plugin.grant, &data);
        let identity = plugin_identity(plugin);
        e.tools.push(identity.clone());
        e.plugins.push(PluginGrant {
            identity,
            paths: e.paths[before..].to_vec(),
            capabilities: capabilities(&plugin.grant),
            limits: limits(plugin),
            enabled: None,
            key,
        });
    }
    for server in &preset.mcp {
        let key = format!("mcp.{}", server.name);
        let before = e.paths.len();
        for (i, mount) in server.mounts.iter().enumerate() {
            e.paths
                .push(mount_path(&format!("{key}.mounts[{i}]"), mount));
        }
        exec_paths(&mut e, &key, &server.jail);
        e.network.programs |= server.jail.network;
        e.network.hosts.extend(server.http_allow.iter().cloned());
        let identity = mcp_identity(server);
        e.tools.push(identity.clone());
        e.plugins.push(PluginGrant {
            identity,
            paths: e.paths[before..].to_vec(),
            capabilities: mcp_capabilities(server),
            limits: mcp_limits(server),
            enabled: None,
            key,
        });
    }
    e
}

/// An MCP server as one identity: where it is, or what runs it.
fn mcp_identity(server: &crate::preset::ResolvedMcp) -> String {
    match &server.url {
        Some(url) => format!("mcp server {} at {url}", server.name),
        None => format!(
            "mcp server {} running {:?}",
            server.name,
            std::iter::once(&server.command)
                .chain(&server.args)
                .collect::<Vec<_>>()
        ),
    }
}

/// An MCP server's limits as its preset entry sets them (`timeout_ms` of a call,
/// `output_bytes`, `memory_mb`); the rest of its jail is the same for every server.
fn mcp_limits(server: &crate::preset::ResolvedMcp) -> Vec<Limit> {
    vec![
        Limit {
            key: "timeout_ms".into(),
            value: Some(millis(server.call_timeout)),
            unset: Unset::Unlimited,
        },
        Limit {
            key: "output_bytes".into(),
            value: server.output_bytes,
            unset: Unset::ToolsOwn,
        },
        Limit {
            key: "memory_mb (bytes)".into(),
            value: Some(server.jail.memory_bytes),
            unset: Unset::Unlimited,
        },
    ]
}

/// What an MCP server may reach beyond its paths: the network, and each environment
/// variable passed to it (a token is a grant).
fn mcp_capabilities(server: &crate::preset::ResolvedMcp) -> Vec<String> {
    let network = server.jail.network.then(|| "network (network = true)".to_string());
    network
        .into_iter()
        .chain(server.jail.env.iter().map(|v| format!("the environment variable {v} (env)")))
        .collect()
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A plugin as one identity: its code's origin and pin.
fn plugin_identity(plugin: &crate::preset::ResolvedPlugin) -> String {
    format!(
        "plugin {} ({})",
        source_text(&plugin.source),
        plugin.sha256.as_deref().unwrap_or("any version")
    )
}

/// What a plugin may import beyond WASI, and which of those have an allow-list.
fn capabilities(grant: &Grant) -> Vec<String> {
    let mut all: Vec<String> = grant
        .capabilities
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    if grant.exec.is_some() {
        all.push("exec (grants.exec)".into());
    }
    if grant.http.is_some() {
        all.push("http (grants.http)".into());
    }
    all
}

/// A plugin's limits, each as the proof compares it.
fn limits(plugin: &crate::preset::ResolvedPlugin) -> Vec<Limit> {
    let limit = |key: &str, value: Option<u64>, unset: Unset| Limit {
        key: key.to_string(),
        value,
        unset,
    };
    let exact = |key: &str, value: u64| limit(key, Some(value), Unset::Unlimited);
    let l = &plugin.grant.limits;
    let mut all = vec![
        limit("limits.fuel", l.fuel, Unset::Unlimited),
        exact("limits.timeout (ms)", millis(l.timeout)),
        exact("limits.memory_bytes", l.memory_bytes),
        limit(
            "output_bytes",
            plugin.output_bytes.or(l.output_bytes),
            Unset::ToolsOwn,
        ),
        exact("limits.stdio_bytes", l.stdio_bytes as u64),
    ];
    if let Some(exec) = &plugin.grant.exec {
        all.extend([
            exact("grants.exec.timeout (ms)", millis(exec.timeout)),
            exact("grants.exec.output_bytes", exec.output_bytes as u64),
            exact("grants.exec.memory_bytes", exec.memory_bytes),
            exact("grants.exec.processes", exec.processes),
            exact("grants.exec.file_bytes", exec.file_bytes),
        ]);
    }
    if let Some(http) = &plugin.grant.http {
        all.extend([
            exact("grants.http.timeout (ms)", millis(http.timeout)),
            exact(
                "grants.http.max_response_bytes",
                http.max_response_bytes as u64,
            ),
        ]);
    }
    all
}

/// Fills in which tools `preset` keeps, now that the plugins' tool lists are known: each
/// plugin's, by identity, and the host's. A plugin whose list is not given stays unknown.
pub fn with_tools(e: &mut Effective, preset: &ResolvedPreset, lists: &ToolLists) {
    // `effective` lists the plugins, then the MCP servers (whose tools are kept under
    // `mcp.NAME`).
    let owners = preset
        .plugins
        .iter()
        .map(|p| p.name.clone())
        .chain(preset.mcp.iter().map(|m| format!("mcp.{}", m.name)));
    for (grant, owner) in e.plugins.iter_mut().zip(owners) {
        grant.enabled = lists.by_identity.get(&grant.identity).map(|tools| {
            tools
                .iter()
                .filter(|tool| preset.keeps(&owner, tool))
                .cloned()
                .collect()
        });
    }
    let (owner, names) = &lists.host;
    e.host_tools = Some(
        names
            .iter()
            .filter(|tool| preset.keeps(owner, tool))
            .cloned()
            .collect(),
    );
}

fn grant_into(e: &mut Effective, key: &str, grant: &Grant, data: &Path) {
    for (i, mount) in grant.mounts.iter().enumerate() {
        let path = mount_path(&format!("{key}.mounts[{i}]"), mount);
        // The spill directory: this session's own, read-only, inside the data directory.
        if path.path.starts_with(data) && !path.write {
            continue;
        }
        e.paths.push(path);
    }
    for p in &grant.protect.extra {
        e.protect.push(p.display().to_string());
    }
    for p in &grant.protect.writable {
        e.writable_protected.push(p.display().to_string());
    }
    if let Some(exec) = &grant.exec {
        let exec_key = format!("{key}.grants.exec");
        exec_paths(e, &exec_key, exec);
        e.network.programs |= exec.network;
        e.exec.push(ExecRules {
            allow: exec.allow.clone(),
            ask: exec.ask.clone(),
            deny: exec.deny.clone(),
            env: exec.env.clone(),
            confine: exec.confine,
            key: exec_key,
        });
    }
    if let Some(http) = &grant.http {
        e.network.hosts.extend(http.allow.iter().cloned());
    }
}

fn exec_paths(e: &mut Effective, key: &str, exec: &ExecGrant) {
    for (list, write, paths) in [("read", false, &exec.read), ("write", true, &exec.write)] {
        for (i, p) in paths.iter().enumerate() {
            e.paths.push(HostPath {
                path: real(p),
                write,
                identity: None,
                key: format!("{key}.{list}[{i}]"),
            });
        }
    }
}

/// A mount's host path as its held descriptor names it; a mount that cannot be held keeps
/// its path, with no identity (so it never counts as the same directory as another).
fn mount_path(key: &str, mount: &Mount) -> HostPath {
    let (path, identity) = match mount.held() {
        Ok(handle) if handle.verify().is_ok() => {
            (handle.path().to_path_buf(), Some(handle.identity()))
        }
        _ => (real(&mount.host), None),
    };
    HostPath {
        path,
        write: mount.mode == MountMode::Rw,
        identity,
        key: format!("{key} ({})", mount.guest),
    }
}

fn source_text(source: &crate::preset::PluginSource) -> String {
    match source {
        crate::preset::PluginSource::Builtin(n) => format!("builtin:{n}"),
        crate::preset::PluginSource::Installed(n) => n.clone(),
        crate::preset::PluginSource::Path(p) => p.display().to_string(),
    }
}

/// A hook as one comparable identity: its code, when and on what it runs, how it fails and
/// what it is told.
fn hook_identity(hook: &crate::preset::ResolvedHook) -> String {
    format!(
        "`{}` ({:?}, {}, on {}, on_error {:?}, config {})",
        source_text(&hook.source),
        hook.on,
        hook.sha256.as_deref().unwrap_or("any version"),
        hook.matcher,
        hook.on_error,
        hook.config
    )
    .to_lowercase()
}
