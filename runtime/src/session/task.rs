//! The `task` tool: a subagent. A call `{description, prompt, preset?, tools?}` starts a child
//! session (its own log, `session/start` naming the parent's session and call), runs the
//! prompt to the end of its turn, and returns its final answer as the call's result.
//!
//! The child's preset is a named one or, without `preset`, the parent's own; `tools` narrows
//! the tools it offers. Before anything of the child starts, and before any model is asked,
//! its grants are proved within the parent's (`grants::within`): mounts, exec patterns,
//! network, hooks, approval, budgets, depth, tools; a child that is wider in any is refused
//! with the dimension named. A child asks no one: a call that needs approval is denied.
//! Children run at most `limits.max_subagents` at once (the rest wait); a cancel of the
//! parent's call terminates the child's turn.
//!
//! Budgets: a child's are taken from what its parent has left, never added to it. Once it
//! may run, a child gets at most the parent's remaining turns, tokens and cost (spent counted
//! from the parent's log, less what children running now were given) divided among the
//! `task` calls of the same message still waiting for a child (one alone gets all of it), so
//! children started together cannot together be given more than the parent has; wall time is
//! not divided (children run side by side on one clock).
//! When the child ends, what it spent (its own children's included) is written to the
//! parent's log as `subagent/end`, which the parent's budgets count as its own spending
//! (`Spent::charged_*`), and shown on the call's result line.
//!
//! A child shares its parent's per-file locks (`PathLocks`): the writes of parallel children
//! and of the parent to one file are serialised.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use serde_json::json;

use super::{Env, Session};

use crate::ask::OnAsk;
use crate::calls::{HostCall, HostTool};
use crate::grants::{Effective, Wider, effective, with_tools, within};
use crate::log::{Body, ChildSpent, Event, ParentLink, SessionLog, Spent, StopReason};
use crate::model::ProviderConfig;
use crate::pipeline::PathLocks;
use crate::preset::{Found, LoopBudgets, ResolveContext, ResolvedPreset};
use paddock_types::contract::{
    ErrorCode, OutputBudget, Risk, RuntimeMeta, ToolError, ToolOutput, ToolResult, ToolSpec,
};

/// Sees every event of every child, with the child's session id (`run --json`).
pub type ChildTap = Arc<dyn Fn(&str, &Event) + Send + Sync>;

/// What a child session is started with: its parent, its preset as proved, its model, the
/// tools it keeps and its budgets.
pub(crate) struct ChildOf {
    pub link: ParentLink,
    pub found: Found,
    pub model: Option<ProviderConfig>,
    pub tools: Option<Vec<String>>,
    pub budgets: LoopBudgets,
    /// The parent's per-file locks, which the child's calls hold too.
    pub locks: PathLocks,
}

/// A session's log as its `task` tool reaches it: the tool is offered before the log begins,
/// and set here once it has (`Session::new`). Weak: the tool never keeps a log open.
#[derive(Clone, Default)]
pub(crate) struct LogSlot(Arc<OnceLock<Weak<SessionLog>>>);

impl LogSlot {
    pub(crate) fn set(&self, log: &Arc<SessionLog>) {
        // Set once, by the one session that owns the slot.
        let _ = self.0.set(Arc::downgrade(log));
    }

    fn get(&self) -> Option<Arc<SessionLog>> {
        self.0.get().and_then(Weak::upgrade)
    }
}

/// The budgets given to the children running now, not yet charged to the parent's log.
#[derive(Debug, Default)]
pub(crate) struct Given {
    running: u64,
    turns: u64,
    tokens: u64,
    cost_usd: f64,
}

/// A running child's share of its parent's budgets, given back when the child ends (after
/// its spending is in the parent's log).
struct Share {
    given: Arc<Mutex<Given>>,
    budgets: LoopBudgets,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut given = self.given.lock().unwrap_or_else(PoisonError::into_inner);
        given.running = given.running.saturating_sub(1);
        given.turns = given.turns.saturating_sub(self.budgets.max_turns);
        given.tokens = given.tokens.saturating_sub(self.budgets.max_tokens);
        given.cost_usd = (given.cost_usd - self.budgets.max_cost_usd).max(0.0);
    }
}

/// The `task` tool of one session.
pub(crate) struct Spawner {
    pub env: Env,
    pub session: String,
    pub log: PathBuf,
    /// The session's own preset, for a child that names none.
    pub found: Found,
    /// The session's preset, its budgets cut to what it was given (a child's).
    pub resolved: ResolvedPreset,
    /// The budgets its preset declares: what a child's preset is compared with.
    pub declared: LoopBudgets,
    pub project_presets: bool,
    /// The session's model, lent to its children (`None` inside: the scripted demo); `None`
    /// for a client's session: a child uses its own preset's `[model]`.
    pub model: Option<Option<ProviderConfig>>,
    /// The session's depth: 0 for one a person started.
    pub depth: u64,
    pub running: Arc<tokio::sync::Semaphore>,
    pub child_tap: Option<ChildTap>,
    /// The session's per-file locks, lent to its children.
    pub locks: PathLocks,
    /// The session's log, where a child's spending is charged.
    pub log_slot: LogSlot,
    /// What its running children were given.
    pub given: Arc<Mutex<Given>>,
    /// The tools of its plugins and the host's, to prove a child keeps none it leaves out.
    pub tool_lists: crate::grants::ToolLists,
}

/// A child's preset, proved within the session's grants.
struct Proved {
    name: String,
    found: Found,
    /// The budgets its preset declares, before they are cut to its share.
    budgets: LoopBudgets,
    model: Option<ProviderConfig>,
}

/// The tool as the model sees it.
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: "task".into(),
        description: "Delegate a self-contained sub-task to a subagent: a child session with \
                      its own context that works on `prompt` and returns its final answer. \
                      Several task calls in one message run in parallel. The child has at most \
                      this session's grants: `preset` names a narrower preset, `tools` narrows \
                      the tools it may use."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "a few words on the sub-task, for the log"},
                "prompt": {"type": "string", "description": "everything the child needs to know: it sees nothing of this conversation"},
                "preset": {"type": "string", "description": "a preset within this session's; default: this session's own"},
                "tools": {"type": "array", "items": {"type": "string"}, "description": "only these tools"}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        }),
        examples: Vec::new(),
        meta: RuntimeMeta {
            // The child's own calls pass its own gate, at least as strict as this one's.
            risk: Some(Risk::Low),
            concurrency_safe: Some(true),
            read_only: Some(false),
            idempotent: Some(false),
            cancellable: Some(true),
            output_budget: Some(OutputBudget::DEFAULT),
            path_params: Vec::new(),
        },
    }
}

fn refused(wider: &Wider, preset: &str) -> ToolError {
    ToolError::new(
        ErrorCode::Denied,
        format!(
            "spawn refused: the child (preset `{preset}`) is {wider}. Nothing was started and no \
             model was asked; give the child a preset within this session's, or leave `preset` \
             out to use this session's own"
        ),
    )
}

impl Spawner {
    /// The child's preset (named, or the session's own), resolved and proved within the
    /// session's grants (its budgets as it declares them: `share` cuts them).
    fn prove(&self, preset: Option<&str>) -> Result<Proved, ToolError> {
        let bad = |e: String| ToolError::new(ErrorCode::InvalidArgs, e);
        let found = match preset {
            Some(name) => crate::preset::find_written(name, &self.env.cwd, self.project_presets)
                .map_err(|e| bad(e.to_string()))?,
            None => self.found.clone(),
        };
        let name = preset.unwrap_or(&self.resolved.name);
        let file = found.source.parse().map_err(|e| bad(e.to_string()))?;
        let cx = ResolveContext {
            cwd: &self.env.cwd,
            data_dir: self.env.data_dir(),
            spill: None,
            mount_override: None,
        };
        let child = file.resolve(name, &cx).map_err(|e| bad(e.to_string()))?;
        let parent = self.effective();
        let mut proved = effective(&child, self.depth + 1, self.env.data_dir());
        with_tools(&mut proved, &child, &self.tool_lists);
        within(&parent, &proved).map_err(|w| refused(&w, name))?;
        let budgets = child.limits.clone();
        let model = match &self.model {
            Some(lent) => lent.clone(),
            None => Some(file.model.clone().ok_or_else(|| {
                bad(format!(
                    "this session has no model to lend its subagent, and preset `{name}` has no                      [model]: name a preset with one"
                ))
            })?),
        };
        Ok(Proved {
            name: name.to_string(),
            found,
            budgets,
            model,
        })
    }

    /// The session's grants, its budgets as its preset declares them.
    pub(crate) fn effective(&self) -> Effective {
        let mut resolved = self.resolved.clone();
        resolved.limits = self.declared.clone();
        let mut grants = effective(&resolved, self.depth, self.env.data_dir());
        with_tools(&mut grants, &resolved, &self.tool_lists);
        grants
    }

    /// What the session has spent, its children's included: from its log as it stands, or
    /// read from the file before the log is reachable.
    fn spent(&self) -> Spent {
        let now = paddock_types::stamp::now_ms();
        match self.log_slot.get() {
            Some(log) => log.with_state(|s| s.spent.at(now)),
            None => crate::log::read_log(&self.log)
                .map(|read| Spent::of(&read.events, now))
                .unwrap_or_default(),
        }
    }

    /// The child's budgets: each at most its share of what the session has left (less what
    /// running children were given), divided among the `task` calls of the same message that
    /// have neither a result nor a running child yet (this one included): a child started
    /// alone gets all that is left, two started together half each. Held until the share is
    /// dropped.
    fn share(&self, call_id: &str, child: &LoopBudgets) -> Result<Share, Wider> {
        let spent = self.spent();
        let p = &self.resolved.limits;
        let mut given = self.given.lock().unwrap_or_else(PoisonError::into_inner);
        let free = match self.log_slot.get() {
            Some(log) => {
                let unanswered = log.with_state(|s| s.history.unanswered_like(call_id)) as u64;
                unanswered.saturating_sub(given.running)
            }
            // The log is not reachable yet: as many as may run at once.
            None => p.max_subagents.saturating_sub(given.running),
        }
        .max(1);
        let turns = p
            .max_turns
            .saturating_sub(spent.charged_requests())
            .saturating_sub(given.turns);
        let tokens = p
            .max_tokens
            .saturating_sub(spent.charged_tokens())
            .saturating_sub(given.tokens);
        let cost = (p.max_cost_usd - spent.charged_cost() - given.cost_usd).max(0.0);
        let wall = p.max_wall_secs.saturating_sub(spent.wall.as_secs());
        if turns == 0 || tokens == 0 || wall == 0 || cost <= 0.0 {
            return Err(Wider {
                dimension: crate::grants::Dimension::Budgets,
                detail: format!(
                    "this session has no budget left to give a child ({} turns, {} tokens, \
                     {} s, ${cost:.4} left, its running children's shares set aside)",
                    turns, tokens, wall
                ),
            });
        }
        let budgets = LoopBudgets {
            max_turns: child.max_turns.min(turns.div_ceil(free)),
            max_tokens: child.max_tokens.min(tokens.div_ceil(free)),
            max_wall_secs: child.max_wall_secs.min(wall),
            max_cost_usd: child.max_cost_usd.min(cost / free as f64),
            ..child.clone()
        };
        given.running += 1;
        given.turns += budgets.max_turns;
        given.tokens += budgets.max_tokens;
        given.cost_usd += budgets.max_cost_usd;
        Ok(Share {
            given: self.given.clone(),
            budgets,
        })
    }

    /// Charges what child `child` spent to this session: `subagent/end` in its log (synced:
    /// spending must survive a crash of the parent).
    fn charge(&self, call: &str, child: &Session, reason: StopReason) -> ChildSpent {
        let spent = crate::log::read_log(child.log_path())
            .map(|read| Spent::of(&read.events, 0).as_child())
            .unwrap_or_default();
        if let Some(log) = self.log_slot.get() {
            let written = log.append_synced(Body::SubagentEnd {
                call: call.to_string(),
                session: child.id().to_string(),
                reason,
                spent,
            });
            if let Err(e) = written {
                tracing::warn!("cannot charge subagent {} to the log: {e}", child.id());
            }
        }
        spent
    }

    async fn spawn(&self, call: &HostCall<'_>) -> ToolResult {
        let text = |key: &str| call.args.get(key).and_then(|v| v.as_str());
        let prompt = text("prompt").unwrap_or_default();
        let tools = call
            .args
            .get("tools")
            .and_then(|v| v.as_array())
            .map(|list| {
                list.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            });
        let proved = self.prove(text("preset"))?;
        let _permit = tokio::select! {
            biased;
            _ = call.cancel.cancelled() => return Err(crate::pipeline::not_executed()),
            permit = self.running.acquire() => permit.map_err(|e| ToolError::new(ErrorCode::Host, e.to_string()))?,
        };
        let share = self
            .share(call.call_id, &proved.budgets)
            .map_err(|w| refused(&w, &proved.name))?;
        let mut builder = Session::builder(self.env.clone())
            .preset(&proved.name)
            .on_ask(OnAsk::Deny)
            .child(ChildOf {
                link: ParentLink {
                    session: self.session.clone(),
                    call: call.call_id.to_string(),
                    depth: self.depth + 1,
                },
                found: proved.found,
                model: proved.model,
                tools,
                budgets: share.budgets.clone(),
                locks: self.locks.clone(),
            });
        if let Some(tap) = &self.child_tap {
            builder = builder.child_tap(tap.clone());
        }
        let child = builder.start().await.map_err(|e| {
            ToolError::new(ErrorCode::Host, format!("the subagent did not start: {e}"))
        })?;
        let end = {
            let interrupter = child.interrupter();
            let turn = child.send(prompt, &crate::agent::Quiet);
            tokio::pin!(turn);
            tokio::select! {
                end = &mut turn => end,
                _ = call.cancel.cancelled() => {
                    interrupter.terminate();
                    turn.await
                }
            }
        };
        let answer = final_answer(&child);
        let id = child.id().to_string();
        let spent = self.charge(call.call_id, &child, end.reason);
        drop(share);
        let charged = format!(
            "{} model requests, {} tokens, ${:.4}, charged to this session",
            spent.model_requests, spent.tokens, spent.cost_usd
        );
        match end.reason {
            StopReason::Completed => Ok(ToolOutput::complete(format!(
                "{answer}\n\n[subagent {id}: completed; spent {charged}]"
            ))),
            StopReason::Interrupted | StopReason::Terminated if call.cancel.is_cancelled() => {
                Err(ToolError::new(
                    ErrorCode::Cancelled,
                    format!("the subagent {id} was stopped with this call"),
                ))
            }
            reason => Err(ToolError::new(
                ErrorCode::Plugin(format!("SUBAGENT_{}", reason.as_str().to_uppercase())),
                format!(
                    "the subagent {id} ended {}{} (spent {charged}); its last words: {answer}",
                    reason.as_str(),
                    end.detail.map(|d| format!(" ({d})")).unwrap_or_default()
                ),
            )),
        }
    }
}

/// The text of the child's last message that has any.
fn final_answer(child: &Session) -> String {
    crate::log::read_log(child.log_path())
        .ok()
        .and_then(|read| {
            read.events.iter().rev().find_map(|e| match &e.body {
                Body::AssistantMessage { text, .. } if !text.trim().is_empty() => {
                    Some(text.clone())
                }
                _ => None,
            })
        })
        .unwrap_or_default()
}

#[async_trait::async_trait]
impl HostTool for Spawner {
    async fn call(&self, call: HostCall<'_>) -> ToolResult {
        self.spawn(&call).await
    }
}
