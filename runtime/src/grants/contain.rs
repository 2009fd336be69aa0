//! The containment proof: a child's grants are within its parent's, dimension by dimension,
//! or the first dimension that is wider is named with what exactly is more. Pure: it reads
//! two `Effective` values and nothing else, so it is tested case by case below and runs
//! before any child (or skill script) starts.
//!
//! The rules, each the conservative reading:
//! - mounts: every host path of the child lies inside one of the parent's (real paths; the
//!   same directory by device and inode when the paths are equal), read-only unless the
//!   parent's is writable; the parent's protected paths stay protected;
//! - exec: every allow pattern of the child is covered by one of the parent's (`commands`);
//!   every deny pattern of the parent is one of the child's, every ask pattern one of its ask
//!   or deny patterns; no environment variable the parent does not pass; confined if the
//!   parent's programs are;
//! - network: programs reach the network only if the parent's do; every host within one of
//!   the parent's (`hosts`);
//! - hooks: every hook of the parent runs in the child, identical;
//! - approval: for every risk, the child's answer is as strict as the parent's (deny over ask
//!   over allow);
//! - budgets: none above the parent's;
//! - depth: the child's place and limit within the parent's limit;
//! - tools: every plugin and MCP server of the child is one of the parent's; every tool the
//!   child keeps of a plugin (and of the host's) is one the parent keeps, when both are known;
//! - per plugin, against the parent's plugin of the same identity (any one of them, if it is
//!   loaded more than once): its mounts within that plugin's (mounts), its capabilities among
//!   that plugin's, each limit (fuel, deadline, memory, output budget, a program's limits) no
//!   higher (limits), and its kept tools among that plugin's (tools).

use super::{Dimension, Effective, HostPath, Limit, PluginGrant, Unset, Wider, commands, hosts};
use crate::preset::{ApprovalMode, ApprovalPolicy};

/// Ok when every grant of `child` is within `parent`'s; else the first wider dimension.
pub fn within(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    mounts(parent, child)?;
    exec(parent, child)?;
    network(parent, child)?;
    hooks(parent, child)?;
    approval(&parent.approval, &child.approval)?;
    budgets(parent, child)?;
    depth(parent, child)?;
    tools(parent, child)?;
    plugins(parent, child)
}

fn wider(dimension: Dimension, detail: String) -> Result<(), Wider> {
    Err(Wider { dimension, detail })
}

fn mounts(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    paths_within(&parent.paths, &child.paths, "the parent's")?;
    if let Some(missing) = parent.protect.iter().find(|p| !child.protect.contains(p)) {
        return wider(
            Dimension::Mounts,
            format!("the parent protects {missing:?}, the child does not"),
        );
    }
    if let Some(open) = child
        .writable_protected
        .iter()
        .find(|p| !parent.writable_protected.contains(p))
    {
        return wider(
            Dimension::Mounts,
            format!("the child lets the protected path {open:?} be written, the parent does not"),
        );
    }
    Ok(())
}

/// Every path of `child` inside one of `parent`'s (the same directory when equal), written
/// only where one of those is writable; `whose` names the parent's side in messages.
fn paths_within(parent: &[HostPath], child: &[HostPath], whose: &str) -> Result<(), Wider> {
    for c in child {
        let inside: Vec<_> = parent
            .iter()
            .filter(|p| c.path.starts_with(&p.path))
            .filter(|p| {
                c.path != p.path
                    || p.identity.is_none()
                    || c.identity.is_none()
                    || p.identity == c.identity
            })
            .collect();
        if inside.is_empty() {
            return wider(
                Dimension::Mounts,
                format!(
                    "{} grants {}, which is inside none of {whose} paths",
                    c.key,
                    c.path.display()
                ),
            );
        }
        if c.write && !inside.iter().any(|p| p.write) {
            return wider(
                Dimension::Mounts,
                format!(
                    "{} grants {} read-write where {whose} has it read-only",
                    c.key,
                    c.path.display()
                ),
            );
        }
    }
    Ok(())
}

fn exec(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    let normal = |list: &mut dyn Iterator<Item = &String>| -> Vec<String> {
        list.map(|p| commands::normal(p)).collect()
    };
    let parent_deny = normal(&mut parent.exec.iter().flat_map(|e| &e.deny));
    let parent_ask = normal(&mut parent.exec.iter().flat_map(|e| &e.ask));
    for c in &child.exec {
        if parent.exec.is_empty() {
            return wider(
                Dimension::Exec,
                format!("{} runs programs; the parent runs none", c.key),
            );
        }
        if let Some(pattern) = c.allow.iter().find(|pattern| {
            !parent
                .exec
                .iter()
                .flat_map(|e| &e.allow)
                .any(|allowed| commands::within(pattern, allowed))
        }) {
            return wider(
                Dimension::Exec,
                format!(
                    "{}.allow has {pattern:?}, which no allow pattern of the parent is proved to cover",
                    c.key
                ),
            );
        }
        let deny = normal(&mut c.deny.iter());
        let ask = normal(&mut c.ask.iter());
        if let Some(missing) = parent_deny.iter().find(|d| !deny.contains(d)) {
            return wider(
                Dimension::Exec,
                format!("{}.deny lacks the parent's deny pattern {missing:?}", c.key),
            );
        }
        if let Some(missing) = parent_ask
            .iter()
            .find(|a| !ask.contains(a) && !deny.contains(a))
        {
            return wider(
                Dimension::Exec,
                format!(
                    "{} neither asks about nor denies the parent's ask pattern {missing:?}",
                    c.key
                ),
            );
        }
        if let Some(var) = c
            .env
            .iter()
            .find(|v| !parent.exec.iter().any(|e| e.env.contains(v)))
        {
            return wider(
                Dimension::Exec,
                format!("{}.env passes {var}, which the parent does not", c.key),
            );
        }
        if !c.confine && parent.exec.iter().all(|e| e.confine) {
            return wider(
                Dimension::Exec,
                format!(
                    "{} runs programs unconfined (`confine = \"off\"`); the parent's are confined",
                    c.key
                ),
            );
        }
    }
    Ok(())
}

fn network(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    if child.network.programs && !parent.network.programs {
        return wider(
            Dimension::Network,
            "the child's programs may use the network; the parent's may not".into(),
        );
    }
    match child.network.hosts.iter().find(|h| {
        !parent
            .network
            .hosts
            .iter()
            .any(|allowed| hosts::within(h, allowed))
    }) {
        Some(host) => wider(
            Dimension::Network,
            format!("the child may reach {host:?}, which the parent cannot"),
        ),
        None => Ok(()),
    }
}

fn hooks(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    match parent.hooks.iter().find(|h| !child.hooks.contains(h)) {
        Some(hook) => wider(
            Dimension::Hooks,
            format!("the parent's hook {hook} does not run in the child"),
        ),
        None => Ok(()),
    }
}

fn strictness(mode: ApprovalMode) -> u8 {
    match mode {
        ApprovalMode::Allow => 0,
        ApprovalMode::Ask => 1,
        ApprovalMode::Deny => 2,
    }
}

fn approval(parent: &ApprovalPolicy, child: &ApprovalPolicy) -> Result<(), Wider> {
    for (risk, p, c) in [
        ("low", parent.low, child.low),
        ("medium", parent.medium, child.medium),
        ("high", parent.high, child.high),
    ] {
        if strictness(c) < strictness(p) {
            return wider(
                Dimension::Approval,
                format!("approval.{risk} is {c:?} in the child, {p:?} in the parent")
                    .to_lowercase(),
            );
        }
    }
    Ok(())
}

fn budgets(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    let (p, c) = (&parent.budgets, &child.budgets);
    let over = [
        ("max_turns", c.turns as f64, p.turns as f64),
        ("max_tokens", c.tokens as f64, p.tokens as f64),
        ("max_wall_secs", c.wall_secs as f64, p.wall_secs as f64),
        ("max_cost_usd", c.cost_usd, p.cost_usd),
        ("max_subagents", c.subagents as f64, p.subagents as f64),
    ]
    .into_iter()
    .find(|(_, c, p)| c > p);
    match over {
        Some((key, c, p)) => wider(
            Dimension::Budgets,
            format!("limits.{key} is {c} in the child, above the parent's {p}"),
        ),
        None => Ok(()),
    }
}

fn depth(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    let (p, c) = (parent.depth, child.depth);
    if c.at > p.max {
        return wider(
            Dimension::Depth,
            format!(
                "a child here would be at depth {}, past the limit of {} (`limits.max_depth`)",
                c.at, p.max
            ),
        );
    }
    if c.max > p.max {
        return wider(
            Dimension::Depth,
            format!(
                "limits.max_depth is {} in the child, above the parent's {}",
                c.max, p.max
            ),
        );
    }
    Ok(())
}

fn tools(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    if let Some(tool) = child.tools.iter().find(|t| !parent.tools.contains(t)) {
        return wider(
            Dimension::Tools,
            format!("the child loads {tool}, which the parent does not"),
        );
    }
    if let (Some(p), Some(c)) = (&parent.host_tools, &child.host_tools)
        && let Some(tool) = c.iter().find(|t| !p.contains(t))
    {
        return wider(
            Dimension::Tools,
            format!(
                "the child offers the host's tool `{tool}`, which the parent's preset leaves out"
            ),
        );
    }
    Ok(())
}

/// Each plugin of the child within one of the parent's plugins of the same identity; the
/// first candidate's refusal when none holds it.
fn plugins(parent: &Effective, child: &Effective) -> Result<(), Wider> {
    for c in &child.plugins {
        let mut first = None;
        for p in parent.plugins.iter().filter(|p| p.identity == c.identity) {
            match plugin_within(p, c) {
                Ok(()) => {
                    first = None;
                    break;
                }
                Err(refusal) => {
                    first.get_or_insert(refusal);
                }
            }
        }
        if let Some(refusal) = first {
            return Err(refusal);
        }
    }
    Ok(())
}

fn plugin_within(parent: &PluginGrant, child: &PluginGrant) -> Result<(), Wider> {
    let whose = format!("the parent's {}", parent.key);
    paths_within(&parent.paths, &child.paths, &whose)?;
    if let Some(cap) = child
        .capabilities
        .iter()
        .find(|c| !parent.capabilities.contains(c))
    {
        return wider(
            Dimension::Limits,
            format!(
                "{} may use the capability {cap}, which {whose} may not",
                child.key
            ),
        );
    }
    for c in &child.limits {
        let p = parent.limits.iter().find(|p| p.key == c.key);
        if let Some(why) = limit_above(p, c) {
            return wider(
                Dimension::Limits,
                format!("{}.{} is {why}", child.key, c.key),
            );
        }
    }
    if let (Some(p), Some(c)) = (&parent.enabled, &child.enabled)
        && let Some(tool) = c.iter().find(|t| !p.contains(t))
    {
        return wider(
            Dimension::Tools,
            format!(
                "{} keeps the tool `{tool}`, which {whose} leaves out ([tools])",
                child.key
            ),
        );
    }
    Ok(())
}

/// Why limit `child` is above `parent`'s, if it is.
fn limit_above(parent: Option<&Limit>, child: &Limit) -> Option<String> {
    let shown = |l: &Limit| match (l.value, l.unset) {
        (Some(v), _) => v.to_string(),
        (None, Unset::Unlimited) => "unlimited".to_string(),
        (None, Unset::ToolsOwn) => "each tool's own".to_string(),
    };
    let Some(parent) = parent else {
        return Some(format!(
            "{} in the child; the parent's plugin has no such grant",
            shown(child)
        ));
    };
    let above = match (parent.value, child.value, parent.unset) {
        (None, None, _) => false,
        (None, Some(_), Unset::Unlimited) => false,
        (Some(p), Some(c), _) => c > p,
        // A number where the parent's is each tool's own, or the reverse, cannot be proved
        // within; no limit where the parent has one is above it.
        _ => true,
    };
    above.then(|| {
        format!(
            "{} in the child, above the parent's {}",
            shown(child),
            shown(parent)
        )
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::within;
    use crate::grants::{
        Budgets, Depth, Dimension, Effective, ExecRules, HostPath, Limit, Network, PluginGrant,
        Unset,
    };
    use crate::preset::{ApprovalMode, ApprovalPolicy};

    fn path(p: &str, write: bool) -> HostPath {
        HostPath {
            path: PathBuf::from(p),
            write,
            identity: None,
            key: format!("mount {p}"),
        }
    }

    fn exec(allow: &[&str], ask: &[&str], deny: &[&str]) -> ExecRules {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        ExecRules {
            allow: own(allow),
            ask: own(ask),
            deny: own(deny),
            env: vec!["PATH".into()],
            confine: true,
            key: "plugins.shell.grants.exec".into(),
        }
    }

    fn parent() -> Effective {
        Effective {
            paths: vec![path("/work/project", true), path("/home/u/.cargo", false)],
            protect: vec!["secrets/**".into()],
            writable_protected: Vec::new(),
            exec: vec![exec(
                &["git status *", "cargo test *", "ls"],
                &["git push *"],
                &["rm *"],
            )],
            network: Network {
                programs: false,
                hosts: vec!["*.github.com".into()],
            },
            hooks: vec!["pre builtin:protect-paths".into()],
            approval: ApprovalPolicy {
                low: ApprovalMode::Allow,
                medium: ApprovalMode::Allow,
                high: ApprovalMode::Ask,
            },
            budgets: Budgets {
                turns: 20,
                tokens: 100_000,
                wall_secs: 600,
                cost_usd: 1.0,
                subagents: 2,
            },
            depth: Depth { at: 0, max: 1 },
            tools: vec!["builtin:fs".into(), "builtin:shell".into()],
            plugins: vec![fs_plugin()],
            host_tools: Some(vec!["task".into(), "skill".into()]),
        }
    }

    fn fs_plugin() -> PluginGrant {
        let limit = |key: &str, value: Option<u64>, unset: Unset| Limit {
            key: key.into(),
            value,
            unset,
        };
        PluginGrant {
            identity: "builtin:fs".into(),
            key: "plugins.fs".into(),
            paths: vec![path("/work/project", true)],
            capabilities: Vec::new(),
            limits: vec![
                limit("limits.fuel", Some(1000), Unset::Unlimited),
                limit("limits.memory_bytes", Some(64 << 20), Unset::Unlimited),
                limit("limits.timeout (ms)", Some(30_000), Unset::Unlimited),
                limit("output_bytes", Some(4096), Unset::ToolsOwn),
            ],
            enabled: Some(vec!["read_file".into(), "list_dir".into()]),
        }
    }

    /// The parent narrowed: what a well-behaved child asks for.
    fn child() -> Effective {
        let mut c = parent();
        c.paths = vec![path("/work/project/src", false)];
        c.exec = vec![exec(
            &["git status", "cargo test --lib *"],
            &["git push *"],
            &["rm *"],
        )];
        c.network.hosts = vec!["api.github.com".into()];
        c.hooks.push("post builtin:redact-secrets".into());
        c.budgets.turns = 5;
        c.depth = Depth { at: 1, max: 1 };
        c.tools = vec!["builtin:fs".into()];
        c
    }

    fn refused(c: &Effective) -> Dimension {
        within(&parent(), c)
            .expect_err("the child must be refused")
            .dimension
    }

    #[test]
    fn a_narrowed_child_and_an_identical_one_are_within() {
        assert_eq!(within(&parent(), &child()), Ok(()));
        let mut same = parent();
        same.depth.at = 1;
        assert_eq!(within(&parent(), &same), Ok(()));
    }

    #[test]
    fn a_path_outside_every_parent_path_is_wider_in_mounts() {
        let mut c = child();
        c.paths.push(path("/home/u/.ssh", false));
        assert_eq!(refused(&c), Dimension::Mounts);
        // A sibling whose name merely starts like the parent's is outside it.
        c.paths = vec![path("/work/project-other", false)];
        assert_eq!(refused(&c), Dimension::Mounts);
    }

    #[test]
    fn read_write_where_the_parent_reads_only_is_wider_in_mounts() {
        let mut c = child();
        c.paths = vec![path("/home/u/.cargo/registry", true)];
        assert_eq!(refused(&c), Dimension::Mounts);
    }

    #[test]
    fn the_same_path_held_as_another_directory_is_wider_in_mounts() {
        let mut p = parent();
        p.paths[0].identity = Some((1, 10));
        let mut c = child();
        c.paths = vec![HostPath {
            identity: Some((1, 11)),
            ..path("/work/project", false)
        }];
        assert_eq!(within(&p, &c).unwrap_err().dimension, Dimension::Mounts);
        c.paths[0].identity = Some((1, 10));
        assert_eq!(within(&p, &c), Ok(()));
    }

    #[test]
    fn unprotecting_a_path_is_wider_in_mounts() {
        let mut c = child();
        c.protect.clear();
        assert_eq!(refused(&c), Dimension::Mounts);
        let mut c = child();
        c.writable_protected.push(".git".into());
        assert_eq!(refused(&c), Dimension::Mounts);
    }

    #[test]
    fn an_allow_pattern_the_parent_does_not_cover_is_wider_in_exec() {
        let mut c = child();
        c.exec[0].allow.push("curl *".into());
        assert_eq!(refused(&c), Dimension::Exec);
        let mut c = child();
        c.exec[0].allow = vec!["git *".into()];
        assert_eq!(refused(&c), Dimension::Exec);
    }

    #[test]
    fn dropping_a_deny_or_ask_pattern_is_wider_in_exec() {
        let mut c = child();
        c.exec[0].deny.clear();
        assert_eq!(refused(&c), Dimension::Exec);
        let mut c = child();
        c.exec[0].ask.clear();
        assert_eq!(refused(&c), Dimension::Exec);
        // Denying what the parent asks about is stricter, so within.
        let mut c = child();
        c.exec[0].ask.clear();
        c.exec[0].deny.push("git push *".into());
        assert_eq!(within(&parent(), &c), Ok(()));
    }

    #[test]
    fn programs_where_the_parent_runs_none_env_and_confinement_are_exec() {
        let mut p = parent();
        p.exec.clear();
        assert_eq!(within(&p, &child()).unwrap_err().dimension, Dimension::Exec);
        let mut c = child();
        c.exec[0].env.push("AWS_SECRET_ACCESS_KEY".into());
        assert_eq!(refused(&c), Dimension::Exec);
        let mut c = child();
        c.exec[0].confine = false;
        assert_eq!(refused(&c), Dimension::Exec);
    }

    #[test]
    fn a_host_or_program_network_the_parent_lacks_is_wider_in_network() {
        let mut c = child();
        c.network.hosts.push("evil.example".into());
        assert_eq!(refused(&c), Dimension::Network);
        let mut c = child();
        c.network.programs = true;
        assert_eq!(refused(&c), Dimension::Network);
    }

    #[test]
    fn a_dropped_hook_is_wider_in_hooks() {
        let mut c = child();
        c.hooks.retain(|h| !h.contains("protect-paths"));
        assert_eq!(refused(&c), Dimension::Hooks);
    }

    #[test]
    fn a_looser_answer_for_any_risk_is_wider_in_approval() {
        let mut c = child();
        c.approval.high = ApprovalMode::Allow;
        let e = within(&parent(), &c).unwrap_err();
        assert_eq!(e.dimension, Dimension::Approval);
        assert!(e.detail.contains("approval.high"), "{}", e.detail);
        let mut c = child();
        c.approval.low = ApprovalMode::Deny;
        assert_eq!(within(&parent(), &c), Ok(()));
    }

    #[test]
    fn any_bigger_budget_is_wider_in_budgets() {
        for bump in [
            |b: &mut crate::grants::Budgets| b.turns = 21,
            |b: &mut crate::grants::Budgets| b.tokens = 100_001,
            |b: &mut crate::grants::Budgets| b.wall_secs = 601,
            |b: &mut crate::grants::Budgets| b.cost_usd = 1.01,
            |b: &mut crate::grants::Budgets| b.subagents = 3,
        ] {
            let mut c = child();
            bump(&mut c.budgets);
            assert_eq!(refused(&c), Dimension::Budgets);
        }
    }

    #[test]
    fn a_child_past_the_depth_limit_or_raising_it_is_wider_in_depth() {
        let mut c = child();
        c.depth.at = 2;
        assert_eq!(refused(&c), Dimension::Depth);
        let mut c = child();
        c.depth.max = 2;
        assert_eq!(refused(&c), Dimension::Depth);
    }

    #[test]
    fn a_plugin_limit_raised_or_lifted_is_wider_in_limits() {
        let cases: [(&str, Option<u64>); 5] = [
            ("limits.fuel", Some(1001)),
            ("limits.fuel", None),
            ("limits.memory_bytes", Some(65 << 20)),
            ("limits.timeout (ms)", Some(30_001)),
            ("output_bytes", None),
        ];
        for (key, value) in cases {
            let mut c = child();
            let limit = c.plugins[0]
                .limits
                .iter_mut()
                .find(|l| l.key == key)
                .unwrap();
            limit.value = value;
            let e = within(&parent(), &c).unwrap_err();
            assert_eq!(e.dimension, Dimension::Limits, "{key}: {e}");
            assert!(e.detail.contains(key), "{}", e.detail);
        }
        // Lower is within.
        let mut c = child();
        c.plugins[0].limits[0].value = Some(10);
        assert_eq!(within(&parent(), &c), Ok(()));
    }

    #[test]
    fn a_capability_the_parents_plugin_lacks_is_wider_in_limits() {
        let mut c = child();
        c.plugins[0].capabilities.push("http (grants.http)".into());
        assert_eq!(refused(&c), Dimension::Limits);
    }

    #[test]
    fn a_mount_moved_to_another_plugin_is_wider_in_mounts() {
        // The session-wide paths allow it (the parent's shell reads ~/.cargo), but the
        // parent's fs does not reach it.
        let mut c = child();
        c.plugins[0].paths = vec![path("/home/u/.cargo", false)];
        let e = within(&parent(), &c).unwrap_err();
        assert_eq!(e.dimension, Dimension::Mounts);
        assert!(e.detail.contains("plugins.fs"), "{}", e.detail);
        let mut c = child();
        c.plugins[0].paths = vec![path("/work/project/src", true)];
        assert_eq!(within(&parent(), &c), Ok(()));
    }

    #[test]
    fn a_tool_the_parent_leaves_out_is_wider_in_tools() {
        let mut c = child();
        c.plugins[0].enabled = Some(vec!["write_file".into()]);
        assert_eq!(refused(&c), Dimension::Tools);
        let mut c = child();
        c.host_tools = Some(vec!["skill_run".into()]);
        assert_eq!(refused(&c), Dimension::Tools);
        let mut c = child();
        c.host_tools = Some(vec!["task".into()]);
        c.plugins[0].enabled = Some(vec!["list_dir".into()]);
        assert_eq!(within(&parent(), &c), Ok(()));
    }

    #[test]
    fn a_plugin_the_parent_does_not_load_is_wider_in_tools() {
        let mut c = child();
        c.tools.push("builtin:fetch".into());
        assert_eq!(refused(&c), Dimension::Tools);
    }
}
