//! Resolving what a preset says about capabilities, hooks, approval and loop budgets (P1, S6,
//! H2, C2, B3): defaults filled in, so `preset show` prints exactly what a session enforces.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::PresetError;
use super::context::{PluginSource, ResolveContext, home_path, make_mount, program_dir};
use super::file::PresetFile;
use super::sections::{
    ApprovalMode, ConfineMode, FuelSetting, GrantsEntry, HookEntry, HookPhase, OnError,
};
use paddock_sandbox::{Capability, ExecGrant, Grant, HttpGrant, Limits, Protect};

/// Loop budgets with defaults filled in (B3, X1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopBudgets {
    pub max_turns: u64,
    pub max_tokens: u64,
    pub max_wall_secs: u64,
    pub max_cost_usd: f64,
    pub max_parallel_tool_calls: u64,
    /// Subagents that may run at once (`task`).
    pub max_subagents: u64,
    /// How deep subagents may nest below the session a person started.
    pub max_depth: u64,
    /// Send a wrap-up message once a budget is nearly spent (B3).
    pub wrap_up: bool,
}

/// `[checkpoints]` with defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointPolicy {
    pub enabled: bool,
    pub max_files: u64,
    pub max_total_bytes: u64,
    pub max_file_bytes: u64,
    pub exclude_vcs_ignored: bool,
    pub grain: super::sections::Grain,
    /// Record the exec grants' `write` directories outside the mounts.
    pub grants: bool,
}

impl Default for CheckpointPolicy {
    fn default() -> CheckpointPolicy {
        PresetFile::default().checkpoint_policy()
    }
}

/// Risk tier => what happens (C2). Defaults: low and medium allow, high asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ApprovalPolicy {
    pub low: ApprovalMode,
    pub medium: ApprovalMode,
    pub high: ApprovalMode,
}

impl Default for ApprovalPolicy {
    fn default() -> ApprovalPolicy {
        ApprovalPolicy {
            low: ApprovalMode::Allow,
            medium: ApprovalMode::Allow,
            high: ApprovalMode::Ask,
        }
    }
}

/// One hook, ready to load.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedHook {
    pub name: String,
    /// Position in the preset's `hooks` list, for messages: `hooks[2]`.
    pub index: usize,
    pub source: PluginSource,
    pub sha256: Option<String>,
    pub on: HookPhase,
    /// Anchored regular expression on tool names.
    pub matcher: String,
    pub on_error: OnError,
    pub grant: Grant,
    /// The hook's `config` table as JSON text.
    pub config: String,
}

/// Limits a hook gets unless its entry says otherwise: hooks run on every call, so they are
/// kept small.
pub fn hook_limits() -> Limits {
    Limits {
        fuel: Some(200_000_000),
        timeout: Duration::from_millis(1000),
        memory_bytes: 64 << 20,
        output_bytes: None,
        stdio_bytes: 16 << 10,
    }
}

impl PresetFile {
    pub fn budgets(&self) -> LoopBudgets {
        let l = &self.limits;
        LoopBudgets {
            max_turns: l.max_turns.map_or(50, |n| n.0),
            max_tokens: l.max_tokens.map_or(400_000, |n| n.0),
            max_wall_secs: l.max_wall_secs.map_or(1800, |n| n.0),
            max_cost_usd: l.max_cost_usd.map_or(2.0, |d| d.0),
            max_parallel_tool_calls: l.max_parallel_tool_calls.map_or(8, |n| n.0),
            max_subagents: l.max_subagents.map_or(2, |n| n.0),
            max_depth: l.max_depth.unwrap_or(1),
            wrap_up: l.wrap_up.unwrap_or(true),
        }
    }

    pub fn checkpoint_policy(&self) -> CheckpointPolicy {
        let c = &self.checkpoints;
        let mb = |n: super::sections::Positive| n.0.saturating_mul(1024 * 1024);
        CheckpointPolicy {
            enabled: c.enabled.unwrap_or(true),
            max_files: c.max_files.map_or(50_000, |n| n.0),
            max_total_bytes: c.max_total_mb.map_or(2 * 1024 * 1024 * 1024, mb),
            max_file_bytes: c.max_file_mb.map_or(16 * 1024 * 1024, mb),
            exclude_vcs_ignored: c.exclude_vcs_ignored.unwrap_or(false),
            grain: c.grain.unwrap_or(super::sections::Grain::Turn),
            grants: c.grants.unwrap_or(true),
        }
    }

    pub fn approval_policy(&self) -> ApprovalPolicy {
        let d = ApprovalPolicy::default();
        ApprovalPolicy {
            low: self.approval.low.unwrap_or(d.low),
            medium: self.approval.medium.unwrap_or(d.medium),
            high: self.approval.high.unwrap_or(d.high),
        }
    }

    pub fn resolve_hooks(&self, cx: &ResolveContext<'_>) -> Result<Vec<ResolvedHook>, PresetError> {
        self.hooks
            .iter()
            .enumerate()
            .map(|(i, h)| resolve_hook(i, h, &self.source_dir(cx.cwd), cx))
            .collect()
    }
}

fn resolve_hook(
    index: usize,
    entry: &HookEntry,
    source_dir: &Path,
    cx: &ResolveContext<'_>,
) -> Result<ResolvedHook, PresetError> {
    let key = format!("hooks[{index}]");
    let source = PluginSource::parse(&entry.source, source_dir);
    let name = entry.name.clone().unwrap_or_else(|| match &source {
        PluginSource::Builtin(n) | PluginSource::Installed(n) => n.clone(),
        PluginSource::Path(p) => p
            .file_stem()
            .map_or_else(|| format!("hook{index}"), |s| s.to_string_lossy().into()),
    });
    check_pin(&key, entry.sha256.as_deref())?;
    let on_error = match (entry.on, entry.on_error) {
        (HookPhase::Pre, None) => OnError::Deny,
        // A post-hook that could not inspect a result fails closed (H2): the result is
        // withheld unless the preset says `keep`.
        (HookPhase::Post, None) => OnError::Deny,
        (HookPhase::Pre, Some(OnError::Keep)) => {
            return Err(PresetError(format!(
                "{key}.on_error: a pre-hook's failure policy is \"deny\" or \"allow\"; \"keep\" is for post-hooks"
            )));
        }
        (HookPhase::Post, Some(OnError::Allow)) => {
            return Err(PresetError(format!(
                "{key}.on_error: a post-hook's failure policy is \"keep\" or \"deny\"; \"allow\" is for pre-hooks"
            )));
        }
        (_, Some(policy)) => policy,
    };
    let mounts = entry
        .mounts
        .iter()
        .enumerate()
        .map(|(i, m)| {
            make_mount(
                &format!("{key}.mounts[{i}]"),
                &m.host,
                &m.guest,
                m.mode,
                cx.cwd,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    for mount in &mounts {
        super::check_mount_is_safe(mount, cx.data_dir)?;
    }
    check_exec_reach(
        &format!("{key}.grants.exec"),
        entry.grants.as_ref().and_then(|g| g.exec.as_ref()),
        cx.data_dir,
    )?;
    let defaults = hook_limits();
    let limits = Limits {
        fuel: FuelSetting::resolve(entry.fuel, defaults.fuel),
        timeout: entry
            .timeout_ms
            .map_or(defaults.timeout, |n| Duration::from_millis(n.0)),
        memory_bytes: entry.memory_mb.map_or(defaults.memory_bytes, |n| n.0 << 20),
        ..defaults
    };
    let mut grant = grants(entry.grants.as_ref());
    grant.mounts = mounts;
    grant.limits = limits;
    let config = match &entry.config {
        Some(table) => serde_json::to_string(table)
            .map_err(|e| PresetError(format!("{key}.config: cannot pass it to the hook: {e}")))?,
        None => "{}".to_string(),
    };
    Ok(ResolvedHook {
        name,
        index,
        source,
        sha256: entry.sha256.clone(),
        on: entry.on,
        matcher: format!(
            "^(?:{})$",
            entry.matcher.as_ref().map_or(".*", |m| m.0.as_str())
        ),
        on_error,
        grant,
        config,
    })
}

/// A grant holding the capabilities and allow-lists of `entry`, with default limits and no
/// mounts; the caller fills those in.
pub(super) fn grants(entry: Option<&GrantsEntry>) -> Grant {
    let mut grant = Grant::default();
    let Some(entry) = entry else {
        return grant;
    };
    grant.protect = Protect {
        extra: entry.protect.iter().map(|p| p.0.clone()).collect(),
        writable: entry
            .writable_protected
            .iter()
            .map(|p| p.0.clone())
            .collect(),
    };
    if let Some(exec) = &entry.exec {
        grant.capabilities.push(Capability::Exec);
        let defaults = ExecGrant::default();
        grant.exec = Some(ExecGrant {
            allow: exec.allow.clone(),
            env: exec.env.clone(),
            timeout: Duration::from_millis(exec.timeout_ms.map_or(30_000, |n| n.0)),
            output_bytes: exec.output_bytes.map_or(1 << 20, |n| n.0 as usize),
            confine: exec.confine != Some(ConfineMode::Off),
            network: exec.network,
            read: exec.read.iter().map(|p| home_path(p)).collect(),
            write: exec.write.iter().map(|p| home_path(p)).collect(),
            memory_bytes: exec.memory_mb.map_or(defaults.memory_bytes, |n| n.0 << 20),
            processes: exec.processes.map_or(defaults.processes, |n| n.0),
            file_bytes: exec.file_mb.map_or(defaults.file_bytes, |n| n.0 << 20),
            ask: exec.ask.clone(),
            deny: exec.deny.clone(),
            yield_time: exec
                .yield_ms
                .map_or(defaults.yield_time, |n| Duration::from_millis(n.0)),
            optional: exec.optional,
        });
    }
    if let Some(http) = &entry.http {
        grant.capabilities.push(Capability::Http);
        grant.http = Some(HttpGrant {
            allow: http.allow.iter().map(|h| h.0.clone()).collect(),
            timeout: Duration::from_millis(http.timeout_ms.map_or(30_000, |n| n.0)),
            max_response_bytes: http.max_response_bytes.map_or(5 << 20, |n| n.0 as usize),
        });
    }
    grant
}

/// The host paths an exec grant opens to its programs beyond the mounts, each with the key
/// that names it: `read[i]`, `write[i]`, and the directory of a program named by its
/// absolute path in `allow[i]` (the jail lets a program read its own directory).
pub fn exec_host_paths(
    exec: &super::sections::ExecEntry,
) -> Vec<(&'static str, usize, std::path::PathBuf)> {
    let mut paths = Vec::new();
    for (list, entries) in [("read", &exec.read), ("write", &exec.write)] {
        for (i, entry) in entries.iter().enumerate() {
            paths.push((list, i, home_path(entry)));
        }
    }
    for (i, pattern) in exec.allow.iter().enumerate() {
        if let Some(dir) = program_dir(pattern.split_whitespace().next().unwrap_or_default()) {
            paths.push(("allow", i, dir));
        }
    }
    paths
}

/// Refuses an exec grant that opens paddock's data directory to its programs (K4); `key` is
/// the grant's preset key (`plugins.NAME.grants.exec`).
pub(super) fn check_exec_reach(
    key: &str,
    exec: Option<&super::sections::ExecEntry>,
    data_dir: &Path,
) -> Result<(), PresetError> {
    for (list, i, path) in exec.map(exec_host_paths).unwrap_or_default() {
        super::check_grant_is_safe(&format!("{key}.{list}[{i}]"), &path, data_dir)?;
    }
    if let Some(exec) = exec {
        paddock_shell_judge::Rules::new(&exec.allow, &exec.ask, &exec.deny)
            .map_err(|e| PresetError(format!("{key}: {e}")))?;
    }
    Ok(())
}

/// A pin must be a SHA-256 in lower-case hex.
pub(super) fn check_pin(key: &str, pin: Option<&str>) -> Result<(), PresetError> {
    match pin {
        Some(pin)
            if pin.len() != 64
                || !pin
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) =>
        {
            Err(PresetError(format!(
                "{key}.sha256: {pin:?} is not a SHA-256; write 64 lower-case hex digits \
                 (`paddock plugin inspect` shows a plugin's hash)"
            )))
        }
        _ => Ok(()),
    }
}
