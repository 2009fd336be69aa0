//! A preset loaded for use: the one verdict (`verdict::judge`), then the registry of the tools
//! it keeps, its aliases, its hook chain and approval, and the spill directory of the session
//! it serves. What `run`, `chat`, `resume`, `tool` and `mcp serve` all start from.

use tokio_util::sync::CancellationToken;

use super::Env;
use super::error::{SetupCode, SetupError};
use super::lock::LockCheck;
use super::verdict::{Judged, Shown, Start, judge};
use crate::ask::Approver;
use crate::calls::{AliasTable, Registry};
use crate::hooks::{Approval, HookChain};
use crate::pipeline::CallContext;
use crate::preset::make_mount;
use paddock_sandbox::SpillDir;
use paddock_sandbox::{Mount, MountMode};

/// A `--mount HOST:GUEST[:ro|rw]` spec, relative to `cwd`.
pub fn parse_mount(spec: &str, cwd: &std::path::Path) -> Result<Mount, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (host, guest, mode) = match parts.as_slice() {
        [host, guest] => (*host, *guest, MountMode::Rw),
        [host, guest, "ro"] => (*host, *guest, MountMode::Ro),
        [host, guest, "rw"] => (*host, *guest, MountMode::Rw),
        _ => {
            return Err(format!(
                "mount {spec:?}: write HOST:GUEST, HOST:GUEST:ro or HOST:GUEST:rw"
            ));
        }
    };
    make_mount(&format!("mount {spec}"), host, guest, mode, cwd).map_err(|e| e.to_string())
}

/// A preset loaded for one session or command: its plugins and tools, aliases, hook chain and
/// approval, where it spills, and the token that cancels its calls.
pub struct Loaded {
    pub env: Env,
    pub registry: Registry,
    /// Where calls spill; `None` when nothing will run (`tool list`): no directory is made.
    pub spill: Option<SpillDir>,
    pub aliases: AliasTable,
    pub max_parallel: u64,
    pub chain: HookChain,
    pub preset: String,
    pub resolved: crate::preset::ResolvedPreset,
    pub session: String,
    pub cancel: CancellationToken,
    /// The preset's warnings, for the front-end to show once (`run --json` also emits them).
    pub warnings: Vec<Shown>,
    /// What the check against `paddock.lock` recorded or blocked (`session/start` keeps it).
    pub lock_notes: Vec<String>,
    /// The note when the lock check passed over an untrusted repository's lock, for the
    /// front-end to show once (it is in `lock_notes` too).
    pub lock_ignored: Option<String>,
    /// The per-file locks its calls hold, shared with its subagents (a subagent's are its
    /// parent's).
    pub locks: crate::pipeline::PathLocks,
    /// Where its `task` tool charges a subagent's spending: its log, once it has one.
    pub(crate) log_slot: super::task::LogSlot,
}

impl Loaded {
    /// The tools the model is offered: name, description and argument schema of each.
    pub fn tool_defs(&self) -> Vec<crate::model::ToolDef> {
        self.registry
            .tools()
            .map(|t| crate::model::ToolDef {
                name: t.spec.name.clone(),
                description: t.spec.description.clone(),
                parameters: t.spec.parameters.clone(),
            })
            .collect()
    }

    /// Starts compiling, in the background, the built-ins registered from their build-time
    /// descriptions: a session's first request goes out while they compile (S8). `tool list`
    /// and `tool call` never start it (a call compiles what it needs).
    pub fn start_compiling(&self) {
        self.registry.start_compiling();
        self.chain.start_compiling();
    }

    /// The context for CLI calls: the preset's aliases, hook chain and approval; cancelled by
    /// Ctrl-C.
    pub fn context(&self) -> CallContext<'_> {
        CallContext {
            sandbox: &self.env.sandbox,
            registry: &self.registry,
            aliases: &self.aliases,
            spill: self.spill.as_ref(),
            gate: &self.chain,
            session_id: &self.session,
            preset: &self.preset,
            cancel: self.cancel.clone(),
            live: None,
            locks: self.locks.clone(),
        }
    }
}

/// The layers `resolved` relies on are in force here, or the session does not start: a
/// program grant confined by the jail (`grants.exec` without `confine = "off"`) or an MCP server
/// it starts needs the jail's layers; any mount needs the filesystem guard. No silent fallback:
/// the error names the missing layer, the preset key that relies on it, what accepts running
/// without it, and what still holds.
fn layers_relied_on(resolved: &crate::preset::ResolvedPreset) -> Result<(), SetupError> {
    let exec = resolved
        .plugins
        .iter()
        .filter(|p| {
            p.grant
                .exec
                .as_ref()
                .is_some_and(|e| e.confine && !e.optional)
        })
        .map(|p| format!("plugins.{}.grants.exec", p.name));
    let mcp = resolved
        .mcp
        .iter()
        .filter(|m| m.url.is_none())
        .map(|m| format!("mcp.{}", m.name));
    let jailed: Vec<String> = exec.chain(mcp).collect();
    let mounted = resolved.plugins.iter().any(|p| !p.grant.mounts.is_empty());
    for layer in paddock_sandbox::layers() {
        let Err(why) = &layer.state else { continue };
        let relies = match layer.name {
            "fs-guard" => mounted.then(|| "the plugins' `mounts`".to_string()),
            "namespaces" | "landlock" | "seccomp" => jailed.first().map(|k| format!("`{k}`")),
            _ => None,
        };
        let Some(key) = relies else { continue };
        let accept = match layer.name {
            "fs-guard" => "file tools cannot run here without it; use a machine or container \
                           that allows `openat2` (Linux 5.6 or newer)"
                .to_string(),
            _ if key.starts_with("`mcp.") => format!(
                "MCP servers always run in the jail: remove {key} from the preset, or run where \
                 user namespaces are allowed"
            ),
            _ => format!(
                "to run its programs without the jail where a container is the outer boundary, \
                 set `confine = \"off\"` in {key}"
            ),
        };
        return Err(SetupError::new(
            SetupCode::SandboxUnavailable,
            format!(
                "preset `{}` relies on paddock's {} layer ({key}), which this machine does not \
                 allow: {why}. {accept}. The WebAssembly sandbox is unaffected; `paddock doctor` \
                 shows every layer",
                resolved.name, layer.name
            ),
        ));
    }
    Ok(())
}

/// What `load_preset` loads a preset for.
#[derive(Debug, Clone, Copy)]
pub enum LoadFor<'a> {
    /// A session (by id): its calls spill into its directory, made as the preset loads.
    Session(&'a str),
    /// A command that runs nothing (`tool list`): no spill, so no session directory.
    Listing,
}

/// Loads a preset through the same verdict as `preset check` (an error refuses with every
/// finding; warnings are kept in `Loaded::warnings`): its plugins, tools, aliases, hooks and
/// approval, with `mounts` (`--mount` specs) replacing every plugin's mounts when given, and
/// `approver` answering approval questions.
pub async fn load_preset(
    env: Env,
    found: &crate::preset::Found,
    preset_name: &str,
    mounts: &[String],
    load_for: LoadFor<'_>,
    approver: Box<dyn Approver>,
) -> Result<Loaded, SetupError> {
    judge_preset(env, found, preset_name, mounts, load_for)
        .await?
        .load(approver)
        .await
}

/// A preset the verdict accepted, not yet loaded: nothing started, nothing written but the
/// session's spill directory. A start connects its model between the two, so a preset `preset
/// check` refuses is refused with the same message first, and a missing model key refuses
/// before a plugin or server starts.
pub(crate) struct Judgement {
    env: Env,
    session: String,
    spill: Option<SpillDir>,
    judged: Judged,
}

/// The first half of `load_preset`: the verdict, and the layers the preset relies on.
pub(crate) async fn judge_preset(
    env: Env,
    found: &crate::preset::Found,
    preset_name: &str,
    mounts: &[String],
    load_for: LoadFor<'_>,
) -> Result<Judgement, SetupError> {
    let usage = SetupError::usage;
    let mounts = mounts
        .iter()
        .map(|m| parse_mount(m, &env.cwd))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let (session, spill) = match load_for {
        LoadFor::Session(session) => {
            let spill = SpillDir {
                host: env.store.session_dir(session).join(SpillDir::NAME),
                guest: SpillDir::GUEST.to_string(),
            };
            (session, Some(spill))
        }
        LoadFor::Listing => ("", None),
    };
    let start = Start {
        spill: spill.as_ref(),
        mount_override: (!mounts.is_empty()).then_some(&mounts[..]),
    };
    let judged = judge(&env, found, preset_name, start).await?;
    layers_relied_on(&judged.resolved)?;
    Ok(Judgement {
        env,
        session: session.to_string(),
        spill,
        judged,
    })
}

/// Where the jail's layers are missing, the tools of plugins whose confined exec grant is
/// `optional` are left out (as a lock leaves tools out), each plugin with a warning that says
/// why and what runs them here.
fn leave_out_unjailed(
    registry: &mut Registry,
    resolved: &crate::preset::ResolvedPreset,
) -> Vec<crate::session::verdict::Shown> {
    let Some(why) = paddock_sandbox::layers()
        .into_iter()
        .filter(|l| matches!(l.name, "namespaces" | "landlock" | "seccomp"))
        .find_map(|l| l.state.err())
    else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    for plugin in &resolved.plugins {
        let Some(exec) = &plugin.grant.exec else {
            continue;
        };
        if !exec.confine || !exec.optional {
            continue;
        }
        let tools: Vec<String> = registry
            .tools()
            .filter(|t| t.owner() == plugin.name)
            .map(|t| t.spec.name.clone())
            .collect();
        registry.block(&tools);
        let key = format!("plugins.{}.grants.exec", plugin.name);
        warnings.push(crate::session::verdict::Shown {
            error: false,
            at: format!("preset {}", resolved.name),
            key: key.clone(),
            message: format!(
                "the jail cannot be set up here ({why}), so plugin `{}`'s tools ({}) are left \
                 out of this session (`{key}.optional = true`)",
                plugin.name,
                tools.join(", ")
            ),
            fix: format!(
                "run where user namespaces are allowed, or, where a container is the outer \
                 boundary, set `confine = \"off\"` in `{key}`"
            ),
        });
    }
    warnings
}

/// A warning for each MCP server whose tools include some it runs only as tasks: they are
/// not offered (every plain call would fail), and the user should know which.
fn task_only_left_out(
    registry: &Registry,
    resolved: &crate::preset::ResolvedPreset,
) -> Vec<crate::session::verdict::Shown> {
    registry
        .mcp_listed()
        .iter()
        .filter_map(|(server, listed)| {
            let names: Vec<&str> = listed
                .iter()
                .filter(|tool| tool.task_only)
                .map(|tool| tool.remote.as_str())
                .collect();
            (!names.is_empty()).then(|| crate::session::verdict::Shown {
                error: false,
                at: format!("preset {}", resolved.name),
                key: format!("mcp.{server}"),
                message: format!(
                    "MCP server `mcp.{server}` runs {} only as a task (`execution.taskSupport: \
                     \"required\"`), which paddock does not support, so {} left out of this session",
                    names
                        .iter()
                        .map(|n| format!("`{}`", paddock_types::text::one_line(n, 80)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if names.len() == 1 { "it is" } else { "they are" }
                ),
                fix: "use the server's other tools, or a server that runs these tools without tasks"
                    .into(),
            })
        })
        .collect()
}

impl Judgement {
    /// The second half of `load_preset`: plugins, lock, registry, aliases, hooks.
    pub(crate) async fn load(self, approver: Box<dyn Approver>) -> Result<Loaded, SetupError> {
        let Judgement {
            env,
            session,
            spill,
            judged,
        } = self;
        load_judged(env, session, spill, judged, approver).await
    }
}

async fn load_judged(
    env: Env,
    session: String,
    spill: Option<SpillDir>,
    judged: Judged,
    approver: Box<dyn Approver>,
) -> Result<Loaded, SetupError> {
    let Judged {
        resolved,
        plugins,
        warnings,
    } = judged;
    let mut lock = LockCheck::open(&env.cwd, env.store.root())?;
    lock.check_plugins(&env.store, &resolved, &plugins)?;
    let mut registry = Registry::of_plugins(plugins, &resolved)
        .await
        .map_err(|e| SetupError::new(SetupCode::BadPlugin, e.to_string()))?;
    registry.retain(|tool, owner| resolved.keeps(owner, tool));
    let mut warnings = warnings;
    warnings.extend(leave_out_unjailed(&mut registry, &resolved));
    warnings.extend(task_only_left_out(&registry, &resolved));
    lock.check_mcp(&mut registry, &resolved.name);
    lock.save()?;
    let mut aliases = AliasTable::default();
    aliases.extend(resolved.tools.aliases.clone());
    // Not cancelled on Ctrl-C here: `run` and `resume` cancel it for their one turn, `chat`
    // gives each turn its own token, so an interrupt never outlives its turn.
    let cancel = CancellationToken::new();
    let approval = Approval {
        policy: resolved.approval,
        approver,
    };
    let chain = HookChain::load(&env.sandbox, &env.store, &resolved, approval)
        .await
        .map_err(|e| SetupError::new(SetupCode::BadHook, e.to_string()))?;
    Ok(Loaded {
        env,
        registry,
        spill,
        aliases,
        max_parallel: resolved.limits.max_parallel_tool_calls,
        chain,
        preset: resolved.name.clone(),
        resolved,
        session,
        cancel,
        warnings,
        lock_ignored: lock.ignored.clone(),
        lock_notes: lock.notes,
        locks: Default::default(),
        log_slot: Default::default(),
    })
}
