//! The `task` tool: a subagent. A call `{description, prompt, preset?, tools?}` starts a child
//! session (its own log, `session/start` naming the parent's session and call), runs the
//! prompt to the end of its turn, and returns its final answer as the call's result.
//!
//! The child's preset is a named one or, without `preset`, the parent's own; `tools` narrows
//! the tools it offers. Before anything of the child starts, and before any model is asked,
//! its grants are proved within the parent's (`grants::within`): mounts, exec patterns,
//! network, hooks, approval, budgets, depth, tools; a child that is wider in any is refused
//! with the dimension named. Its budgets are then cut to what the parent has left (counted
//! from the parent's log), so a child can never spend more than its parent still may. A child
//! asks no one: a call that needs approval is denied. Children run at most
//! `limits.max_subagents` at once (the rest wait); a cancel of the parent's call terminates
//! the child's turn.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;


use super::{Env, Session};

use crate::ask::OnAsk;
use crate::calls::{HostCall, HostTool};
use crate::grants::{Effective, Wider, effective, within};
use crate::log::{Body, Event, ParentLink, Spent, StopReason};
use crate::model::ProviderConfig;
use crate::preset::{Found, LoopBudgets, ResolveContext, ResolvedPreset};
use paddock_types::contract::{ErrorCode, OutputBudget, Risk, RuntimeMeta, ToolError, ToolOutput, ToolResult, ToolSpec};

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
}

/// A child's preset, proved within the session's grants.
struct Proved {
    name: String,
    found: Found,
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
    /// session's grants; its budgets cut to what the session has left.
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
        let proved = effective(&child, self.depth + 1, self.env.data_dir());
        within(&parent, &proved).map_err(|w| refused(&w, name))?;
        let budgets = self.remaining(&child.limits).map_err(|w| refused(&w, name))?;
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
        effective(&resolved, self.depth, self.env.data_dir())
    }

    /// The child's budgets, each at most what the session has left.
    fn remaining(&self, child: &LoopBudgets) -> Result<LoopBudgets, Wider> {
        let spent = crate::log::read_log(&self.log)
            .map(|read| Spent::of(&read.events, paddock_types::stamp::now_ms()))
            .unwrap_or_default();
        let p = &self.resolved.limits;
        let turns = p.max_turns.saturating_sub(spent.model_requests);
        let tokens = p.max_tokens.saturating_sub(spent.tokens);
        let wall = p.max_wall_secs.saturating_sub(spent.wall.as_secs());
        let cost = (p.max_cost_usd - spent.cost_usd).max(0.0);
        if turns == 0 || tokens == 0 || wall == 0 || cost <= 0.0 {
            return Err(Wider {
                dimension: crate::grants::Dimension::Budgets,
                detail: "this session has no budget left to give a child".into(),
            });
        }
        Ok(LoopBudgets {
            max_turns: child.max_turns.min(turns),
            max_tokens: child.max_tokens.min(tokens),
            max_wall_secs: child.max_wall_secs.min(wall),
            max_cost_usd: child.max_cost_usd.min(cost),
            ..child.clone()
        })
    }

    async fn spawn(&self, call: &HostCall<'_>) -> ToolResult {
        let text = |key: &str| call.args.get(key).and_then(|v| v.as_str());
        let prompt = text("prompt").unwrap_or_default();
        let tools = call.args.get("tools").and_then(|v| v.as_array()).map(|list| {
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
                budgets: proved.budgets,
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
        match end.reason {
            StopReason::Completed => Ok(ToolOutput::complete(format!(
                "{answer}\n\n[subagent {id}: completed]"
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
                    "the subagent {id} ended {}{}; its last words: {answer}",
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
