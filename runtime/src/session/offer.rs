//! The tools a session's host serves, offered when a session starts: `task` (subagents,
//! `task.rs`) and, when skills are found, `skill` (`skill_tool.rs`) with the skills' listing
//! for the system prompt. A preset's tool selection applies to them as to any tool
//! (`paddock:task` names their owner), and a subagent's `tools` narrow what it keeps.

use std::path::Path;
use std::sync::Arc;

use super::task::{ChildOf, ChildTap, Spawner};
use super::tools::Loaded;
use crate::log::{SkillsRecord, Tap};
use crate::model::ProviderConfig;
use crate::preset::Found;

/// What a starting session offers its host tools from.
pub(crate) struct Offer<'a> {
    pub found: &'a Found,
    /// The session's log (the `task` tool counts what it has spent from it).
    pub log: &'a Path,
    /// Whether the project's presets may be used (a child's named preset is looked up so).
    pub project: bool,
    /// Whether the project is trusted (its `.agents/skills`).
    pub trusted: bool,
    /// The session's model (`None` inside: the scripted demo), lent to its children; `None`
    /// for a client's session, whose children use their own preset's `[model]`.
    pub model: Option<Option<ProviderConfig>>,
    pub child: Option<&'a ChildOf>,
    pub child_tap: Option<ChildTap>,
}

/// The skills a session lists in its system prompt.
#[derive(Default)]
pub(crate) struct Listed {
    /// Appended to the system prompt; empty without skills.
    pub listing: String,
    pub record: Option<SkillsRecord>,
}

/// Offers `task` and (with skills) `skill` in `loaded`'s registry; a child's `tools` then
/// narrow the registry.
pub(crate) fn host_tools(loaded: &mut Loaded, offer: Offer<'_>) -> Listed {
    let depth = offer.child.map_or(0, |c| c.link.depth);
    let declared = offer
        .found
        .source
        .parse()
        .map(|f| f.budgets())
        .unwrap_or_else(|_| loaded.resolved.limits.clone());
    if let Some(child) = offer.child {
        loaded.resolved.limits = child.budgets.clone();
        loaded.locks = child.locks.clone();
    }
    let spawner = Spawner {
        env: loaded.env.clone(),
        session: loaded.session.clone(),
        log: offer.log.to_path_buf(),
        found: offer.found.clone(),
        resolved: loaded.resolved.clone(),
        declared,
        project_presets: offer.project,
        model: offer.model,
        depth,
        running: Arc::new(tokio::sync::Semaphore::new(
            usize::try_from(loaded.resolved.limits.max_subagents).unwrap_or(1),
        )),
        child_tap: offer.child_tap,
        locks: loaded.locks.clone(),
        log_slot: loaded.log_slot.clone(),
        given: Default::default(),
        tool_lists: tool_lists(loaded),
    };
    let grants = spawner.effective();
    let resolved = loaded.resolved.clone();
    let keep = |name: &str| resolved.keeps(crate::calls::HOST, name);
    loaded
        .registry
        .add_host(super::task::spec(), Arc::new(spawner), keep);
    let roots = crate::skills::roots(&loaded.env.cwd, offer.trusted, &resolved.skills);
    let found = crate::skills::discover(&roots);
    for error in &found.errors {
        tracing::warn!("skill left out: {error}");
    }
    let mut listed = Listed::default();
    if !found.skills.is_empty() {
        let skills = Arc::new(found.skills);
        offer_skill_run(loaded, &skills, &grants, keep);
        let tool = super::skill_tool::SkillTool {
            skills,
            grants,
            cwd: loaded.env.cwd.clone(),
        };
        let listing = crate::skills::listing(&tool.skills);
        let names = tool.skills.iter().map(|s| s.name().to_string()).collect();
        if loaded
            .registry
            .add_host(super::skill_tool::spec(), Arc::new(tool), keep)
        {
            listed.record = Some(SkillsRecord {
                names,
                listing_tokens: crate::skills::listing_tokens(&listing),
            });
            listed.listing = listing;
        }
    }
    if let Some(tools) = offer.child.and_then(|c| c.tools.as_ref()) {
        loaded
            .registry
            .retain(|name, _| tools.iter().any(|t| t == name));
    }
    listed
}

/// The tools each plugin and MCP server of `loaded` provides (all of them, those its preset
/// left out too), by the plugin's or server's identity, and the host's.
fn tool_lists(loaded: &Loaded) -> crate::grants::ToolLists {
    let mut lists = crate::grants::ToolLists {
        host: (
            crate::calls::HOST.to_string(),
            crate::calls::HOST_TOOLS
                .iter()
                .map(|t| t.to_string())
                .collect(),
        ),
        ..Default::default()
    };
    let mut identities = crate::grants::effective(&loaded.resolved, 0, loaded.env.data_dir())
        .plugins
        .into_iter();
    for (plugin, grant) in loaded.resolved.plugins.iter().zip(identities.by_ref()) {
        if let Some(found) = loaded
            .registry
            .plugins()
            .iter()
            .find(|p| p.name == plugin.name)
        {
            lists.by_identity.insert(
                grant.identity,
                found.tools.iter().map(|t| t.name.clone()).collect(),
            );
        }
    }
    // Then the MCP servers, in the same order, with the names their tools were offered under.
    for (server, grant) in loaded.resolved.mcp.iter().zip(identities) {
        if let Some((_, listed)) = loaded
            .registry
            .mcp_listed()
            .iter()
            .find(|(name, _)| *name == server.name)
        {
            lists.by_identity.insert(
                grant.identity,
                listed.iter().filter_map(|t| t.registered.clone()).collect(),
            );
        }
    }
    lists
}

/// Offers `skill_run` when a plugin of the session has `run_command` (the skills' scripts
/// run through it, in the jail).
fn offer_skill_run(
    loaded: &mut Loaded,
    skills: &Arc<Vec<crate::skills::Skill>>,
    grants: &crate::grants::Effective,
    keep: impl Fn(&str) -> bool,
) {
    let shell = loaded
        .registry
        .plugins()
        .iter()
        .find(|p| p.tools.iter().any(|t| t.name == "run_command"))
        .cloned();
    let Some(shell) = shell else { return };
    let Some(resolved) = loaded
        .resolved
        .plugins
        .iter()
        .find(|p| p.name == shell.name)
    else {
        return;
    };
    let tool = super::skill_run::SkillRun {
        skills: skills.clone(),
        grants: grants.clone(),
        cwd: loaded.env.cwd.clone(),
        sandbox: loaded.env.sandbox.clone(),
        shell_grant: resolved.grant.clone(),
        shell,
    };
    loaded
        .registry
        .add_host(super::skill_run::spec(), Arc::new(tool), keep);
}

/// The tap of a child session: each of its events to `children`, with the child's id.
pub(crate) fn tag_child(children: ChildTap, child: &str) -> Tap {
    let child = child.to_string();
    Box::new(move |event| children(&child, event))
}
